"""PodTopologySpread: keep matching pods evenly spread over topology domains.

``DoNotSchedule`` constraints filter: placing the pod on a node must not make its domain hold
more than ``maxSkew`` matching pods above the least-loaded eligible domain. ``ScheduleAnyway``
constraints score: fewer matching pods in the node's domain is better. Which nodes count is set
per constraint by ``nodeAffinityPolicy`` (Honor by default: only nodes the pod's node affinity
and nodeSelector admit) and ``nodeTaintsPolicy`` (Ignore by default; Honor: only nodes whose
taints the pod tolerates). A node without a constraint's topology key is never a domain.
A pod without constraints of its own is scored with the system defaults (spread_defaults.py);
as upstream, nodes lacking one of those keys are then still scored on the others.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from taintplane.api.selectors import LabelSelector, Operator, Requirement, label_selector_from_dict
from taintplane.api.tolerations import TaintFilter, find_untolerated_taint
from taintplane.scheduler.events import ClusterEvent
from taintplane.scheduler.framework import (
    MAX_NODE_SCORE,
    Code,
    CycleState,
    FilterPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueingHintFn,
    ScorePlugin,
    Status,
)
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names
from taintplane.scheduler.plugins.node_affinity import admits
from taintplane.scheduler.plugins.spread_defaults import (
    HOSTNAME,
    SYSTEM_DEFAULT_CONSTRAINTS,
    SpreadListers,
    default_selector,
)
from taintplane.scheduler.plugins.spread_vector import spread_scores
from taintplane.scheduler.table import NodeTable

__all__ = [
    "ALL_NODES_KEY",
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "PodTopologySpread",
]

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
_FILTER_KEY = "PreFilter" + names.POD_TOPOLOGY_SPREAD
_SCORE_KEY = "PreScore" + names.POD_TOPOLOGY_SPREAD
ALL_NODES_KEY = "all-nodes"
"""Cycle-state key under which the scheduler leaves every node of the cycle (for scoring)."""


@dataclass
class Constraint:
    max_skew: int
    key: str
    hard: bool
    selector: LabelSelector
    min_domains: int
    honor_affinity: bool
    honor_taints: bool

    @classmethod
    def parse(cls, raw: Mapping[str, Any], pod: PodInfo) -> Constraint:
        selector = label_selector_from_dict(raw.get("labelSelector"))
        labels = (pod.pod.get("metadata") or {}).get("labels") or {}
        extra = tuple(
            Requirement(key, Operator.IN, (labels[key],))
            for key in raw.get("matchLabelKeys") or []
            if key in labels
        )
        return cls(
            max_skew=int(raw.get("maxSkew") or 1),
            key=str(raw.get("topologyKey") or ""),
            hard=raw.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule",
            selector=LabelSelector(selector.requirements + extra),
            min_domains=int(raw.get("minDomains") or 1),
            honor_affinity=raw.get("nodeAffinityPolicy", "Honor") == "Honor",
            honor_taints=raw.get("nodeTaintsPolicy", "Ignore") == "Honor",
        )

    def counts_node(
        self, pod: PodInfo, node: NodeInfo, admitted: bool, require_key: bool = True
    ) -> bool:
        """Does ``node`` take part in this constraint's domains for ``pod``? ``admitted``:
        whether the pod's node affinity and nodeSelector admit the node."""
        if require_key and self.key not in node.labels:
            return False
        if self.honor_affinity and not admitted:
            return False
        return not (
            self.honor_taints
            and find_untolerated_taint(node.taints, pod.tolerations, TaintFilter.DO_NOT_SCHEDULE)
            is not None
        )

    def matching(self, pod: PodInfo, node: NodeInfo) -> int:
        # Every pod of a Deployment asks every node the same question (the system defaults'
        # selector): the node keeps the answer until its pods change.
        key = (pod.namespace, self.selector)
        found = node.matching.get(key)
        if found is None:
            found = node.matching[key] = sum(
                1
                for other in node.pods.values()
                if other.namespace == pod.namespace
                and not other.terminating
                and self.selector.matches((other.pod.get("metadata") or {}).get("labels"))
            )
        return found


def schedulable_after_node_change(pod: PodInfo, old: NodeInfo | None, new: NodeInfo) -> bool:
    keys = {c.key for c in _constraints(pod, hard=True)}
    return any(node is not None and keys <= node.labels.keys() for node in (old, new))


def schedulable_after_pod_change(pod: PodInfo, old: PodInfo | None, new: PodInfo | None) -> bool:
    """A placed pod added (``new``) or deleted (``old``) that the pod's spreading counts."""
    other = new if new is not None else old
    if other is None:
        return True
    if other.namespace != pod.namespace or not other.node_name:
        return False  # only placed pods of its namespace are counted
    labels = (other.pod.get("metadata") or {}).get("labels")
    return any(c.selector.matches(labels) for c in _constraints(pod, hard=True))


