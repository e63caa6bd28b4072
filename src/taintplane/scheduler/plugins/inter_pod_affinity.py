"""InterPodAffinity: required pod affinity and anti-affinity filter, preferred terms score.

A term matches a pod in its namespaces (the term's own, or those its namespaceSelector
selects, or the pod's namespace when it sets neither) whose labels its labelSelector matches
(no labelSelector matches nothing). It holds for a node by the node's value of its
``topologyKey``: the pods counted are those on nodes with the same value.

Filter, in upstream's order: every required affinity term needs a matching pod in the node's
domain (unless no pod matches any term and the pod matches its own terms: the first of a
group), the node must carry each term's topology key (``didn't match pod affinity rules``,
unresolvable); no pod matching a required anti-affinity term in the domain (``didn't match
pod anti-affinity rules``); no pod already placed whose required anti-affinity term matches
the incoming pod in the domain (``didn't satisfy existing pods anti-affinity rules``).

Score: preferred terms of the pod (+/- weight per matching pod in the domain), the existing
pods' required affinity (weight 1, upstream's hardPodAffinityWeight) and preferred terms
matching the incoming pod; normalized min..max to 0..100. Pods without any affinity skip
PreFilter and PreScore when no pod in the cluster has (anti-)affinity, as upstream; the
counts come from the node table's columns, so that check costs nothing per node.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from taintplane.api.selectors import LabelSelector, SelectorError, label_selector_from_dict
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
from taintplane.scheduler.plugins.pod_topology_spread import ALL_NODES_KEY
from taintplane.scheduler.table import TABLE_KEY, NodeTable

__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "InterPodAffinity",
]

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"
#: ``hardPodAffinityWeight``'s default: existing pods' required affinity, when scoring.
HARD_POD_AFFINITY_WEIGHT = 1
_PRE_FILTER_KEY = "PreFilter" + names.INTER_POD_AFFINITY
_PRE_SCORE_KEY = "PreScore" + names.INTER_POD_AFFINITY

NamespaceLabels = Callable[[str], Mapping[str, str]]
Pair = tuple[str, str]  # (topology key, value)


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    namespaces: frozenset[str]
    selector: LabelSelector | None  # None: matches nothing
    namespace_selector: LabelSelector | None  # None: selects no namespace
    topology_key: str
    weight: int = 0

    @classmethod
    def parse(cls, raw: Mapping[str, Any], namespace: str, weight: int = 0) -> AffinityTerm:
        raw_ns_selector = raw.get("namespaceSelector")
        listed = frozenset(str(n) for n in raw.get("namespaces") or [])
        raw_selector = raw.get("labelSelector")
        return cls(
            namespaces=listed or (frozenset({namespace}) if raw_ns_selector is None else listed),
            selector=None if raw_selector is None else label_selector_from_dict(raw_selector),
            namespace_selector=(
                None if raw_ns_selector is None else label_selector_from_dict(raw_ns_selector)
            ),
            topology_key=str(raw.get("topologyKey") or ""),
            weight=weight,
        )

    def matches(self, pod: PodInfo, namespace_labels: NamespaceLabels) -> bool:
        """``AffinityTerm.Matches``."""
        if self.selector is None:
            return False
        if pod.namespace not in self.namespaces and not (
            self.namespace_selector is not None
            and self.namespace_selector.matches(namespace_labels(pod.namespace))
        ):
            return False
        return self.selector.matches((pod.pod.get("metadata") or {}).get("labels"))


@dataclass(frozen=True, slots=True)
class Terms:
    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[AffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[AffinityTerm, ...] = ()


_NONE = Terms()


def terms_of(pod: PodInfo) -> Terms:
    """The pod's parsed terms, cached on it (pods without affinity share the empty ones)."""
    if not pod.has_pod_affinity:
        return _NONE
    if isinstance(pod.affinity_terms, Terms):
        return pod.affinity_terms
    affinity = (pod.pod.get("spec") or {}).get("affinity") or {}
    parsed = []
    for kind in ("podAffinity", "podAntiAffinity"):
        rules = affinity.get(kind) or {}
        try:
            required = tuple(
                AffinityTerm.parse(t, pod.namespace)
                for t in rules.get("requiredDuringSchedulingIgnoredDuringExecution") or []
            )
            preferred = tuple(
                AffinityTerm.parse(
                    t.get("podAffinityTerm") or {}, pod.namespace, int(t.get("weight") or 0)
                )
                for t in rules.get("preferredDuringSchedulingIgnoredDuringExecution") or []
            )
        except SelectorError:
            required, preferred = (), ()  # validation rejects such pods: nothing to honour
        parsed.append((required, preferred))
    terms = Terms(parsed[0][0], parsed[1][0], parsed[0][1], parsed[1][1])
    pod.affinity_terms = terms
    return terms


