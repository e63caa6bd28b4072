"""What the node lifecycle controller remembers of each node's heartbeats
(``tryUpdateNodeHealth``): when it last saw the Ready heartbeat or the Lease move — by its own
clock, not the timestamps' — and whether a node has been silent past its grace period."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from taintplane.api.decoding import format_time, parse_timestamp
from taintplane.controllers.nodelifecycle.conditions import condition_of, ready_condition

if TYPE_CHECKING:
    from taintplane.controllers.nodelifecycle.controller import NodeLifecycleConfig

__all__ = ["NodeHealth", "NodeHealthTracker", "already_silent", "marked_silent"]

#: The conditions marked Unknown when a node goes silent (NetworkUnavailable is left alone:
#: the control plane, not the kubelet, owns it).
SILENT_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")


@dataclass
class NodeHealth:
    ready: dict[str, Any] | None
    probe: datetime
    ready_transition: datetime
    lease_renew: datetime | None = None


class NodeHealthTracker:
    def __init__(self, config: NodeLifecycleConfig) -> None:
        self.config = config
        self.records: dict[str, NodeHealth] = {}
        self._pending: dict[str, tuple[datetime, datetime | None]] = {}

    def restart(self, names: Iterable[str], now: datetime) -> None:
        """Leaving full disruption: every node listed gets a fresh grace period (records of
        deleted nodes, kept as upstream keeps them, are left as they are)."""
        for name in names:
            record = self.records.get(name)
            if record is not None:
                record.probe = now
                record.ready_transition = now

    def review(
        self, node: dict[str, Any], lease: dict[str, Any] | None, now: datetime
    ) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any] | None]:
        """(observed Ready, current Ready, the node to write back or None)."""
        name = node["metadata"]["name"]
        health = self.records.get(name)
        current = ready_condition(node)
        created = parse_timestamp(node["metadata"].get("creationTimestamp")) or now
        if current is None:
            stamp = node["metadata"].get("creationTimestamp")
            observed: dict[str, Any] = {
                "type": "Ready",
                "status": "Unknown",
                "lastHeartbeatTime": stamp,
                "lastTransitionTime": stamp,
            }
            grace = self.config.node_startup_grace_period
            if health is not None:
                health.ready = None
            else:
                health = NodeHealth(None, created, created)
        else:
            observed = dict(current)
            grace = self.config.node_monitor_grace_period
        saved = health.ready if health is not None else None
        saved_lease = health.lease_renew if health is not None else None
        if health is None or (saved is None and current is not None):
            health = NodeHealth(copy.deepcopy(current), now, now)
        elif (
            saved is not None
            and current is not None
            and saved.get("lastHeartbeatTime") != current.get("lastHeartbeatTime")
        ):
            transition = (
                now
                if saved.get("lastTransitionTime") != current.get("lastTransitionTime")
                else health.ready_transition
            )
            health = NodeHealth(copy.deepcopy(current), now, transition)
        renew = parse_timestamp(((lease or {}).get("spec") or {}).get("renewTime"))
        if renew is not None and (saved_lease is None or saved_lease < renew):
            health.lease_renew = renew
            health.probe = now
        elif health.lease_renew is None:
            health.lease_renew = saved_lease
        self.records[name] = health

        if now <= health.probe + timedelta(seconds=grace) or already_silent(node):
            # (A node marked silent before stays as it is: no copy of it every pass.)
            return observed, current, None
        updated = marked_silent(node, now)
        current = ready_condition(updated)
        if current == observed:
            return observed, current, None
        return observed, current, updated

    def written(self, name: str, node: dict[str, Any], now: datetime) -> None:
        """The node's status was written with conditions Unknown: remember that status, keep
        the probe time, and note the transition."""
        previous = self.records.get(name)
        probe = previous.probe if previous else now
        lease = previous.lease_renew if previous else None
        self.records[name] = NodeHealth(copy.deepcopy(ready_condition(node)), probe, now, lease)


def already_silent(node: dict[str, Any]) -> bool:
    """Whether every condition a silent node gets is there and Unknown already, so that
    :func:`marked_silent` would change nothing."""
    for type_ in SILENT_CONDITIONS:
        found = condition_of(node, type_)
        if found is None or found.get("status") != "Unknown":
            return False
    return True


def marked_silent(node: dict[str, Any], now: datetime) -> dict[str, Any]:
    """A copy of the node with the conditions of a silent node: each missing one added as
    never updated, each other one made Unknown (upstream's tryUpdateNodeHealth)."""
    updated = copy.deepcopy(node)
    status = updated.setdefault("status", {})
    conditions = status.setdefault("conditions", [])
    stamp_now = format_time(now)
    for type_ in SILENT_CONDITIONS:
        found = condition_of(updated, type_)
        if found is None:
            conditions.append(
                {
                    "type": type_,
                    "status": "Unknown",
                    "lastHeartbeatTime": node["metadata"].get("creationTimestamp"),
                    "lastTransitionTime": stamp_now,
                    "reason": "NodeStatusNeverUpdated",
                    "message": "Kubelet never posted node status.",
                }
            )
        elif found.get("status") != "Unknown":
            found["status"] = "Unknown"
            found["reason"] = "NodeStatusUnknown"
            found["message"] = "Kubelet stopped posting node status."
            found["lastTransitionTime"] = stamp_now
    return updated
