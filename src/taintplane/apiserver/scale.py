"""The ``scale`` subresource of Deployments and ReplicaSets (autoscaling/v1 ``Scale``), what
``kubectl scale`` reads and patches: ``spec.replicas`` of the workload, its
``status.replicas`` and its selector as a string."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from taintplane.api.field import FieldError, Path
from taintplane.api.selectors import SelectorError, label_selector_from_dict
from taintplane.apiserver.status import APIError

__all__ = ["apply_scale", "scale_of"]


def _selector_string(selector: Any) -> str:
    try:
        parsed = label_selector_from_dict(selector if isinstance(selector, dict) else None)
    except SelectorError:
        return ""
    return str(parsed)


def scale_of(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    metadata = {
        k: meta[k]
        for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        if k in meta
    }
    scale_status: dict[str, Any] = {"replicas": int(status.get("replicas") or 0)}
    selector = _selector_string(spec.get("selector"))
    if selector:
        scale_status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": int(spec.get("replicas", 1))},
        "status": scale_status,
    }


def apply_scale(
    name: str, change: Callable[[dict[str, Any]], dict[str, Any]]
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A mutation of the workload: ``change`` turns its Scale into the wanted one, whose
    ``spec.replicas`` (validated as upstream's ValidateScale) is written back."""

    def mutate(current: dict[str, Any]) -> dict[str, Any]:
        wanted = change(scale_of(current))
        replicas = (wanted.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            error = FieldError.invalid(
                Path.root("spec", "replicas"),
                replicas,
                "must be greater than or equal to 0",
            )
            raise APIError.make(
                422,
                "Invalid",
                f'Scale.autoscaling "{name}" is invalid: {error}',
                {
                    "name": name,
                    "group": "autoscaling",
                    "kind": "Scale",
                    "causes": [
                        {"reason": error.type.reason, "message": error.body, "field": error.field}
                    ],
                },
            )
        raw_meta = wanted.get("metadata")
        wanted_meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        uid = wanted_meta.get("uid")
        current_uid = (current.get("metadata") or {}).get("uid")
        if uid and uid != current_uid:
            # scaleUpdatedObjectInfo: a UID precondition for another object.
            raise _scale_conflict(
                current,
                name,
                f"Precondition failed: UID in precondition: {uid}, "
                f"UID in object meta: {current_uid}",
            )
        version = wanted_meta.get("resourceVersion")
        updated = dict(current)
        updated["spec"] = {**(current.get("spec") or {}), "replicas": replicas}
        if version:
            updated["metadata"] = {**(current.get("metadata") or {}), "resourceVersion": version}
        return updated

    return mutate


def _scale_conflict(obj: dict[str, Any], name: str, why: str) -> APIError:
    """errors.NewConflict on ``<plural>/scale`` of the workload's group."""
    group, _, _ = str(obj.get("apiVersion") or "").rpartition("/")
    plural = str(obj.get("kind") or "").lower() + "s/scale"
    qualified = f"{plural}.{group}" if group else plural
    details = {"name": name, "group": group, "kind": plural}
    return APIError.make(
        409, "Conflict", f'Operation cannot be fulfilled on {qualified} "{name}": {why}', details
    )
