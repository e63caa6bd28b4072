"""NodePorts: a pod's host ports must be free on the node.

A port is taken per protocol and host IP, by the pods on the node (assumed ones included):
a wanted port on ``0.0.0.0`` (or no hostIP) conflicts with that protocol and port on any IP;
one on a specific IP conflicts with the same IP and with ``0.0.0.0``. Pods without host ports
skip the plugin (PreFilter answers Skip), so they cost nothing here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from taintplane.api.host_ports import HostPort, port_conflict
from taintplane.scheduler.events import ClusterEvent
from taintplane.scheduler.framework import (
    Code,
    CycleState,
    FilterPlugin,
    PreFilterPlugin,
    QueueingHintFn,
    Status,
)
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names
from taintplane.scheduler.table import NodeTable

__all__ = ["ERR_REASON", "NodePorts", "conflicts"]

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
_PRE_FILTER_KEY = "PreFilter" + names.NODE_PORTS


def conflicts(node: NodeInfo, wanted: HostPort) -> bool:
    """``HostPortInfo.CheckConflict`` against the node's used ports."""
    return port_conflict(node.used_ports, wanted)


def schedulable_after_pod_deleted(pod: PodInfo, old: PodInfo, new: None) -> bool:
    """``isSchedulableAfterPodDeleted``: the deleted pod was placed (or nominated) and held a
    host port the pod wants."""
    nominated = (old.pod.get("status") or {}).get("nominatedNodeName")
    if not old.node_name and not nominated:
        return False
    used: dict[tuple[str, int], set[str]] = {}
    for protocol, port, ip in old.host_ports:
        used.setdefault((protocol, port), set()).add(ip)
    return any(port_conflict(used, wanted) for wanted in pod.host_ports)


def _never(pod: PodInfo, old: object, new: object) -> bool:
    return False


class NodePorts:
    name = names.NODE_PORTS

    def queueing_hints(self) -> dict[str, QueueingHintFn]:
        """With queueing hints upstream registers a node added (no hint: Queue) and a pod
        deleted; a node's labels or taints never free a port."""
        return {
            ClusterEvent.ASSIGNED_POD_DELETE: schedulable_after_pod_deleted,
            ClusterEvent.NODE_LABEL: _never,
            ClusterEvent.NODE_TAINT: _never,
        }

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        if not pod.host_ports:
            return Status(Code.SKIP)
        state.data[_PRE_FILTER_KEY] = pod.host_ports
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        wanted: tuple[HostPort, ...] = state.data.get(_PRE_FILTER_KEY, pod.host_ports)
        if any(conflicts(node, port) for port in wanted):
            return Status.unschedulable(ERR_REASON)
        return None

    def filter_all(
        self, state: CycleState, pod: PodInfo, table: NodeTable
    ) -> npt.NDArray[np.bool_]:
        # Only pods with host ports get here (the others skip): few nodes hold ports at all.
        return np.array([self.filter(state, pod, node) is None for node in table.nodes], dtype=bool)


_checks: tuple[type[PreFilterPlugin], type[FilterPlugin]] = (NodePorts, NodePorts)
