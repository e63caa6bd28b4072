"""Table cells for workloads (the -o wide Containers / Images / Selector columns), core/v1
Events and ResourceClaims, as upstream's printers compute them."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from taintplane.api.selectors import SelectorError, label_selector_from_dict
from taintplane.apiserver.table_columns import Column, Obj, field_cell, get_path, since

__all__ = ["EVENT_COLUMNS", "WORKLOAD_WIDE", "claim_state"]


def _template_containers(obj: Obj) -> list[Mapping[str, Any]]:
    containers = get_path(obj, "spec", "template", "spec", "containers", default=[]) or []
    return [c for c in containers if isinstance(c, Mapping)]


def _selector(obj: Obj, _: datetime) -> str:
    """``metav1.LabelSelectorAsSelector(spec.selector).String()``: requirements sorted by key."""
    try:
        selector = label_selector_from_dict(get_path(obj, "spec", "selector", default=None))
    except SelectorError:
        return "<error>"
    return ",".join(str(r) for r in sorted(selector.requirements, key=lambda r: r.key))


#: The -o wide columns upstream adds to Deployments, ReplicaSets and DaemonSets.
WORKLOAD_WIDE = (
    Column(
        "Containers",
        lambda o, _: ",".join(str(c.get("name", "")) for c in _template_containers(o)),
        priority=1,
        description="Names of each container in the template.",
    ),
    Column(
        "Images",
        lambda o, _: ",".join(str(c.get("image", "")) for c in _template_containers(o)),
        priority=1,
        description="Images referenced by each container in the template.",
    ),
    Column(
        "Selector",
        _selector,
        priority=1,
        description="Label selector for pods. Existing ReplicaSets whose pods are selected by "
        "this will be the ones affected by this deployment.",
    ),
)


def _event_first_seen(obj: Obj, now: datetime) -> str:
    first = obj.get("firstTimestamp")
    return since(first if first else obj.get("eventTime"), now)


def _event_last_seen(obj: Obj, now: datetime) -> str:
    series = obj.get("series")
    if isinstance(series, Mapping):
        return since(series.get("lastObservedTime"), now)
    last = obj.get("lastTimestamp")
    return since(last, now) if last else _event_first_seen(obj, now)


def _event_count(obj: Obj, _: datetime) -> int:
    series = obj.get("series")
    if isinstance(series, Mapping):
        return int(series.get("count") or 0)
    return int(obj.get("count") or 0) or 1  # singleton events have no count in the new API


def _event_object(obj: Obj, _: datetime) -> str:
    kind = str(get_path(obj, "involvedObject", "kind")).lower()
    name = get_path(obj, "involvedObject", "name")
    return f"{kind}/{name}" if name else kind


def _event_source(obj: Obj, _: datetime) -> str:
    component = get_path(obj, "source", "component") or obj.get("reportingComponent") or ""
    instance = get_path(obj, "source", "host") or obj.get("reportingInstance") or ""
    return f"{component}, {instance}" if instance else str(component)


EVENT_COLUMNS = (
    Column("Last Seen", _event_last_seen),
    Column("Type", field_cell("type")),
    Column("Reason", field_cell("reason")),
    Column("Object", _event_object),
    Column("Subobject", field_cell("involvedObject", "fieldPath"), priority=1),
    Column("Source", _event_source, priority=1),
    Column("Message", lambda o, _: str(o.get("message") or "").strip()),
    Column("First Seen", _event_first_seen, priority=1),
    Column("Count", _event_count, priority=1, type_="integer"),
    Column("Name", lambda o, _: get_path(o, "metadata", "name"), priority=1),
)


def claim_state(obj: Obj, _: datetime) -> str:
    """printResourceClaim's STATE: deleted, pending, allocated, reserved, deallocating."""
    states = []
    deleted = bool(get_path(obj, "metadata", "deletionTimestamp"))
    if deleted:
        states.append("deleted")
    if not get_path(obj, "status", "allocation", default=None):
        if not deleted:
            states.append("pending")
    else:
        states.append("allocated")
        if get_path(obj, "status", "reservedFor", default=None):
            states.append("reserved")
        elif deleted:
            states.append("deallocating")
    return ",".join(states)
