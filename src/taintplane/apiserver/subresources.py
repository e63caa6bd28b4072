"""The ``pods/binding`` subresource: what the scheduler posts (eviction is in eviction.py)."""

from __future__ import annotations

from typing import Any

from taintplane.api.decoding import format_time
from taintplane.apiserver.registry import Registry
from taintplane.apiserver.requestinfo import RequestInfo
from taintplane.apiserver.status import APIError, success

__all__ = ["TOPOLOGY_LABELS", "bind"]

#: PodTopologyLabels admission's default configuration: the node labels a binding carries.
TOPOLOGY_LABELS = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region")


async def bind(registry: Registry, info: RequestInfo, body: Any) -> dict[str, Any]:
    """Upstream's ``BindingREST.Create`` and ``setPodNodeAndMetadata``."""
    if not isinstance(body, dict) or not isinstance(body.get("target"), dict):
        raise APIError.bad_request("a Binding needs a target")
    target = str(body["target"].get("name") or "")
    if not target:
        raise APIError.invalid(info.resource, info.name, [])
    metadata: dict[str, Any] = body.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise APIError.bad_request("a Binding's metadata must be an object")
    uid = str(metadata.get("uid") or "")
    resource_version = str(metadata.get("resourceVersion") or "")
    annotations = _strings(metadata.get("annotations"))
    # PodTopologyLabelsAdmission (beta, on by default in 1.35): the admission plugin adds the
    # node's topology labels to the Binding, and the Binding's labels are copied to the pod.
    labels = _strings(metadata.get("labels"))
    if body["target"].get("kind") == "Node":
        labels.update(await _topology_labels(registry, target))
    if resource_version:
        # The stored bytes carry no resourceVersion: check it on a read, then pin the write
        # to it (a change in between is the generic conflict).
        current = await registry.get(info.resource, info.namespace, info.name)
        _check_preconditions(info, current, uid, resource_version)
    now = format_time(registry.clock.now())

    def assign(pod: dict[str, Any]) -> dict[str, Any]:
        pod_meta = pod["metadata"]
        _check_preconditions(info, pod, uid, "")
        if resource_version:
            pod_meta["resourceVersion"] = resource_version
        if pod_meta.get("deletionTimestamp"):
            raise APIError.conflict_binding(
                info.name, f"pod {info.name} is being deleted, cannot be assigned to a host"
            )
        spec = pod.setdefault("spec", {})
        current = spec.get("nodeName")
        if current:
            raise APIError.conflict_binding(
                info.name, f'pod {info.name} is already assigned to node "{current}"'
            )
        if spec.get("schedulingGates"):
            raise APIError.conflict_binding(
                info.name, f"pod {info.name} has non-empty .spec.schedulingGates"
            )
        spec["nodeName"] = target
        status = pod.setdefault("status", {})
        # ClearingNominatedNodeNameAfterBinding (beta, on by default in 1.35).
        status.pop("nominatedNodeName", None)
        if annotations:
            pod_meta["annotations"] = {**(pod_meta.get("annotations") or {}), **annotations}
        if labels:
            pod_meta["labels"] = {**(pod_meta.get("labels") or {}), **labels}
        _set_scheduled(status, now)
        return pod

    # Binding writes spec and status at once, which neither the main resource nor the status
    # subresource may: it goes straight through the registry's raw update.
    await registry.guaranteed_update(
        info.resource, info.namespace, info.name, assign, subresource="binding"
    )
    return success(201)


def _check_preconditions(
    info: RequestInfo, pod: dict[str, Any], uid: str, resource_version: str
) -> None:
    """``storage.Preconditions.Check``, a conflict on pods as InterpretUpdateError makes it."""
    metadata = pod["metadata"]
    if uid and uid != metadata.get("uid"):
        raise APIError.conflict(
            info.resource,
            info.name,
            f"Precondition failed: UID in precondition: {uid}, "
            f"UID in object meta: {metadata.get('uid') or ''}",
        )
    if resource_version and resource_version != metadata.get("resourceVersion"):
        raise APIError.conflict(
            info.resource,
            info.name,
            f"Precondition failed: ResourceVersion in precondition: {resource_version}, "
            f"ResourceVersion in object meta: {metadata.get('resourceVersion')}",
        )


def _set_scheduled(status: dict[str, Any], now: str) -> None:
    """``UpdatePodCondition`` with PodScheduled=True: replaced in place, its transition time
    kept if it was True already."""
    conditions = list(status.get("conditions") or [])
    condition = {"type": "PodScheduled", "status": "True", "lastProbeTime": None}
    for i, old in enumerate(conditions):
        if old.get("type") == "PodScheduled":
            same = old.get("status") == "True"
            condition["lastTransitionTime"] = old.get("lastTransitionTime") if same else now
            conditions[i] = condition
            break
    else:
        condition["lastTransitionTime"] = now
        conditions.append(condition)
    status["conditions"] = conditions


async def _topology_labels(registry: Registry, node_name: str) -> dict[str, str]:
    """The target node's topology labels (none if it does not exist, as upstream ignores
    NotFound)."""
    nodes = registry.scheme.lookup("", "v1", "nodes")
    if nodes is None:
        return {}
    try:
        node = await registry.get(nodes, "", node_name)
    except APIError as error:
        if error.code == 404:
            return {}
        raise
    labels = node["metadata"].get("labels") or {}
    return {key: str(labels[key]) for key in TOPOLOGY_LABELS if key in labels}


def _strings(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
