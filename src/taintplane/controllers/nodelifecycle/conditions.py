"""Node conditions and the NoSchedule taints that mirror them (``doNoScheduleTaintingPass``)."""

from __future__ import annotations

from typing import Any

from taintplane.api.wellknown import (
    TAINT_NODE_DISK_PRESSURE,
    TAINT_NODE_MEMORY_PRESSURE,
    TAINT_NODE_NETWORK_UNAVAILABLE,
    TAINT_NODE_NOT_READY,
    TAINT_NODE_PID_PRESSURE,
    TAINT_NODE_UNREACHABLE,
    TAINT_NODE_UNSCHEDULABLE,
)

__all__ = ["CONDITION_TAINTS", "condition_of", "ready_condition", "schedule_taints_wanted"]

NO_SCHEDULE = "NoSchedule"

#: Condition type -> {status -> the NoSchedule taint key that mirrors it}.
CONDITION_TAINTS: dict[str, dict[str, str]] = {
    "Ready": {"False": TAINT_NODE_NOT_READY, "Unknown": TAINT_NODE_UNREACHABLE},
    "MemoryPressure": {"True": TAINT_NODE_MEMORY_PRESSURE},
    "DiskPressure": {"True": TAINT_NODE_DISK_PRESSURE},
    "NetworkUnavailable": {"True": TAINT_NODE_NETWORK_UNAVAILABLE},
    "PIDPressure": {"True": TAINT_NODE_PID_PRESSURE},
}
_CONDITION_TAINT_KEYS = {
    key for by_status in CONDITION_TAINTS.values() for key in by_status.values()
}


def condition_of(node: dict[str, Any] | None, type_: str) -> dict[str, Any] | None:
    for item in ((node or {}).get("status") or {}).get("conditions") or []:
        if isinstance(item, dict) and item.get("type") == type_:
            return item
    return None


def ready_condition(node: dict[str, Any] | None) -> dict[str, Any] | None:
    return condition_of(node, "Ready")


def schedule_taints_wanted(
    node: dict[str, Any],
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The condition/unschedulable NoSchedule taints to add and to remove, as (key, effect),
    in upstream's order (conditions as listed, then unschedulable)."""
    wanted: list[tuple[str, str]] = []
    for item in (node.get("status") or {}).get("conditions") or []:
        key = CONDITION_TAINTS.get(item.get("type"), {}).get(item.get("status"))
        if key is not None:
            wanted.append((key, NO_SCHEDULE))
    if (node.get("spec") or {}).get("unschedulable"):
        wanted.append((TAINT_NODE_UNSCHEDULABLE, NO_SCHEDULE))
    present = [
        (t.get("key"), t.get("effect"))
        for t in (node.get("spec") or {}).get("taints") or []
        if t.get("effect") == NO_SCHEDULE
        and (t.get("key") == TAINT_NODE_UNSCHEDULABLE or t.get("key") in _CONDITION_TAINT_KEYS)
    ]
    add = [t for t in wanted if t not in present]
    remove = [t for t in present if t not in wanted]
    return add, [(str(k), str(e)) for k, e in remove]
