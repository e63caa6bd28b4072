"""The ``pods/binding`` subresource: what the scheduler posts (eviction is in eviction.py)."""

from __future__ import annotations

from typing import Any

from taintplane.api.decoding import format_time
from taintplane.apiserver.registry import Registry
from taintplane.apiserver.requestinfo import RequestInfo
from taintplane.apiserver.status import APIError, success

__all__ = ["bind"]


async def bind(registry: Registry, info: RequestInfo, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict) or not isinstance(body.get("target"), dict):
        raise APIError.bad_request("a Binding needs a target")
    target = str(body["target"].get("name") or "")
    if not target:
        raise APIError.invalid(info.resource, info.name, [])
    now = format_time(registry.clock.now())

    def assign(pod: dict[str, Any]) -> dict[str, Any]:
        metadata = pod["metadata"]
        if metadata.get("deletionTimestamp"):
            raise APIError.conflict_binding(
                info.name, f"pod {info.name} is being deleted, cannot be assigned to a host"
            )
        current = (pod.get("spec") or {}).get("nodeName")
        if current:
            raise APIError.conflict_binding(
                info.name, f'pod {info.name} is already assigned to node "{current}"'
            )
        pod.setdefault("spec", {})["nodeName"] = target
        status = pod.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": now,
            }
        )
        status["conditions"] = conditions
        return pod

    # Binding writes spec and status at once, which neither the main resource nor the status
    # subresource may: it goes straight through the registry's raw update.
    await registry.guaranteed_update(
        info.resource, info.namespace, info.name, assign, subresource="binding"
    )
    return success(201)
