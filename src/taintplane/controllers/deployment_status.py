"""The Deployment controller's status (upstream's ``syncDeploymentStatus``,
``syncRolloutStatus`` and ``calculateStatus``) and revision history cleanup."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from taintplane.client import ApiError, resource
from taintplane.controllers import deploymentutil as du

if TYPE_CHECKING:
    from taintplane.controllers.deployment import DeploymentController

REPLICASETS = resource("apps", "v1", "replicasets")
RS = dict[str, Any]


def omit_zero(status: dict[str, Any]) -> dict[str, Any]:
    """Go's ``omitempty`` on DeploymentStatus: zero counts are left out."""
    counts = (
        "observedGeneration",
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
        "unavailableReplicas",
    )
    return {k: v for k, v in status.items() if v is not None and not (k in counts and not v)}


# ---- cleanup and status --------------------------------------------------------------------


async def cleanup(c: DeploymentController, d: dict[str, Any], old: list[RS]) -> None:
    """Delete the oldest empty ReplicaSets beyond ``revisionHistoryLimit``."""
    limit = (d.get("spec") or {}).get("revisionHistoryLimit")
    if limit is None:
        return
    alive = [rs for rs in old if not rs["metadata"].get("deletionTimestamp")]
    excess = len(alive) - int(limit)
    if excess <= 0:
        return
    ordered = sorted(du.by_creation(alive), key=du.revision)
    for rs in ordered[:excess]:
        meta = rs["metadata"]
        if (
            du.status_count(rs, "replicas")
            or du.replicas(rs)
            or int(meta.get("generation") or 0) > du.status_count(rs, "observedGeneration")
        ):
            continue
        try:
            await c.client.delete(REPLICASETS, meta["name"], meta["namespace"])
        except ApiError as error:
            if error.code != 404:
                raise


def calculate_status(
    d: dict[str, Any], all_rss: Sequence[RS | None], new: RS | None, now: datetime
) -> dict[str, Any]:
    rss = [rs for rs in all_rss if rs is not None]
    available = du.total(rss, "availableReplicas")
    old_status = d.get("status") or {}
    status: dict[str, Any] = {
        "observedGeneration": int(d["metadata"].get("generation") or 0),
        "replicas": du.total(rss, "replicas"),
        "updatedReplicas": du.status_count(new, "replicas"),
        "readyReplicas": du.total(rss, "readyReplicas"),
        "availableReplicas": available,
        "unavailableReplicas": max(0, du.total(rss) - available),
    }
    if all("terminatingReplicas" in (rs.get("status") or {}) for rs in rss):
        status["terminatingReplicas"] = du.total(rss, "terminatingReplicas")
    if old_status.get("collisionCount") is not None:
        status["collisionCount"] = old_status["collisionCount"]
    if old_status.get("conditions"):
        status["conditions"] = copy.deepcopy(old_status["conditions"])
    if available >= du.replicas(d) - du.max_unavailable(d):
        condition = du.new_condition(
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
            now,
        )
    else:
        condition = du.new_condition(
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
            now,
        )
    du.set_condition(status, condition)
    return status


async def sync_deployment_status(
    c: DeploymentController, d: dict[str, Any], all_rss: Sequence[RS | None], new: RS | None
) -> None:
    status = calculate_status(d, all_rss, new, c.clock.now())
    if omit_zero(status) != omit_zero(d.get("status") or {}):
        d["status"] = status
        await c.update_status(d)


async def sync_rollout_status(
    c: DeploymentController, d: dict[str, Any], all_rss: Sequence[RS | None], new: RS | None
) -> None:
    """The status with the Progressing condition brought up to date (``syncRolloutStatus``)."""
    now = c.clock.now()
    status = calculate_status(d, all_rss, new, now)
    if not du.has_progress_deadline(d):
        du.remove_condition(status, "Progressing")
    current = du.get_condition(d.get("status") or {}, "Progressing")
    complete = (
        status.get("replicas", 0) == status.get("updatedReplicas", 0)
        and current is not None
        and current.get("reason") == "NewReplicaSetAvailable"
    )
    subject = "Deployment" if new is None else "ReplicaSet"
    name = d["metadata"]["name"] if new is None else new["metadata"]["name"]
    if du.has_progress_deadline(d) and not complete:
        if du.deployment_complete(d, status):
            message = f'{subject} "{name}" has successfully progressed.'
            du.set_condition(
                status,
                du.new_condition("Progressing", "True", "NewReplicaSetAvailable", message, now),
            )
        elif du.deployment_progressing(d, status):
            message = f'{subject} "{name}" is progressing.'
            condition = du.new_condition("Progressing", "True", "ReplicaSetUpdated", message, now)
            if current is not None:
                if current.get("status") == "True":
                    condition["lastTransitionTime"] = current.get("lastTransitionTime")
                du.remove_condition(status, "Progressing")
            du.set_condition(status, condition)
        elif du.deployment_timed_out(d, status, now):
            message = f'{subject} "{name}" has timed out progressing.'
            du.set_condition(
                status,
                du.new_condition("Progressing", "False", "ProgressDeadlineExceeded", message, now),
            )
    failure = _replica_failure(all_rss, new)
    if failure is not None:
        du.set_condition(status, failure)
    else:
        du.remove_condition(status, "ReplicaFailure")
    if omit_zero(status) == omit_zero(d.get("status") or {}):
        requeue_stuck(c, d, status)
        return
    d["status"] = status
    await c.update_status(d)


def _replica_failure(all_rss: Sequence[RS | None], new: RS | None) -> dict[str, Any] | None:
    """The new ReplicaSet's ReplicaFailure condition (else an old one's), as the
    Deployment's."""
    ordered = [new, *[rs for rs in all_rss if rs is not new]]
    for rs in ordered:
        if rs is None:
            continue
        condition = du.get_condition(rs.get("status") or {}, "ReplicaFailure")
        if condition is not None:
            stamp = condition.get("lastTransitionTime")
            return {
                "type": "ReplicaFailure",
                "status": condition.get("status"),
                "lastUpdateTime": stamp,
                "lastTransitionTime": stamp,
                "reason": condition.get("reason"),
                "message": condition.get("message"),
            }
    return None


def requeue_stuck(
    c: DeploymentController, d: dict[str, Any], status: dict[str, Any]
) -> float | None:
    """Nothing changed: look again when the progress deadline passes (upstream's
    ``requeueStuckDeployment``). The seconds until then, 0 for a rate-limited requeue now, None
    when no progress is being estimated: no deadline, a complete rollout, or one already timed
    out. A Deployment whose Progressing reason is still NewReplicaSetAvailable but that lost
    pods is never marked timed out (upstream issue 106054), so past its deadline it is requeued
    again and again, as often as the queue's rate limiter lets it (10 a second)."""
    current = du.get_condition(d.get("status") or {}, "Progressing")
    if not du.has_progress_deadline(d) or current is None:
        return None
    if du.deployment_complete(d, status) or current.get("reason") == "ProgressDeadlineExceeded":
        return None
    deadline = du.progress_deadline(d, current)
    if deadline is None:
        return None
    after = (deadline - c.clock.now()).total_seconds()
    key = f"{d['metadata']['namespace']}/{d['metadata']['name']}"
    if after < 1:
        c.queue.retry(key)
        return 0.0
    # A second more, as upstream, so the sync lands after the deadline rather than on it
    # (timing out needs the deadline strictly before now).
    c.queue.add_after(key, after + 1)
    return after
