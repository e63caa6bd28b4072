"""Table cells for workloads (the -o wide Containers / Images / Selector columns) and their
pods (READY, STATUS, RESTARTS), core/v1 Events and ResourceClaims, as upstream's printers
compute them."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from taintplane.api.decoding import parse_timestamp
from taintplane.api.selectors import SelectorError, label_selector_from_dict
from taintplane.apiserver.table_columns import (
    Column,
    Obj,
    field_cell,
    get_path,
    human_duration,
    since,
)

__all__ = ["EVENT_COLUMNS", "WORKLOAD_WIDE", "PodSummary", "claim_state"]


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


def _finished_at(state: Mapping[str, Any]) -> datetime | None:
    """When a container's last run ended (``lastState.terminated.finishedAt``), if known."""
    stamp = get_path(state, "lastState", "terminated", "finishedAt", default=None)
    if not isinstance(stamp, str) or not stamp:
        return None
    return parse_timestamp(stamp)  # a naive time stored by an older version reads as UTC


def _later(first: datetime | None, second: datetime | None) -> datetime | None:
    return second if first is None or (second is not None and second > first) else first


def _has_condition(status: Mapping[str, Any], kind: str) -> bool:
    return any(
        isinstance(c, Mapping) and c.get("type") == kind and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def _terminated_reason(terminated: Mapping[str, Any]) -> str:
    if terminated.get("reason"):
        return str(terminated["reason"])
    if terminated.get("signal"):
        return f"Signal:{terminated['signal']}"
    return f"ExitCode:{terminated.get('exitCode') or 0}"


def _statuses(status: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    return [s for s in status.get(key) or [] if isinstance(s, Mapping)]


class PodSummary:
    """printPod's READY, STATUS and RESTARTS, worked out together as upstream does: init
    containers first (a failing or waiting one names the status ``Init:…``; sidecars, init
    containers with ``restartPolicy: Always``, count towards READY and RESTARTS), then the
    regular containers from the last, so that the first one's state has the last word."""

    def __init__(self, obj: Obj) -> None:
        spec = get_path(obj, "spec", default={}) or {}
        status = get_path(obj, "status", default={}) or {}
        phase = status.get("phase") or ""
        reason = status.get("reason") or phase
        gated = any(
            isinstance(c, Mapping)
            and c.get("type") == "PodScheduled"
            and c.get("reason") == "SchedulingGated"
            for c in status.get("conditions") or []
        )
        if gated or (not reason and spec.get("schedulingGates")):
            reason = "SchedulingGated"
        init_specs = [c for c in spec.get("initContainers") or [] if isinstance(c, Mapping)]
        sidecars = {c.get("name") for c in init_specs if c.get("restartPolicy") == "Always"}
        self.total = len(spec.get("containers") or []) + len(sidecars)
        self.ready = 0
        restarts = sidecar_restarts = 0
        last_restart: datetime | None = None
        last_sidecar_restart: datetime | None = None
        initializing = False
        for index, container in enumerate(_statuses(status, "initContainerStatuses")):
            count = int(container.get("restartCount") or 0)
            restarts += count
            last_restart = _later(last_restart, _finished_at(container))
            sidecar = container.get("name") in sidecars
            if sidecar:
                sidecar_restarts += count
                last_sidecar_restart = _later(last_sidecar_restart, _finished_at(container))
            terminated = get_path(container, "state", "terminated", default=None)
            waiting_reason = get_path(container, "state", "waiting", "reason")
            if isinstance(terminated, Mapping) and not terminated.get("exitCode"):
                continue
            if sidecar and container.get("started"):
                self.ready += 1 if container.get("ready") else 0
                continue
            if isinstance(terminated, Mapping):
                reason = "Init:" + _terminated_reason(terminated)
            elif waiting_reason and waiting_reason != "PodInitializing":
                reason = f"Init:{waiting_reason}"
            else:
                reason = f"Init:{index}/{len(init_specs)}"
            initializing = True
            break
        if not initializing or _has_condition(status, "Initialized"):
            # Init containers that ran to completion no longer count, sidecars still do.
            restarts, last_restart = sidecar_restarts, last_sidecar_restart
            has_running, error_reason = False, ""
            for container in reversed(_statuses(status, "containerStatuses")):
                restarts += int(container.get("restartCount") or 0)
                last_restart = _later(last_restart, _finished_at(container))
                state = container.get("state") or {}
                waiting_reason = get_path(state, "waiting", "reason")
                terminated = state.get("terminated")
                if waiting_reason:
                    reason = waiting_reason
                elif isinstance(terminated, Mapping):
                    reason = _terminated_reason(terminated)
                    if terminated.get("exitCode"):
                        error_reason = reason
                elif container.get("ready") and state.get("running") is not None:
                    has_running = True
                    self.ready += 1
            # Completed only if nothing runs on and nothing failed (kubernetes#124766).
            if reason == "Completed":
                if has_running and _has_condition(status, "Ready"):
                    reason = "Running"
                elif error_reason:
                    reason = error_reason
                elif has_running:
                    reason = "NotReady"
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            if status.get("reason") == "NodeLost":
                reason = "Unknown"
            elif phase not in ("Succeeded", "Failed"):
                reason = "Terminating"
        self.reason = reason
        self.restarts = restarts
        self.last_restart = last_restart

    def restarts_cell(self, now: datetime) -> str:
        if self.restarts and self.last_restart is not None:
            ago = human_duration((now - self.last_restart).total_seconds())
            return f"{self.restarts} ({ago} ago)"
        return str(self.restarts)


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
