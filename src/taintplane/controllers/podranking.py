"""Which pods a ReplicaSet deletes first when it scales down (upstream's
``ActivePodsWithRanks``), in upstream's order of preference:

unscheduled before scheduled; Pending before Unknown before Running; not ready before ready;
lower ``controller.kubernetes.io/pod-deletion-cost``; more related pods on the same node; more
recently ready; more container restarts; more recently created. Times are compared in
logarithmic buckets of their age (``LogarithmicScaleDown``, on by default), ties broken by UID,
so pods of similar age are picked evenly instead of always the newest.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from datetime import datetime
from typing import Any

from taintplane.api.decoding import parse_timestamp
from taintplane.controllers.workloads import is_pod_active, is_pod_ready

__all__ = ["DELETION_COST", "pods_to_delete"]

DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_PHASE_ORDER = {"Pending": 0, "Unknown": 1, "Running": 2}


def _deletion_cost(pod: dict[str, Any]) -> int:
    value = ((pod["metadata"].get("annotations") or {}).get(DELETION_COST)) or "0"
    try:
        return int(value)
    except ValueError:
        return 0  # an invalid cost counts as none, as upstream's helper treats it


def _restarts(pod: dict[str, Any]) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return max((int(s.get("restartCount") or 0) for s in statuses), default=0)


def _ready_time(pod: dict[str, Any]) -> datetime | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            return parse_timestamp(condition.get("lastTransitionTime"))
    return None


def _log_rank(moment: datetime, now: datetime) -> int:
    nanos = (now - moment).total_seconds() * 1e9
    return int(math.log2(nanos)) if nanos > 0 else -1


def _compare_times(
    a: datetime | None, b: datetime | None, uid_a: str, uid_b: str, now: datetime
) -> int:
    """-1 when ``a`` goes first: the later time, zero times last; bucketed by log2 of age."""
    if a is None or b is None:
        if a is None and b is None:
            return 0
        return -1 if a is None else 1
    diff = _log_rank(a, now) - _log_rank(b, now)
    if diff == 0:
        return -1 if uid_a < uid_b else (1 if uid_a > uid_b else 0)
    return -1 if diff < 0 else 1


def pods_to_delete(
    pods: list[dict[str, Any]], related: list[dict[str, Any]], count: int, now: datetime
) -> list[dict[str, Any]]:
    """The ``count`` pods to delete among ``pods``; ``related`` are the active pods of every
    ReplicaSet with the same controller (a Deployment's), which make up a pod's rank."""
    if count >= len(pods):
        return list(pods)
    on_node = Counter(
        (p.get("spec") or {}).get("nodeName", "") for p in related if is_pod_active(p)
    )

    def rank(pod: dict[str, Any]) -> int:
        return on_node[(pod.get("spec") or {}).get("nodeName", "")]

    def compare(a: dict[str, Any], b: dict[str, Any]) -> int:
        node_a, node_b = (
            (a.get("spec") or {}).get("nodeName"),
            (b.get("spec") or {}).get("nodeName"),
        )
        if bool(node_a) != bool(node_b):
            return -1 if not node_a else 1
        phase_a = _PHASE_ORDER.get((a.get("status") or {}).get("phase", ""), 0)
        phase_b = _PHASE_ORDER.get((b.get("status") or {}).get("phase", ""), 0)
        if phase_a != phase_b:
            return -1 if phase_a < phase_b else 1
        ready_a, ready_b = is_pod_ready(a), is_pod_ready(b)
        if ready_a != ready_b:
            return -1 if not ready_a else 1
        cost_a, cost_b = _deletion_cost(a), _deletion_cost(b)
        if cost_a != cost_b:
            return -1 if cost_a < cost_b else 1
        rank_a, rank_b = rank(a), rank(b)
        if rank_a != rank_b:
            return -1 if rank_a > rank_b else 1
        uid_a, uid_b = str(a["metadata"].get("uid", "")), str(b["metadata"].get("uid", ""))
        if ready_a and ready_b:
            time_a, time_b = _ready_time(a), _ready_time(b)
            if time_a != time_b:
                return _compare_times(time_a, time_b, uid_a, uid_b, now)
        restarts_a, restarts_b = _restarts(a), _restarts(b)
        if restarts_a != restarts_b:
            return -1 if restarts_a > restarts_b else 1
        created_a = parse_timestamp(a["metadata"].get("creationTimestamp"))
        created_b = parse_timestamp(b["metadata"].get("creationTimestamp"))
        if created_a != created_b:
            return _compare_times(created_a, created_b, uid_a, uid_b, now)
        return 0

    return sorted(pods, key=functools.cmp_to_key(compare))[:count]
