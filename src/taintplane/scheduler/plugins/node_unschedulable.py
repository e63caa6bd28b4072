"""NodeUnschedulable: cordoned nodes take only pods that tolerate the unschedulable taint."""

from __future__ import annotations

from taintplane.api.taints import Taint, TaintEffect
from taintplane.api.wellknown import TAINT_NODE_UNSCHEDULABLE
from taintplane.scheduler.framework import CycleState, FilterPlugin, Status
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names

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


_check: type[FilterPlugin] = NodeUnschedulable