def schedulable_after_pod_update(pod: PodInfo, old: PodInfo | None, new: PodInfo | None) -> bool:
    """Upstream's isSchedulableAfterPodChange for an update: of a placed pod in the pod's
    namespace, or of the pod itself. Its own new toleration helps if a DoNotSchedule
    constraint honours taints; otherwise only a label change that makes a constraint's
    selector start or stop to select the updated pod."""
    if old is None or new is None:
        return True
    if not (_involved(new, pod) and _involved(old, pod)):
        return False
    constraints = _constraints(pod, hard=True)
    if (
        new.key == pod.key
        and old.tolerations != new.tolerations
        and any(c.honor_taints for c in constraints)
    ):
        return True
    before = (old.pod.get("metadata") or {}).get("labels") or {}
    after = (new.pod.get("metadata") or {}).get("labels") or {}
    if before == after:
        return False
    return any(c.selector.matches(before) != c.selector.matches(after) for c in constraints)


def _involved(other: PodInfo, pod: PodInfo) -> bool:
    """``involvedInTopologySpreading``: the pod itself, or a placed pod of its namespace."""
    return other.key == pod.key or (bool(other.node_name) and other.namespace == pod.namespace)


def _constraints(pod: PodInfo, hard: bool) -> list[Constraint]:
    raw = (pod.pod.get("spec") or {}).get("topologySpreadConstraints") or []
    parsed = [Constraint.parse(c, pod) for c in raw]
    return [c for c in parsed if c.hard == hard]


@dataclass
class _Counts:
    constraints: list[Constraint]
    per_domain: list[dict[str, int]]

    def minimum(self, index: int) -> int:
        domains = self.per_domain[index]
        if len(domains) < self.constraints[index].min_domains or not domains:
            return 0
        return min(domains.values())


def _count(
    pod: PodInfo,
    nodes: Sequence[NodeInfo],
    constraints: list[Constraint],
    require_all: bool = True,
) -> _Counts:
    """Matching pods per domain. Without ``require_all`` (system defaults) a node lacking a
    key still counts for the others, and under that key in the "" domain (upstream reads the
    missing label as "")."""
    per_domain: list[dict[str, int]] = [{} for _ in constraints]
    for node in nodes:
        if require_all and not all(c.key in node.labels for c in constraints):
            continue
        admitted = admits(pod, node)
        # The system defaults share one selector: count the node's pods once for both.
        matched: dict[int, int] = {}
        for i, constraint in enumerate(constraints):
            if constraint.counts_node(pod, node, admitted, require_all):
                domain = node.labels.get(constraint.key, "")
                found = matched.get(id(constraint.selector))
                if found is None:
                    found = matched[id(constraint.selector)] = constraint.matching(pod, node)
                per_domain[i][domain] = per_domain[i].get(domain, 0) + found
    return _Counts(constraints, per_domain)


_Prepared = tuple[_Counts, list[float], set[str]]


@dataclass
class _Scoring:
    """PreScore's inputs; the per-node counts are made on first use."""

    pod: PodInfo
    constraints: list[Constraint]
    require_all: bool
    nodes: Sequence[NodeInfo]
    all_nodes: Sequence[NodeInfo]
    _prepared: _Prepared | None = None

    def per_node(self) -> _Prepared:
        if self._prepared is None:
            self._prepared = _prepare(
                self.pod, self.constraints, self.require_all, self.nodes, self.all_nodes
            )
        return self._prepared


def _prepare(
    pod: PodInfo,
    soft: list[Constraint],
    require_all: bool,
    nodes: Sequence[NodeInfo],
    all_nodes: Sequence[NodeInfo],
) -> _Prepared:
    # As upstream: the domains that score are those of the feasible nodes, each counted over
    # every node in the cluster; a feasible node lacking a topology key scores 0 (with the
    # system defaults: is scored on the keys it has).
    counts = _count(pod, all_nodes, soft, require_all)
    ignored = {n.name for n in nodes if require_all and not all(c.key in n.labels for c in soft)}
    weights: list[float] = []
    for i, constraint in enumerate(soft):
        # ``nodes`` passed every filter, NodeAffinity's included: all are admitted.
        seen = {
            n.labels.get(constraint.key, "")
            for n in nodes
            if n.name not in ignored
            and constraint.counts_node(pod, n, admitted=True, require_key=require_all)
        }
        counts.per_domain[i] = {d: c for d, c in counts.per_domain[i].items() if d in seen}
        size = len(counts.per_domain[i])
        if not require_all:
            # Upstream sizes the defaults' domains by the feasible nodes alone, whatever
            # their pods; the hostname domain is each feasible node.
            size = len(nodes) if constraint.key == HOSTNAME else len(seen)
        weights.append(math.log(size + 2))
    return counts, weights, ignored


