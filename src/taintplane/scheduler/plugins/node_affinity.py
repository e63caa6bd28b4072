"""NodeAffinity: ``nodeSelector`` and required node affinity filter; preferred affinity scores.

Required terms are ORed, the expressions and fields within a term ANDed; a term with neither
matches nothing. Operators: In, NotIn, Exists, DoesNotExist, Gt, Lt (integers). Fields:
``metadata.name`` with In/NotIn.

PreFilter skips pods with neither nodeSelector nor required node affinity, and when every
required term names nodes (``matchFields metadata.name In``), returns those names as the only
candidates (the framework leaves the other nodes out); terms whose names cannot meet reject
the pod with ``pod affinity terms conflict``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from taintplane.api import nodeaffinity
from taintplane.scheduler.events import ClusterEvent
from taintplane.scheduler.framework import (
    Code,
    CycleState,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHintFn,
    ScorePlugin,
    Status,
    default_normalize,
    normalize_array,
)
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names
from taintplane.scheduler.table import NodeTable

__all__ = ["ERR_REASON_CONFLICT", "ERR_REASON_POD", "NodeAffinity", "admits", "term_matches"]

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_CONFLICT = "pod affinity terms conflict"
_OBJECT_NAME_FIELD = "metadata.name"


def term_matches(term: Mapping[str, Any], node: NodeInfo) -> bool:
    return nodeaffinity.term_matches(term, node.labels, node.name)


def _node_affinity(pod: PodInfo) -> Mapping[str, Any]:
    affinity = (pod.pod.get("spec") or {}).get("affinity") or {}
    return affinity.get("nodeAffinity") or {}


def _required_match(pod: PodInfo, node: NodeInfo) -> bool:
    spec = pod.pod.get("spec") or {}
    return nodeaffinity.pod_matches_node_selector_and_affinity(spec, node.labels, node.name)


def _constrains(pod: PodInfo) -> bool:
    """Has the pod a nodeSelector or required node affinity (anything the filter checks)?"""
    return bool((pod.pod.get("spec") or {}).get("nodeSelector")) or bool(
        _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
    )


def admits(pod: PodInfo, node: NodeInfo) -> bool:
    """Does the pod's nodeSelector and required node affinity admit the node (the filter's
    answer, without a cycle; free for the common pod that has neither)?"""
    return not _constrains(pod) or _required_match(pod, node)


def schedulable_after_node_change(pod: PodInfo, old: NodeInfo | None, new: NodeInfo) -> bool:
    """``isSchedulableAfterNodeChange``: the node matches the pod's nodeSelector and required
    affinity now, and is new or did not match before."""
    if not _required_match(pod, new):
        return False
    return old is None or not _required_match(pod, old)


def schedulable_after_pod_change(pod: PodInfo, old: PodInfo | None, new: PodInfo) -> bool:
    """The pod itself changed its nodeSelector or node affinity (upstream registers no pod
    event: the API lets only a gated pod change them, and a gated pod is not parked; this
    answers Queue should one change anyway)."""
    if new.key != pod.key:
        return False
    if old is None:
        return True
    before, after = old.pod.get("spec") or {}, new.pod.get("spec") or {}
    return before.get("nodeSelector") != after.get("nodeSelector") or _node_affinity(
        old
    ) != _node_affinity(new)


class NodeAffinity:
    name = names.NODE_AFFINITY
    reverse = False

    def queueing_hints(self) -> dict[str, QueueingHintFn]:
        return {
            ClusterEvent.NODE_ADD: schedulable_after_node_change,
            ClusterEvent.NODE_LABEL: schedulable_after_node_change,
            ClusterEvent.POD_UPDATE: schedulable_after_pod_change,
        }

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | PreFilterResult | None:
        required = _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
        if required is None and (pod.pod.get("spec") or {}).get("nodeSelector") is None:
            return Status(Code.SKIP)
        terms = (required or {}).get("nodeSelectorTerms") or []
        if not terms:
            return None
        names: set[str] = set()
        for term in terms:
            term_names: set[str] | None = None
            for requirement in term.get("matchFields") or []:
                if (
                    requirement.get("key") == _OBJECT_NAME_FIELD
                    and requirement.get("operator") == "In"
                ):
                    values = {str(v) for v in requirement.get("values") or []}
                    # Requirements within a term are ANDed.
                    term_names = values if term_names is None else term_names & values
            if term_names is None:
                return None  # a term open to every node: terms are ORed
            names |= term_names
        if not names:
            return Status.unresolvable(ERR_REASON_CONFLICT)
        return PreFilterResult(frozenset(names))

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        spec = pod.pod.get("spec") or {}
        if not nodeaffinity.pod_matches_node_selector_and_affinity(spec, node.labels, node.name):
            return Status.unresolvable(ERR_REASON_POD)
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        preferred = _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution") or []
        return sum(
            int(term.get("weight") or 0)
            for term in preferred
            if term_matches(term.get("preference") or {}, node)
        )

    def normalize(self, state: CycleState, pod: PodInfo, scores: dict[str, int]) -> None:
        default_normalize(scores, reverse=False)

    def filter_all(
        self, state: CycleState, pod: PodInfo, table: NodeTable
    ) -> npt.NDArray[np.bool_]:
        if not _constrains(pod):
            return np.ones(table.size, dtype=bool)
        return np.array([self.filter(state, pod, node) is None for node in table.nodes], dtype=bool)

    def score_all(
        self, state: CycleState, pod: PodInfo, table: NodeTable, rows: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64]:
        if not _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution"):
            return np.zeros(len(rows), dtype=np.int64)
        raw = np.array([self.score(state, pod, table.nodes[i]) for i in rows], dtype=np.int64)
        return normalize_array(raw, reverse=False)


_checks: tuple[type[PreFilterPlugin], type[FilterPlugin], type[ScorePlugin]] = (
    NodeAffinity,
    NodeAffinity,
    NodeAffinity,
)
