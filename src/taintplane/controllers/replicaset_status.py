"""The ReplicaSet status (upstream's ``calculateStatus``): counts over the active pods,
``terminatingReplicas`` (on by default in 1.35), the ReplicaFailure condition, and when to
look again for pods that become available after ``minReadySeconds``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from taintplane.api.decoding import format_time
from taintplane.controllers.workloads import is_pod_available, is_pod_ready, pod_ready_since

#: A pod becomes available strictly after ``minReadySeconds`` (upstream compares with
#: ``Before``); the availability re-check runs this long after the boundary.
AVAILABILITY_SLACK = 0.001


def calculate_status(
    rs: dict[str, Any],
    active: list[dict[str, Any]],
    terminating: list[dict[str, Any]],
    error: Exception | None,
    now: datetime,
) -> dict[str, Any]:
    spec = rs.get("spec") or {}
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    min_ready = int(spec.get("minReadySeconds") or 0)
    labelled = ready = available = 0
    for pod in active:
        labels = pod["metadata"].get("labels") or {}
        if all(labels.get(k) == v for k, v in template_labels.items()):
            labelled += 1
        if is_pod_ready(pod):
            ready += 1
            if is_pod_available(pod, min_ready, now):
                available += 1
    counts = (len(active), labelled, ready, available, len(terminating))
    return status_from_counts(rs, counts, error, now)


def status_from_counts(
    rs: dict[str, Any],
    counts: tuple[int, int, int, int, int],
    error: Exception | None,
    now: datetime,
) -> dict[str, Any]:
    """The status from (replicas, fully labelled, ready, available, terminating), however
    they were counted (walked here, or kept by :mod:`.replicaset_pods`)."""
    spec = rs.get("spec") or {}
    replicas, labelled, ready, available, terminating = counts
    status: dict[str, Any] = {
        "replicas": replicas,
        "fullyLabeledReplicas": labelled,
        "readyReplicas": ready,
        "availableReplicas": available,
        "terminatingReplicas": terminating,
    }
    conditions = [
        c
        for c in (rs.get("status") or {}).get("conditions") or []
        if c.get("type") != "ReplicaFailure"
    ]
    failure = next(
        (
            c
            for c in (rs.get("status") or {}).get("conditions") or []
            if c.get("type") == "ReplicaFailure"
        ),
        None,
    )
    if error is not None:
        if failure is None:
            wanted = int(spec.get("replicas", 1))
            reason = "FailedCreate" if replicas < wanted else "FailedDelete"
            failure = {
                "type": "ReplicaFailure",
                "status": "True",
                "lastTransitionTime": format_time(now),
                "reason": reason,
                "message": str(error),
            }
        conditions.append(failure)
    if conditions:
        status["conditions"] = conditions
    return status


_COUNTS = ("fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration")


def omit_zero(status: dict[str, Any]) -> dict[str, Any]:
    """Go's ``omitempty``: zero counts are left out (``replicas`` and the pointer
    ``terminatingReplicas`` always appear)."""
    return {k: v for k, v in status.items() if not (k in _COUNTS and not v)}


def same_status(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return (
        all(old.get(k, 0) == new.get(k, 0) for k in ("replicas", *_COUNTS[:3]))
        and old.get("terminatingReplicas") == new.get("terminatingReplicas")
        and (old.get("conditions") or []) == (new.get("conditions") or [])
    )


def next_availability_check(pods: list[dict[str, Any]], min_ready: int, now: datetime) -> float:
    """Seconds until the first ready pod becomes available (``minReadySeconds`` if none)."""
    waits = []
    for pod in pods:
        since = pod_ready_since(pod)
        if since is not None:
            remaining = min_ready - (now - since).total_seconds()
            if remaining >= 0:
                waits.append(remaining + AVAILABILITY_SLACK)
    return min(waits, default=float(min_ready))
