"""Pod conditions: finding them, readiness, and upstream's ``UpdatePodCondition``."""

from __future__ import annotations

from typing import Any

__all__ = ["changed_condition", "find_condition", "is_pod_ready", "update_pod_condition"]


def find_condition(pod: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == type_:
            return condition
    return None


def is_pod_ready(pod: dict[str, Any]) -> bool:
    """podutil.IsPodReady: the Ready condition is True."""
    condition = find_condition(pod, "Ready")
    return condition is not None and condition.get("status") == "True"


def update_pod_condition(pod: dict[str, Any], condition: dict[str, Any], now: str) -> bool:
    """Set ``condition`` on the pod's status as upstream's UpdatePodCondition does: it
    replaces the condition of its type; ``lastTransitionTime`` is now for a new condition or a
    changed status and kept for an unchanged one. Whether anything changed."""
    status = pod.setdefault("status", {})
    conditions = status.setdefault("conditions", [])
    wanted = {k: v for k, v in condition.items() if k != "lastTransitionTime"}
    for index, existing in enumerate(conditions):
        if not isinstance(existing, dict) or existing.get("type") != wanted["type"]:
            continue
        same_status = existing.get("status") == wanted.get("status")
        wanted["lastTransitionTime"] = (
            existing.get("lastTransitionTime") or now if same_status else now
        )
        # An unset probe time equals a null one (Go's zero Time), as upstream compares them.
        if {"lastProbeTime": None, **wanted} == {"lastProbeTime": None, **existing}:
            return False
        conditions[index] = wanted
        return True
    wanted["lastTransitionTime"] = now
    conditions.append(wanted)
    return True


def changed_condition(
    pod: dict[str, Any], condition: dict[str, Any], now: str
) -> dict[str, Any] | None:
    """The condition as ``update_pod_condition`` would leave it on ``pod``, or None when that
    changes nothing (so no status write is needed). ``pod`` itself is not changed."""
    existing = (pod.get("status") or {}).get("conditions") or []
    scratch: dict[str, Any] = {"status": {"conditions": [dict(c) for c in existing]}}
    if not update_pod_condition(scratch, condition, now):
        return None
    return find_condition(scratch, condition["type"])
