"""TaintToleration: keep pods off nodes with taints they do not tolerate (NoSchedule and
NoExecute), and prefer nodes with fewer untolerated PreferNoSchedule taints."""

from __future__ import annotations

from collections.abc import Sequence

from taintplane.api.taints import TaintEffect
from taintplane.api.tolerations import TaintFilter, Toleration, find_untolerated_taint
from taintplane.scheduler.framework import (
    CycleState,
    FilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    Status,
    default_normalize,
)
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names

__all__ = ["ERR_REASON_NOT_MATCH", "TaintToleration"]

#: Since Kubernetes 1.35 (and 1.34.2) the reason names no taint: keys and values may be
#: sensitive, and a node-specific reason would split the "0/N nodes" histogram.
ERR_REASON_NOT_MATCH = "node(s) had untolerated taint(s)"
_PRE_SCORE_KEY = "PreScore" + names.TAINT_TOLERATION


class TaintToleration:
    name = names.TAINT_TOLERATION
    reverse = True

    def __init__(self, *, comparison_operators: bool = False) -> None:
        self.comparison_operators = comparison_operators

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


_checks: tuple[type[FilterPlugin], type[PreScorePlugin], type[ScorePlugin]] = (
    TaintToleration,
    TaintToleration,
    TaintToleration,
)
