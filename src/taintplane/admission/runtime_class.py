"""RuntimeClass: a pod's ``runtimeClassName`` brings the class's pod overhead and scheduling
constraints into the pod.

As upstream's plugin (``plugin/pkg/admission/runtimeclass``), on pod create only (not
subresources), with the RuntimeClass (node.k8s.io/v1) looked up by name:

- mutating: ``overhead.podFixed`` becomes ``spec.overhead`` (a pod that already sets a different
  overhead is refused); ``scheduling.nodeSelector`` is merged into ``spec.nodeSelector`` (a pod
  selecting another value for one of its keys is refused) and ``scheduling.tolerations`` are
  merged after the pod's with ``MergeTolerations`` (no duplicates, covered ones dropped);
- validating: a pod's overhead must equal its class's (none when the class defines none), and
  an overhead needs a class that defines one.

A class that does not exist refuses the pod (before and after the other plugins ran).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from taintplane.admission.chain import Attributes, Forbidden, Lookup
from taintplane.api.quantity import QuantityError, parse_quantity
from taintplane.api.toleration_algebra import merge
from taintplane.api.tolerations import Toleration, tolerations_to_list

__all__ = ["PLUGIN_NAME", "RuntimeClass"]

PLUGIN_NAME = "RuntimeClass"
OVERHEAD_MISMATCH = "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
OVERHEAD_WITHOUT_CLASS = (
    "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
)


def _amount(value: object) -> Decimal | str:
    try:
        return parse_quantity(value)  # type: ignore[arg-type]
    except (QuantityError, TypeError):
        return str(value)


def _same_resources(first: Mapping[str, Any] | None, second: Mapping[str, Any] | None) -> bool:
    """``Semantic.DeepEqual`` of two resource lists: quantities by value, nil equals empty."""
    first, second = first or {}, second or {}
    if first.keys() != second.keys():
        return False
    return all(_amount(first[name]) == _amount(second[name]) for name in first)


def _tolerations(items: object) -> list[Toleration]:
    if not isinstance(items, list):
        return []
    return [Toleration.from_dict(item) for item in items if isinstance(item, Mapping)]


class RuntimeClass:
    name = PLUGIN_NAME

    def __init__(self, lookup: Lookup) -> None:
        self.lookup = lookup

    async def _prepare(
        self, attributes: Attributes
    ) -> tuple[dict[str, Any], Mapping[str, Any] | None] | None:
        """The pod and its RuntimeClass (None without a class name); None to ignore."""
        pod = attributes.obj
        if attributes.operation != "CREATE" or not attributes.is_pod() or not isinstance(pod, dict):
            return None
        spec = pod.setdefault("spec", {})
        class_name = spec.get("runtimeClassName")
        if class_name is None:
            return pod, None
        found = await self.lookup.get("node.k8s.io/v1", "RuntimeClass", str(class_name))
        if found is None:
            raise Forbidden(f'pod rejected: RuntimeClass "{class_name}" not found')
        return pod, found

    async def admit(self, attributes: Attributes) -> None:
        prepared = await self._prepare(attributes)
        if prepared is None:
            return
        pod, runtime_class = prepared
        if runtime_class is None:
            return
        spec = pod["spec"]
        overhead = runtime_class.get("overhead")
        if overhead is not None:
            pod_fixed = (overhead or {}).get("podFixed")
            # setOverhead refuses only a non-empty overhead (``len(pod.Spec.Overhead) > 0``):
            # an empty ``overhead: {}`` is replaced by the class's, as an absent one is.
            if spec.get("overhead") and not _same_resources(pod_fixed, spec["overhead"]):
                raise Forbidden(OVERHEAD_MISMATCH)
            if not pod_fixed:
                spec.pop("overhead", None)
            else:
                spec["overhead"] = dict(pod_fixed)
        scheduling = runtime_class.get("scheduling")
        if scheduling is None:
            return
        class_selector: Mapping[str, str] = scheduling.get("nodeSelector") or {}
        node_selector = spec.get("nodeSelector")
        if node_selector is None:
            new_selector = dict(class_selector) if class_selector else None
        else:
            new_selector = dict(node_selector)
            for key, class_value in class_selector.items():
                pod_value = new_selector.get(key)
                if pod_value is not None and pod_value != class_value:
                    raise Forbidden(
                        f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {class_value}; "
                        f"pod.spec.nodeSelector[{key}] = {pod_value}"
                    )
                new_selector[key] = class_value
        merged = merge(
            _tolerations(spec.get("tolerations")), _tolerations(scheduling.get("tolerations"))
        )
        if new_selector:
            spec["nodeSelector"] = new_selector
        else:
            spec.pop("nodeSelector", None)
        if merged:
            spec["tolerations"] = tolerations_to_list(merged)
        else:
            spec.pop("tolerations", None)

    async def validate(self, attributes: Attributes) -> None:
        prepared = await self._prepare(attributes)
        if prepared is None:
            return
        pod, runtime_class = prepared
        pod_overhead = pod["spec"].get("overhead")
        class_overhead = None if runtime_class is None else runtime_class.get("overhead")
        if class_overhead is None:
            if pod_overhead is not None:
                raise Forbidden(OVERHEAD_WITHOUT_CLASS)
            return
        # A class with an overhead needs it on the pod, even if something after the mutating
        # phase took it away (upstream's validateOverhead, TestValidateOverhead).
        if not _same_resources((class_overhead or {}).get("podFixed"), pod_overhead):
            raise Forbidden(OVERHEAD_MISMATCH)