def _matches_all(terms: Iterable[AffinityTerm], pod: PodInfo, labels: NamespaceLabels) -> bool:
    """``podMatchesAllAffinityTerms``: false for no terms."""
    terms = tuple(terms)
    return bool(terms) and all(t.matches(pod, labels) for t in terms)


def _matches_any(terms: Iterable[AffinityTerm], pod: PodInfo, labels: NamespaceLabels) -> bool:
    return any(t.matches(pod, labels) for t in terms)


def _own_labels_changed(pod: PodInfo, old: PodInfo | None, new: PodInfo | None) -> bool:
    """The pending pod's own update (no other pending pod's counts): its labels changed, so
    it may now match its own affinity terms or no longer another pod's anti-affinity
    (kubernetes#135394); a new toleration, say, cannot help here."""
    if new is None or new.key != pod.key:
        return False
    if old is None:
        return True
    return _pod_labels(old) != _pod_labels(new)


def _pod_labels(pod: PodInfo) -> dict[str, str]:
    return dict((pod.pod.get("metadata") or {}).get("labels") or {})


def _add(counts: dict[Pair, int], key: str, node: NodeInfo, amount: int) -> None:
    value = node.labels.get(key)
    if value is not None:
        pair = (key, value)
        counts[pair] = counts.get(pair, 0) + amount


@dataclass
class _FilterState:
    terms: Terms
    affinity: dict[Pair, int]
    anti_affinity: dict[Pair, int]
    existing_anti_affinity: dict[Pair, int]
    pod_matches_own_terms: bool


def _rows_with(table: NodeTable | None, column: str, nodes: Sequence[NodeInfo]) -> list[NodeInfo]:
    """The nodes whose count in ``column`` is not zero, from the table when there is one."""
    if table is None:
        return [n for n in nodes if getattr(n, column)]
    return [table.nodes[int(i)] for i in np.flatnonzero(getattr(table, column))]


