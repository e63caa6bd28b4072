"""PodTopologySpread's ScheduleAnyway scores over the node table at once.

The per-node path (``PodTopologySpread.pre_score`` / ``score`` / ``normalize``) walks every
node of the cluster in Python for each pod it scores; with the system defaults that is every
Deployment pod. Here the same scores come from arrays kept on the table and redone only where
something moved:

* per (namespace, selector), the matching pods of each row (``Constraint.matching``), redone
  for the rows whose ``pods_changed`` stamp moved (a pod bound, assumed, removed);
* per topology key, each row's domain id (an id per label value; ``""`` is id 0, which a node
  without the label also counts under with the system defaults), redone for the rows filled
  again from a NodeInfo (``filled``: a node added or changed).

Then per constraint: which rows count (the key held when every key is required; the pod's
node affinity when ``nodeAffinityPolicy: Honor``; its tolerations when ``nodeTaintsPolicy:
Honor``), domain sums by ``np.bincount``, the domains of the feasible rows, the weights, the
rounded sums and the normalization, each as the per-node code computes it (same float
operations in the same order, so the same roundings). ``tests/scheduler/
test_spread_vector.py`` compares both over random clusters.

Not covered (the caller falls back to the per-node path): a cycle whose "all nodes" are not
the table's rows (a view built apart from the table). Pods with a nodeSelector or required
node affinity are covered, but their admission is asked node by node (as NodeAffinity's own
bulk filter does).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from taintplane.api.tolerations import TaintFilter, find_untolerated_taint
from taintplane.scheduler.framework import MAX_NODE_SCORE, CycleState
from taintplane.scheduler.nodeinfo import PodInfo
from taintplane.scheduler.plugins.node_affinity import NodeAffinity
from taintplane.scheduler.table import NodeTable

__all__ = ["KEPT_SELECTORS", "spread_scores"]

Ints = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

#: Selectors whose counts a table keeps (the least recently used beyond are dropped): one per
#: ReplicaSet being scheduled, and a rollout makes a new one.
KEPT_SELECTORS = 64
_COUNTS = "PodTopologySpread.counts"
_DOMAINS = "PodTopologySpread.domains"
_AFFINITY = NodeAffinity()


def matching_counts(table: NodeTable, pod: PodInfo, constraint: Any) -> Ints:
    """The pods of each row that ``constraint``'s selector matches in the pod's namespace."""
    key = (_COUNTS, pod.namespace, constraint.selector)
    kept = table.extra.pop(key, None)
    if kept is None:
        kept = np.zeros((table.size, 2), dtype=np.int64)  # [pods_changed seen, count]
        selectors = [k for k in table.extra if isinstance(k, tuple) and k[0] == _COUNTS]
        for old in selectors[: max(0, len(selectors) - KEPT_SELECTORS + 1)]:
            del table.extra[old]
    table.extra[key] = kept  # last: the most recently used
    stale = np.flatnonzero(kept[:, 0] != table.pods_changed)
    for i in stale.tolist():
        kept[i, 1] = constraint.matching(pod, table.nodes[i])
    kept[stale, 0] = table.pods_changed[stale]
    return kept[:, 1]


def domain_ids(table: NodeTable, key: str) -> tuple[Ints, Mask, int]:
    """Each row's domain id under ``key`` (a missing label reads as ``""``, id 0), whether the
    row has the label, and how many ids there are."""
    ids: dict[str, int] | None = table.memo.get((_DOMAINS, key))
    kept = table.extra.get((_DOMAINS, key))
    if ids is None or kept is None or len(ids) > 2 * table.size + 64:
        # First use, or ids of long-gone nodes outnumber the rows: number them afresh.
        ids = table.memo[(_DOMAINS, key)] = {"": 0}
        kept = table.extra[(_DOMAINS, key)] = np.zeros((table.size, 3), dtype=np.int64)
    stale = np.flatnonzero(kept[:, 0] != table.filled)
    for i in stale.tolist():
        value = table.nodes[i].labels.get(key)
        kept[i, 1] = 0 if value is None else ids.setdefault(value, len(ids))
        kept[i, 2] = value is not None
    kept[stale, 0] = table.filled[stale]
    return kept[:, 1], kept[:, 2].astype(bool), len(ids)


def _tolerated(pod: PodInfo, table: NodeTable) -> Mask:
    """Rows whose taints the pod tolerates (NoSchedule and NoExecute), once per taint group
    (a group differs only in ``timeAdded``, which tolerating does not read)."""
    by_group = np.array(
        [
            find_untolerated_taint(group, pod.tolerations, TaintFilter.DO_NOT_SCHEDULE) is None
            for group in table.groups
        ],
        dtype=bool,
    )
    return by_group[table.taint_group] if table.size else np.ones(0, dtype=bool)


def spread_scores(
    pod: PodInfo,
    constraints: Sequence[Any],
    require_all: bool,
    hostname_key: str,
    table: NodeTable,
    rows: Ints,
) -> Ints:
    """The normalized scores of the feasible rows ``rows``: as ``pre_score``, ``score`` and
    ``normalize`` give them over ``table.nodes`` (the cluster's nodes) and those rows."""
    per_key = [domain_ids(table, c.key) for c in constraints]
    row_ok = np.ones(table.size, dtype=bool)
    if require_all:  # a node lacking a key takes part in no constraint's domains
        for _, has, _ in per_key:
            row_ok &= has
    admitted: Mask | None = None
    if any(c.honor_affinity for c in constraints):
        admitted = _AFFINITY.filter_all(CycleState(), pod, table)
    tolerated = _tolerated(pod, table) if any(c.honor_taints for c in constraints) else None
    ignored = ~row_ok[rows]  # all False unless every key is required
    total = np.zeros(len(rows), dtype=np.float64)
    for constraint, (dom, has, size) in zip(constraints, per_key, strict=True):
        counted = row_ok.copy()
        if constraint.honor_affinity and admitted is not None:
            counted &= admitted
        seen_rows = ~ignored  # feasible rows: admitted by NodeAffinity's filter already
        if constraint.honor_taints and tolerated is not None:
            counted &= tolerated
            seen_rows &= tolerated[rows]
        matches = matching_counts(table, pod, constraint)
        in_counts = dom[counted]
        sums = np.bincount(in_counts, weights=matches[counted], minlength=size).astype(np.int64)
        present = np.bincount(in_counts, minlength=size) > 0
        seen = np.zeros(size, dtype=bool)
        seen[dom[rows][seen_rows]] = True
        if require_all:
            domains = int(np.count_nonzero(seen & present))
        elif constraint.key == hostname_key:
            domains = len(rows)  # upstream: the hostname domain is each feasible node
        else:
            domains = int(np.count_nonzero(seen))
        weight = math.log(domains + 2)
        value = np.where(seen & present, sums, 0)[dom[rows]]
        term = value * weight + (constraint.max_skew - 1)
        total += np.where(has[rows], term, 0.0)  # a missing key (defaults only) adds nothing
    raw = np.floor(total + 0.5).astype(np.int64)  # Go's math.Round
    raw[ignored] = 0
    return _normalize(raw, ignored)


def _normalize(raw: Ints, ignored: Mask) -> Ints:
    counted = raw[~ignored]
    if counted.size == 0:
        return raw
    low, high = int(counted.min()), int(counted.max())
    if high == 0:
        scores = np.full(raw.size, MAX_NODE_SCORE, dtype=np.int64)
    else:
        scores = MAX_NODE_SCORE * (high + low - raw) // high
    scores[ignored] = 0
    return scores
