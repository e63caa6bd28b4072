"""NodeUnschedulable: cordoned nodes take only pods that tolerate the unschedulable taint."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from taintplane.api.taints import Taint, TaintEffect
from taintplane.api.wellknown import TAINT_NODE_UNSCHEDULABLE
from taintplane.scheduler.events import ClusterEvent
from taintplane.scheduler.framework import CycleState, FilterPlugin, QueueingHintFn, Status
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names
from taintplane.scheduler.table import NodeTable

__all__ = ["ERR_REASON_UNSCHEDULABLE", "NodeUnschedulable"]

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
_UNSCHEDULABLE = Taint(TAINT_NODE_UNSCHEDULABLE, TaintEffect.NO_SCHEDULE)


def _tolerates_unschedulable(pod: PodInfo) -> bool:
    return any(t.tolerates(_UNSCHEDULABLE) for t in pod.tolerations)


def schedulable_after_node_change(pod: PodInfo, old: NodeInfo | None, new: NodeInfo) -> bool:
    """``isSchedulableAfterNodeChange``: Queue only for a node that is schedulable now and was
    not (a node added counts as one that was not)."""
    return (old is None or old.unschedulable) and not new.unschedulable


def schedulable_after_toleration_change(pod: PodInfo, old: PodInfo | None, new: PodInfo) -> bool:
    """``isSchedulableAfterPodTolerationChange``: the pod itself now tolerates the
    unschedulable taint and did not."""
    if new.key != pod.key:
        return False
    return old is None or (not _tolerates_unschedulable(old) and _tolerates_unschedulable(new))


class NodeUnschedulable:
    name = names.NODE_UNSCHEDULABLE

    def queueing_hints(self) -> dict[str, QueueingHintFn]:
        # Upstream raises UpdateNodeTaint when spec.unschedulable changes; here that change
        # is its own event kind, with the same hint.
        return {
            ClusterEvent.NODE_ADD: schedulable_after_node_change,
            ClusterEvent.NODE_TAINT: schedulable_after_node_change,
            ClusterEvent.NODE_SCHEDULABLE: schedulable_after_node_change,
            ClusterEvent.POD_UPDATE: schedulable_after_toleration_change,
        }

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
