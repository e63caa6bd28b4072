"""``metav1.Condition`` lists as apimachinery's ``meta.SetStatusCondition`` keeps them."""

from __future__ import annotations

from typing import Any

__all__ = ["set_status_condition"]


def set_status_condition(
    conditions: list[dict[str, Any]], wanted: dict[str, Any], now: str
) -> list[dict[str, Any]]:
    """A copy of ``conditions`` with ``wanted`` set: a new type is added with
    ``lastTransitionTime`` now; an existing one takes the new status (and, if the status
    changed, the transition time), reason, message and observedGeneration."""
    result = [dict(c) for c in conditions if isinstance(c, dict)]
    for condition in result:
        if condition.get("type") != wanted["type"]:
            continue
        if condition.get("status") != wanted.get("status"):
            condition["lastTransitionTime"] = wanted.get("lastTransitionTime") or now
        for field in ("status", "reason", "message", "observedGeneration"):
            if field in wanted:
                condition[field] = wanted[field]
        return result
    result.append({**wanted, "lastTransitionTime": wanted.get("lastTransitionTime") or now})
    return result
