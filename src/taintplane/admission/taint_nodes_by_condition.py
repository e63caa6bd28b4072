"""TaintNodesByCondition (the ``NodeTaint`` admission plugin upstream): a node is created with
``node.kubernetes.io/not-ready:NoSchedule`` so nothing lands on it before its kubelet reports
Ready and the node lifecycle controller lifts the taint."""

from __future__ import annotations

from taintplane.admission.chain import Attributes
from taintplane.api.wellknown import TAINT_NODE_NOT_READY

__all__ = ["TaintNodesByCondition"]


class TaintNodesByCondition:
    name = "TaintNodesByCondition"

    async def admit(self, attributes: Attributes) -> None:
        resource = attributes.resource
        if attributes.operation != "CREATE" or resource.group != "" or resource.kind != "Node":
            return
        node = attributes.obj
        if node is None or attributes.subresource:
            return
        spec = node.setdefault("spec", {})
        taints = list(spec.get("taints") or [])
        if any(
            t.get("key") == TAINT_NODE_NOT_READY and t.get("effect") == "NoSchedule"
            for t in taints
            if isinstance(t, dict)
        ):
            return
        taints.append({"key": TAINT_NODE_NOT_READY, "effect": "NoSchedule"})
        spec["taints"] = taints
