"""The ``pods/binding`` subresource: what the scheduler posts (eviction is in eviction.py)."""

from __future__ import annotations

from typing import Any

from taintplane.api.decoding import format_time
from taintplane.api.field import FieldError, Path, aggregate_message
from taintplane.apiserver.registry import Registry
from taintplane.apiserver.requestinfo import RequestInfo
from taintplane.apiserver.status import APIError, success
from taintplane.apiserver.strict_decoding import NO_NOTES, DecodeNotes
from taintplane.apiserver.subresource_body import BINDING, decode_body

__all__ = ["TOPOLOGY_LABELS", "bind", "validate_pod_binding"]

#: PodTopologyLabels admission's default configuration: the node labels a binding carries.
TOPOLOGY_LABELS = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region")


async def bind(
    registry: Registry,
    info: RequestInfo,
    body: Any,
    *,
    dry_run: bool = False,
    field_validation: str = "Warn",
    notes: DecodeNotes = NO_NOTES,
) -> dict[str, Any]:
    """Upstream's ``BindingREST.Create`` and ``setPodNodeAndMetadata``."""
    decode_body(body, BINDING, registry.scheme, field_validation=field_validation, notes=notes)
    metadata = _check_body(info, body)
    target = body.get("target")
    target = target if isinstance(target, dict) else {}
    errors = validate_pod_binding(target)
    if errors:
        # ValidatePodBinding's list goes back as an aggregate, which kube-apiserver answers
        # 500 (an error that is not a Status); bad input is a 422 here, with its fields.
        raise _binding_invalid(info.name, errors)
    if not info.name:
        # POST …/bindings naming no pod: the pod's key needs a name (NamespaceKeyFunc).
        raise APIError.bad_request("Name parameter required.")
    node_name = target["name"]
    if not isinstance(node_name, str):
        raise APIError.bad_request(
            'Binding in version "v1" cannot be handled as a Binding: json: cannot unmarshal '
            f"{_json_type(node_name)} into Go struct field ObjectReference.target.name of type "
            "string"
        )
    uid = str(metadata.get("uid") or "")
    resource_version = str(metadata.get("resourceVersion") or "")
    annotations = _strings(metadata.get("annotations"))
    # PodTopologyLabelsAdmission (beta, on by default in 1.35): the admission plugin adds the
    # node's topology labels to the Binding, and the Binding's labels are copied to the pod.
    labels = _strings(metadata.get("labels"))
    if target.get("kind") == "Node":
        labels.update(await _topology_labels(registry, node_name))
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
        spec["nodeName"] = node_name
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
        info.resource, info.namespace, info.name, assign, subresource="binding", dry_run=dry_run
    )
    return success(201)


def _check_body(info: RequestInfo, body: Any) -> dict[str, Any]:
    """The create handler's checks after decoding (the namespace may be left out), then
    BindingREST.Create's: the Binding names the pod of the URL. Returns the Binding's
    metadata."""
    metadata = body.get("metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise APIError.bad_request(
            'Binding in version "v1" cannot be handled as a Binding: json: cannot unmarshal '
            f"{_json_type(metadata)} into Go struct field Binding.metadata of type v1.ObjectMeta"
        )
    namespace = metadata.get("namespace")
    if namespace and namespace != info.namespace:
        raise APIError.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    if (metadata.get("name") or "") != info.name:
        raise APIError.bad_request("name in URL does not match name in Binding object")
    return metadata


def validate_pod_binding(target: dict[str, Any]) -> list[FieldError]:
    """ValidatePodBinding: the target is a Node (or unsaid) and has a name."""
    errors: list[FieldError] = []
    kind = target.get("kind")
    if kind not in (None, "", "Node"):
        errors.append(
            FieldError.not_supported(Path.root("target", "kind"), kind, ["Node", "<empty>"])
        )
    if not target.get("name"):
        errors.append(FieldError.required(Path.root("target", "name")))
    return errors


def _binding_invalid(name: str, errors: list[FieldError]) -> APIError:
    causes = [{"reason": e.type.reason, "message": e.body, "field": e.field} for e in errors]
    return APIError.make(
        422,
        "Invalid",
        f'Binding "{name}" is invalid: {aggregate_message(errors)}',
        {"name": name, "kind": "Binding", "causes": causes},
    )


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


def _json_type(value: Any) -> str:
    """encoding/json's name for a JSON value's type in an UnmarshalTypeError."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, dict):
        return "object"
    return "array" if isinstance(value, list) else "string"


def _strings(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