class PodTopologySpread:
    name = names.POD_TOPOLOGY_SPREAD
    reverse = False

    def __init__(self, listers: SpreadListers | None = None) -> None:
        # With listers: defaultingType System (upstream's default); without: no defaults.
        self.listers = listers

    def _soft(self, pod: PodInfo) -> tuple[list[Constraint], bool]:
        """The scoring constraints and whether every node must hold all their keys."""
        if (pod.pod.get("spec") or {}).get("topologySpreadConstraints"):
            return _constraints(pod, hard=False), True
        if self.listers is None:
            return [], True
        selector = default_selector(pod, self.listers)
        if selector.is_empty():
            return [], False
        defaults = [Constraint.parse(raw, pod) for raw in SYSTEM_DEFAULT_CONSTRAINTS]
        for constraint in defaults:
            constraint.selector = selector
        return defaults, False

    def queueing_hints(self) -> dict[str, QueueingHintFn]:
        """As upstream's isSchedulableAfterPodChange: a placed pod added or deleted counts
        only if it is in the pod's namespace and one of its DoNotSchedule constraints selects
        it; a placed pod relabelled, or the pod itself updated, as schedulable_after_pod_update
        says (no other pending pod's update). A node event counts only for a node
        that has (or had) every topology key of those constraints: one without takes no part
        in any domain (upstream's nodeLabelsMatchSpreadConstraints)."""
        return {
            ClusterEvent.NODE_ADD: schedulable_after_node_change,
            ClusterEvent.NODE_LABEL: schedulable_after_node_change,
            ClusterEvent.NODE_TAINT: schedulable_after_node_change,
            ClusterEvent.ASSIGNED_POD_ADD: schedulable_after_pod_change,
            ClusterEvent.ASSIGNED_POD_DELETE: schedulable_after_pod_change,
            ClusterEvent.ASSIGNED_POD_LABEL: schedulable_after_pod_update,
            ClusterEvent.POD_UPDATE: schedulable_after_pod_update,
        }

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        hard = _constraints(pod, hard=True)
        if not hard:
            return Status(Code.SKIP)
        state.data[_FILTER_KEY] = _count(pod, nodes, hard)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        counts: _Counts = state.data[_FILTER_KEY]
        labels = (pod.pod.get("metadata") or {}).get("labels")
        for i, constraint in enumerate(counts.constraints):
            domain = node.labels.get(constraint.key)
            if domain is None:
                return Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
            self_match = 1 if constraint.selector.matches(labels) else 0
            skew = counts.per_domain[i].get(domain, 0) + self_match - counts.minimum(i)
            if skew > constraint.max_skew:
                return Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
        return None

    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        soft, require_all = self._soft(pod)
        if not soft:
            return Status(Code.SKIP)
        # The counts are made when first asked: score_all makes its own over the node table.
        all_nodes: Sequence[NodeInfo] = state.data.get(ALL_NODES_KEY, nodes)
        state.data[_SCORE_KEY] = _Scoring(pod, soft, require_all, nodes, all_nodes)
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        counts, weights, ignored = state.data[_SCORE_KEY].per_node()
        if node.name in ignored:
            return 0
        total = 0.0
        for i, constraint in enumerate(counts.constraints):
            domain = node.labels.get(constraint.key)
            if domain is None:  # only under the system defaults: this key adds nothing
                continue
            total += counts.per_domain[i].get(domain, 0) * weights[i] + (constraint.max_skew - 1)
        return math.floor(total + 0.5)  # Go's math.Round: halves away from zero, not to even

    def score_all(
        self, state: CycleState, pod: PodInfo, table: NodeTable, rows: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64]:
        """The scores of the table rows ``rows`` (the feasible nodes PreScore was given), from
        arrays kept on the table (spread_vector.py), so that a decision costs the rows that
        changed since the last one, not a pass over every node. When the cycle's nodes are
        not the table's rows, node by node as :meth:`score` and :meth:`normalize` give them."""
        scoring: _Scoring = state.data[_SCORE_KEY]
        if scoring.all_nodes is table.nodes:
            return spread_scores(
                pod, scoring.constraints, scoring.require_all, HOSTNAME, table, rows
            )
        picked = [table.nodes[int(i)] for i in rows]
        scores = {node.name: self.score(state, pod, node) for node in picked}
        self.normalize(state, pod, scores)
        return np.fromiter((scores[node.name] for node in picked), np.int64, len(picked))

    def normalize(self, state: CycleState, pod: PodInfo, scores: dict[str, int]) -> None:
        ignored = state.data[_SCORE_KEY].per_node()[2]
        counted = [raw for name, raw in scores.items() if name not in ignored]
        if not counted:
            return
        low, high = min(counted), max(counted)
        for name, raw in scores.items():
            if name in ignored:
                scores[name] = 0
            elif high == 0:
                scores[name] = MAX_NODE_SCORE
            else:
                scores[name] = MAX_NODE_SCORE * (high + low - raw) // high


_checks: tuple[
    type[PreFilterPlugin], type[FilterPlugin], type[PreScorePlugin], type[ScorePlugin]
] = (PodTopologySpread, PodTopologySpread, PodTopologySpread, PodTopologySpread)
