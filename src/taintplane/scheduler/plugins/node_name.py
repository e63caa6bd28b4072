"""NodeName: a pod that names its node fits only that node."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from taintplane.scheduler.events import ClusterEvent
from taintplane.scheduler.framework import CycleState, FilterPlugin, QueueingHintFn, Status
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names
from taintplane.scheduler.table import NodeTable

__all__ = ["ERR_REASON", "NodeName"]

ERR_REASON = "node(s) didn't match the requested node name"


def schedulable_after_node_add(pod: PodInfo, old: NodeInfo | None, new: NodeInfo) -> bool:
    """``isSchedulableAfterNodeAdd``: the node added is the one the pod names (or it names
    none)."""
    return not pod.node_name or pod.node_name == new.name


class NodeName:
    name = names.NODE_NAME

    def queueing_hints(self) -> dict[str, QueueingHintFn]:
        return {ClusterEvent.NODE_ADD: schedulable_after_node_add}

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if pod.node_name and pod.node_name != node.name:
            return Status.unresolvable(ERR_REASON)
        return None

    def filter_all(
        self, state: CycleState, pod: PodInfo, table: NodeTable
    ) -> npt.NDArray[np.bool_]:
        if not pod.node_name:
            return np.ones(table.size, dtype=bool)
        return np.asarray(table.names == pod.node_name, dtype=bool)


_check: type[FilterPlugin] = NodeName
