"""TaintToleration: keep pods off nodes with taints they do not tolerate (NoSchedule and
NoExecute), and prefer nodes with fewer untolerated PreferNoSchedule taints."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from taintplane.api.taints import TaintEffect
from taintplane.api.tolerations import TaintFilter, Toleration, find_untolerated_taint
from taintplane.scheduler.events import ClusterEvent
from taintplane.scheduler.framework import (
    CycleState,
    FilterPlugin,
    PreScorePlugin,
    QueueingHintFn,
    ScorePlugin,
    Status,
    default_normalize,
    normalize_array,
)
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names
from taintplane.scheduler.table import NodeTable

__all__ = ["ERR_REASON_NOT_MATCH", "TaintToleration"]

Mask = npt.NDArray[np.bool_]
Rows = npt.NDArray[np.int64]

#: Since Kubernetes 1.35 (and 1.34.2) the reason names no taint: keys and values may be
#: sensitive, and a node-specific reason would split the "0/N nodes" histogram.
ERR_REASON_NOT_MATCH = "node(s) had untolerated taint(s)"
_PRE_SCORE_KEY = "PreScore" + names.TAINT_TOLERATION


class TaintToleration:
    name = names.TAINT_TOLERATION
    reverse = True

    def __init__(self, *, comparison_operators: bool = False) -> None:
        self.comparison_operators = comparison_operators

    def queueing_hints(self) -> dict[str, QueueingHintFn]:
        """Upstream's EventsToRegister with SchedulerQueueingHints: a node added or its taints
        changed, and the pod's own tolerations changed."""
        return {
            ClusterEvent.NODE_ADD: self.schedulable_after_node_change,
            ClusterEvent.NODE_TAINT: self.schedulable_after_node_change,
            ClusterEvent.POD_UPDATE: schedulable_after_toleration_change,
        }

    def _untolerated(self, pod: PodInfo, node: NodeInfo) -> bool:
        return (
            find_untolerated_taint(
                node.taints,
                pod.tolerations,
                TaintFilter.DO_NOT_SCHEDULE,
                comparison_operators=self.comparison_operators,
            )
            is not None
        )

    def schedulable_after_node_change(
        self, pod: PodInfo, old: NodeInfo | None, new: NodeInfo
    ) -> bool:
        """``isSchedulableAfterNodeChange``: Queue only if the node has untolerated taints no
        more (a node added counts as one that had)."""
        if self._untolerated(pod, new):
            return False  # the common case, asked first
        return old is None or self._untolerated(pod, old)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not node.taints:
            return None
        taint = find_untolerated_taint(
            node.taints,
            pod.tolerations,
            TaintFilter.DO_NOT_SCHEDULE,
            comparison_operators=self.comparison_operators,
        )
        return None if taint is None else Status.unresolvable(ERR_REASON_NOT_MATCH)

    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        state.data[_PRE_SCORE_KEY] = tuple(
            t for t in pod.tolerations if t.effect in ("", TaintEffect.PREFER_NO_SCHEDULE)
        )
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        tolerations: tuple[Toleration, ...] = state.data.get(_PRE_SCORE_KEY, ())
        return sum(
            1
            for taint in node.taints
            if taint.effect == TaintEffect.PREFER_NO_SCHEDULE
            and not any(
                t.tolerates(taint, comparison_operators=self.comparison_operators)
                for t in tolerations
            )
        )

    def normalize(self, state: CycleState, pod: PodInfo, scores: dict[str, int]) -> None:
        default_normalize(scores, reverse=True)

    # ---- over all nodes at once (see table.py) ---------------------------------------------

    def filter_all(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Mask:
        tolerated = np.array(
            [
                find_untolerated_taint(
                    group,
                    pod.tolerations,
                    TaintFilter.DO_NOT_SCHEDULE,
                    comparison_operators=self.comparison_operators,
                )
                is None
                for group in table.groups
            ],
            dtype=bool,
        )
        return tolerated[table.taint_group] if table.size else np.ones(0, dtype=bool)

    def score_all(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: Rows) -> Rows:
        tolerations: tuple[Toleration, ...] = state.data.get(_PRE_SCORE_KEY, ())
        counts = np.array(
            [
                sum(
                    1
                    for taint in group
                    if taint.effect == TaintEffect.PREFER_NO_SCHEDULE
                    and not any(
                        t.tolerates(taint, comparison_operators=self.comparison_operators)
                        for t in tolerations
                    )
                )
                for group in table.groups
            ],
            dtype=np.int64,
        )
        raw = (
            counts[table.taint_group[rows]] if len(counts) else np.zeros(len(rows), dtype=np.int64)
        )
        return normalize_array(raw, reverse=True)


def schedulable_after_toleration_change(pod: PodInfo, old: PodInfo | None, new: PodInfo) -> bool:
    """``isSchedulableAfterPodTolerationChange``: the pod's own tolerations changed."""
    return new.key == pod.key and (old is None or old.tolerations != new.tolerations)


_checks: tuple[type[FilterPlugin], type[PreScorePlugin], type[ScorePlugin]] = (
    TaintToleration,
    TaintToleration,
    TaintToleration,
)