class InterPodAffinity:
    name = names.INTER_POD_AFFINITY
    reverse = False

    def queueing_hints(self) -> dict[str, QueueingHintFn]:
        """Upstream's EventsToRegister (pods added, relabelled or deleted; nodes added or
        relabelled: with queueing hints on no taint change) and hints: isSchedulableAfterPodChange
        and isSchedulableAfterNodeChange. Where this errs towards Queue, it says so; and a
        term's namespaceSelector reads the namespace's labels here, where upstream's pod hint
        passes none (so there such a term, unless empty, never matches a pod event)."""
        return {
            ClusterEvent.ASSIGNED_POD_ADD: self.schedulable_after_pod_add,
            ClusterEvent.ASSIGNED_POD_LABEL: self.schedulable_after_pod_update,
            ClusterEvent.ASSIGNED_POD_DELETE: self.schedulable_after_pod_delete,
            ClusterEvent.POD_UPDATE: _own_labels_changed,
            ClusterEvent.NODE_ADD: self.schedulable_after_node_change,
            ClusterEvent.NODE_LABEL: self.schedulable_after_node_change,
        }

    def schedulable_after_node_change(
        self, pod: PodInfo, old: NodeInfo | None, new: NodeInfo
    ) -> bool:
        """``isSchedulableAfterNodeChange``: only the topology keys of the pod's required terms
        matter. For an affinity term, a node added with the key, or one that gains the key or
        changes its value (a new domain may hold the pods it waits for). For an anti-affinity
        term, any node added (a node without the key always admits the pod; one with it may
        join a domain free of the pods it avoids), or one that loses the key or changes its
        value; gaining the key never helps. A pod with no required terms (kept out by other
        pods' anti-affinity) is not helped by a node event."""
        if not isinstance(new, NodeInfo) or not (old is None or isinstance(old, NodeInfo)):
            raise TypeError("unexpected object in isSchedulableAfterNodeChange")
        terms = terms_of(pod)
        for term in terms.required_affinity:
            key = term.topology_key
            if key in new.labels and (old is None or old.labels.get(key) != new.labels[key]):
                return True
        for term in terms.required_anti_affinity:
            key = term.topology_key
            if old is None or (key in old.labels and new.labels.get(key) != old.labels[key]):
                return True
        return False

    def schedulable_after_pod_add(self, pod: PodInfo, old: None, new: PodInfo) -> bool:
        """A placed pod that matches every required affinity term (one pod must match them
        all for the filter to pass)."""
        if not new.node_name:
            return False  # an unscheduled pod counts for nobody's terms
        return _matches_all(terms_of(pod).required_affinity, new, self.namespace_labels)

    def schedulable_after_pod_update(self, pod: PodInfo, old: PodInfo, new: PodInfo) -> bool:
        """A placed pod relabelled so that it now matches every required affinity term, or
        no longer matches the required anti-affinity. Upstream reads anti-affinity as "all
        terms" in 1.35 (fixed later, kubernetes#139161): one term matching is enough to keep
        the pod out, so here it is "any"."""
        if not old.node_name or not new.node_name:
            return False  # an unscheduled pod counts for nobody's terms
        terms, labels = terms_of(pod), self.namespace_labels
        if not _matches_all(terms.required_affinity, old, labels) and _matches_all(
            terms.required_affinity, new, labels
        ):
            return True
        return _matches_any(terms.required_anti_affinity, old, labels) and not _matches_any(
            terms.required_anti_affinity, new, labels
        )

    def schedulable_after_pod_delete(self, pod: PodInfo, old: PodInfo, new: None) -> bool:
        """A placed pod deleted that the pod's required anti-affinity avoided, or whose own
        required anti-affinity avoided the pod (kubernetes#135325). Erring towards Queue,
        also one its required affinity terms match (upstream does not: kubernetes#141354, a
        pod that matches its own terms may pass once the last such pod is gone). A pending
        pod deleted (one nominated, say) counts for nobody's terms."""
        if not old.node_name:
            return False
        terms, labels = terms_of(pod), self.namespace_labels
        if old.has_required_anti_affinity and _matches_any(
            terms_of(old).required_anti_affinity, pod, labels
        ):
            return True
        return any(
            t.matches(old, labels) for t in terms.required_affinity + terms.required_anti_affinity
        )

    def __init__(self, namespace_labels: NamespaceLabels | None = None) -> None:
        self.namespace_labels: NamespaceLabels = namespace_labels or (lambda _: {})

    # ---- filtering -------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        terms = terms_of(pod)
        labels = self.namespace_labels
        existing: dict[Pair, int] = {}
        for node in _rows_with(state.data.get(TABLE_KEY), "anti_affinity_pods", nodes):
            for other in node.pods.values():
                if other.has_required_anti_affinity:
                    for term in terms_of(other).required_anti_affinity:
                        if term.matches(pod, labels):
                            _add(existing, term.topology_key, node, 1)
        if not existing and not terms.required_affinity and not terms.required_anti_affinity:
            return Status(Code.SKIP)
        affinity: dict[Pair, int] = {}
        anti_affinity: dict[Pair, int] = {}
        if terms.required_affinity or terms.required_anti_affinity:
            for node in nodes:
                for other in node.pods.values():
                    if _matches_all(terms.required_affinity, other, labels):
                        for term in terms.required_affinity:
                            _add(affinity, term.topology_key, node, 1)
                    for term in terms.required_anti_affinity:
                        if term.matches(other, labels):
                            _add(anti_affinity, term.topology_key, node, 1)
        state.data[_PRE_FILTER_KEY] = _FilterState(
            terms,
            affinity,
            anti_affinity,
            existing,
            _matches_all(terms.required_affinity, pod, labels),
        )
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s: _FilterState = state.data[_PRE_FILTER_KEY]
        if not _satisfies_affinity(s, node):
            return Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
        for term in s.terms.required_anti_affinity:
            value = node.labels.get(term.topology_key)
            if value is not None and s.anti_affinity.get((term.topology_key, value), 0) > 0:
                return Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
        if s.existing_anti_affinity and any(
            s.existing_anti_affinity.get(pair, 0) > 0 for pair in node.labels.items()
        ):
            return Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
        return None

    # ---- scoring ---------------------------------------------------------------------------

    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        terms = terms_of(pod)
        own = bool(terms.preferred_affinity or terms.preferred_anti_affinity)
        table: NodeTable | None = state.data.get(TABLE_KEY)
        # Unless the pod prefers something itself, only nodes with pods with affinity matter.
        if own:
            every: Sequence[NodeInfo] = state.data.get(ALL_NODES_KEY, nodes)
        else:
            every = _rows_with(table, "affinity_pods", nodes)
        labels = self.namespace_labels
        scores: dict[str, dict[str, int]] = {}

        def process(term: AffinityTerm, weight: int, target: PodInfo, node: NodeInfo) -> None:
            if term.matches(target, labels):
                value = node.labels.get(term.topology_key)
                if value is not None:
                    by_value = scores.setdefault(term.topology_key, {})
                    by_value[value] = by_value.get(value, 0) + weight

        for node in every:
            if not node.labels:
                continue
            for other in node.pods.values():
                if not own and not other.has_pod_affinity:
                    continue
                theirs = terms_of(other)
                for term in terms.preferred_affinity:
                    process(term, term.weight, other, node)
                for term in terms.preferred_anti_affinity:
                    process(term, -term.weight, other, node)
                for term in theirs.required_affinity:
                    process(term, HARD_POD_AFFINITY_WEIGHT, pod, node)
                for term in theirs.preferred_affinity:
                    process(term, term.weight, pod, node)
                for term in theirs.preferred_anti_affinity:
                    process(term, -term.weight, pod, node)
        if not scores:
            return Status(Code.SKIP)
        state.data[_PRE_SCORE_KEY] = scores
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        scores: dict[str, dict[str, int]] = state.data[_PRE_SCORE_KEY]
        return sum(
            by_value.get(node.labels[key], 0)
            for key, by_value in scores.items()
            if key in node.labels
        )

    def normalize(self, state: CycleState, pod: PodInfo, scores: dict[str, int]) -> None:
        if not scores:
            return
        low, high = min(scores.values()), max(scores.values())
        for name, raw in scores.items():
            scores[name] = int(MAX_NODE_SCORE * (raw - low) / (high - low)) if high > low else 0


def _satisfies_affinity(s: _FilterState, node: NodeInfo) -> bool:
    """``satisfyPodAffinity``: every term's topology key on the node and a matching pod in
    each domain, or the first pod of a group that matches its own terms."""
    pods_exist = True
    for term in s.terms.required_affinity:
        value = node.labels.get(term.topology_key)
        if value is None:
            return False
        if s.affinity.get((term.topology_key, value), 0) <= 0:
            pods_exist = False
    return pods_exist or (not s.affinity and s.pod_matches_own_terms)


_checks: tuple[
    type[PreFilterPlugin], type[FilterPlugin], type[PreScorePlugin], type[ScorePlugin]
] = (InterPodAffinity, InterPodAffinity, InterPodAffinity, InterPodAffinity)
