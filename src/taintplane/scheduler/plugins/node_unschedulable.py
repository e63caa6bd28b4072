"""NodeUnschedulable: cordoned nodes take only pods that tolerate the unschedulable taint."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from taintplane.api.taints import Taint, TaintEffect
from taintplane.api.wellknown import TAINT_NODE_UNSCHEDULABLE
from taintplane.scheduler.framework import CycleState, FilterPlugin, Status
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names
from taintplane.scheduler.table import NodeTable

__all__ = ["ERR_REASON_UNSCHEDULABLE", "NodeUnschedulable"]

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
_UNSCHEDULABLE = Taint(TAINT_NODE_UNSCHEDULABLE, TaintEffect.NO_SCHEDULE)


class NodeUnschedulable:
    name = names.NODE_UNSCHEDULABLE

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not node.unschedulable:
            return None
        if any(t.tolerates(_UNSCHEDULABLE) for t in pod.tolerations):
            return None
        return Status.unresolvable(ERR_REASON_UNSCHEDULABLE)

    def filter_all(
        self, state: CycleState, pod: PodInfo, table: NodeTable
    ) -> npt.NDArray[np.bool_]:
        if any(t.tolerates(_UNSCHEDULABLE) for t in pod.tolerations):
            return np.ones(table.size, dtype=bool)
        return ~table.unschedulable


_check: type[FilterPlugin] = NodeUnschedulable
