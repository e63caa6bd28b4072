"""The Deployment controller's rollout steps (upstream's ``sync.go``, ``rolling.go``,
``recreate.go`` and ``progress.go``) over a Deployment dict and its claimed ReplicaSets."""

from __future__ import annotations

import contextlib
import copy
from typing import TYPE_CHECKING, Any

from taintplane.client import ApiError, resource
from taintplane.controllers import deploymentutil as du
from taintplane.controllers.deployment_status import (
    cleanup,
    sync_deployment_status,
    sync_rollout_status,
)
from taintplane.controllers.workloads import deep_copy, new_controller_ref

if TYPE_CHECKING:
    from taintplane.controllers.deployment import DeploymentController

REPLICASETS = resource("apps", "v1", "replicasets")
RS = dict[str, Any]


# ---- the new ReplicaSet --------------------------------------------------------------------


def split(d: dict[str, Any], rs_list: list[RS]) -> tuple[RS | None, list[RS]]:
    """The ReplicaSet whose template is the Deployment's (the oldest such) and the rest."""
    template = (d.get("spec") or {}).get("template") or {}
    new = next(
        (
            rs
            for rs in du.by_creation(rs_list)
            if du.equal_ignore_hash((rs.get("spec") or {}).get("template") or {}, template)
        ),
        None,
    )
    return new, [rs for rs in rs_list if rs is not new]


async def all_replicasets(
    c: DeploymentController, d: dict[str, Any], rs_list: list[RS], create: bool
) -> tuple[RS | None, list[RS]]:
    """``getAllReplicaSetsAndSyncRevision``: the new ReplicaSet (created when asked) with its
    revision brought up to date, and the old ones."""
    existing, old = split(d, rs_list)
    new_revision = max((du.revision(rs) for rs in old), default=0) + 1
    now = c.clock.now()
    status = d.setdefault("status", {})
    if existing is not None:
        rs = deep_copy(existing)
        annotated = du.set_new_rs_annotations(d, rs, new_revision, exists=True)
        min_ready = (d.get("spec") or {}).get("minReadySeconds", 0)
        if annotated or (rs.get("spec") or {}).get("minReadySeconds", 0) != min_ready:
            rs["spec"]["minReadySeconds"] = min_ready
            return c.wrote_replicaset(await c.client.update(REPLICASETS, rs)), old
        needs_update = _set_revision(d, rs["metadata"]["annotations"].get(du.REVISION, ""))
        if du.has_progress_deadline(d) and du.get_condition(status, "Progressing") is None:
            message = f'Found new replica set "{rs["metadata"]["name"]}"'
            du.set_condition(
                status,
                du.new_condition("Progressing", "True", "FoundNewReplicaSet", message, now),
            )
            needs_update = True
        if needs_update:
            await c.update_status(d)
        return rs, old
    if not create:
        return None, old
    return await _create_new(c, d, old, new_revision), old


def _set_revision(d: dict[str, Any], revision: str) -> bool:
    annotations = d["metadata"].setdefault("annotations", {})
    if annotations.get(du.REVISION) == revision:
        return False
    annotations[du.REVISION] = revision
    return True


async def _create_new(
    c: DeploymentController, d: dict[str, Any], old: list[RS], new_revision: int
) -> RS | None:
    spec = d.get("spec") or {}
    meta = d["metadata"]
    status = d.setdefault("status", {})
    template = copy.deepcopy(spec.get("template") or {})
    pod_hash = du.compute_hash(template, status.get("collisionCount"))
    template.setdefault("metadata", {})
    template["metadata"]["labels"] = {
        **(template["metadata"].get("labels") or {}),
        du.HASH_LABEL: pod_hash,
    }
    selector = copy.deepcopy(spec.get("selector") or {})
    selector["matchLabels"] = {**(selector.get("matchLabels") or {}), du.HASH_LABEL: pod_hash}
    rs: RS = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{meta['name']}-{pod_hash}",
            "namespace": meta["namespace"],
            "ownerReferences": [new_controller_ref(d)],
            "labels": dict(template["metadata"]["labels"]),
        },
        "spec": {
            "replicas": 0,
            "minReadySeconds": spec.get("minReadySeconds", 0),
            "selector": selector,
            "template": template,
        },
    }
    count = du.new_rs_new_replicas(d, [*old, rs], rs)
    rs["spec"]["replicas"] = count
    du.set_new_rs_annotations(d, rs, new_revision, exists=False)
    now = c.clock.now()
    name = rs["metadata"]["name"]
    already = False
    try:
        created: RS = await c.client.create(REPLICASETS, rs, namespace=meta["namespace"])
    except ApiError as error:
        if error.code == 409 and error.reason == "AlreadyExists":
            found = c.replicasets.get(f"{meta['namespace']}/{name}")
            ref = None if found is None else _controller_uid(found)
            if (
                found is not None
                and ref == meta["uid"]
                and du.equal_ignore_hash(
                    (found.get("spec") or {}).get("template") or {}, spec.get("template") or {}
                )
            ):
                created, already = found, True
            else:
                # Another template hashed to this name: try the next collision count.
                status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
                await c.update_status(d)
                raise
        elif "is being terminated" in str(error):
            raise
        else:
            message = f'Failed to create new replica set "{name}": {error}'
            if du.has_progress_deadline(d):
                du.set_condition(
                    status,
                    du.new_condition("Progressing", "False", "ReplicaSetCreateError", message, now),
                )
                with contextlib.suppress(ApiError):
                    await c.update_status(d)
            c.recorder.event(d, "Warning", "ReplicaSetCreateError", message)
            raise
    if not already and count > 0:
        c.recorder.event(
            d, "Normal", "ScalingReplicaSet", f"Scaled up replica set {name} from 0 to {count}"
        )
    needs_update = _set_revision(d, str(new_revision))
    if not already and du.has_progress_deadline(d):
        message = f'Created new replica set "{name}"'
        du.set_condition(
            status, du.new_condition("Progressing", "True", "NewReplicaSetCreated", message, now)
        )
        needs_update = True
    if needs_update:
        await c.update_status(d)
    return created


def _controller_uid(obj: RS) -> str | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid"))
    return None


# ---- rolling update ------------------------------------------------------------------------


async def rollout_rolling(c: DeploymentController, d: dict[str, Any], rs_list: list[RS]) -> None:
    new, old = await all_replicasets(c, d, rs_list, create=True)
    assert new is not None
    all_rss = [*old, new]
    scaled_up = await _reconcile_new(c, d, all_rss, new)
    if scaled_up:
        await sync_rollout_status(c, d, all_rss, new)
        return
    if await _reconcile_old(c, d, all_rss, du.active(old), new):
        await sync_rollout_status(c, d, all_rss, new)
        return
    if du.deployment_complete(d, d.get("status") or {}):
        await cleanup(c, d, old)
    await sync_rollout_status(c, d, all_rss, new)


async def _reconcile_new(
    c: DeploymentController, d: dict[str, Any], all_rss: list[RS], new: RS
) -> bool:
    want = du.replicas(d)
    if du.replicas(new) == want:
        return False
    if du.replicas(new) > want:
        return (await c.scale_and_record(new, want, d))[0]
    return (await c.scale_and_record(new, du.new_rs_new_replicas(d, list(all_rss), new), d))[0]


async def _reconcile_old(
    c: DeploymentController, d: dict[str, Any], all_rss: list[RS], old: list[RS], new: RS
) -> bool:
    if du.total(old) == 0:
        return False
    min_available = du.replicas(d) - du.max_unavailable(d)
    new_unavailable = du.replicas(new) - du.status_count(new, "availableReplicas")
    max_scaled_down = du.total(all_rss) - min_available - new_unavailable
    if max_scaled_down <= 0:
        return False
    # Old pods that are not available go first: they cost no availability.
    old = du.by_creation(old)
    cleaned = 0
    for i, rs in enumerate(old):
        if cleaned >= max_scaled_down:
            break
        unavailable = du.replicas(rs) - du.status_count(rs, "availableReplicas")
        if du.replicas(rs) == 0 or unavailable <= 0:
            continue
        count = min(max_scaled_down - cleaned, unavailable)
        _, old[i] = await c.scale_and_record(rs, du.replicas(rs) - count, d)
        cleaned += count
    # Then available ones, as far as minAvailable allows. A ReplicaSet just scaled down still
    # reports the pods it is deleting as available until its controller sees them go; counting
    # at most spec.replicas of each keeps a stale status from scaling down twice (upstream
    # sums the statuses as they are and can briefly dip below minAvailable).
    available = sum(
        min(du.replicas(rs), du.status_count(rs, "availableReplicas")) for rs in [*old, new]
    )
    scaled = 0
    if available > min_available:
        budget = available - min_available
        for rs in du.by_creation(old):
            if scaled >= budget:
                break
            if du.replicas(rs) == 0:
                continue
            count = min(du.replicas(rs), budget - scaled)
            await c.scale_and_record(rs, du.replicas(rs) - count, d)
            scaled += count
    return cleaned + scaled > 0


# ---- recreate ------------------------------------------------------------------------------


async def rollout_recreate(
    c: DeploymentController,
    d: dict[str, Any],
    rs_list: list[RS],
    pods_by_rs: dict[str, list[dict[str, Any]]],
) -> None:
    new, old = await all_replicasets(c, d, rs_list, create=False)
    all_rss: list[RS | None] = [*old, new]
    scaled_down = False
    for rs in du.active(old):
        scaled_down = (await c.scale_and_record(rs, 0, d))[0] or scaled_down
    if scaled_down or _old_pods_running(new, old, pods_by_rs):
        await sync_rollout_status(c, d, all_rss, new)
        return
    if new is None:
        new, old = await all_replicasets(c, d, rs_list, create=True)
        all_rss = [*old, new]
    assert new is not None
    await c.scale_and_record(new, du.replicas(d), d)
    if du.deployment_complete(d, d.get("status") or {}):
        await cleanup(c, d, old)
    await sync_rollout_status(c, d, all_rss, new)


def _old_pods_running(
    new: RS | None, old: list[RS], pods_by_rs: dict[str, list[dict[str, Any]]]
) -> bool:
    if du.total(old, "replicas") > 0:
        return True
    new_uid = None if new is None else new["metadata"]["uid"]
    return any(
        (pod.get("status") or {}).get("phase") not in ("Failed", "Succeeded")
        for uid, pods in pods_by_rs.items()
        if uid != new_uid
        for pod in pods
    )


# ---- scaling (a changed spec.replicas, or a paused Deployment) -----------------------------


async def scale_sync(c: DeploymentController, d: dict[str, Any], rs_list: list[RS]) -> None:
    new, old = await all_replicasets(c, d, rs_list, create=False)
    await _scale(c, d, new, old)
    if (d.get("spec") or {}).get("paused"):
        await cleanup(c, d, old)
    await sync_deployment_status(c, d, [*old, new], new)


async def _scale(c: DeploymentController, d: dict[str, Any], new: RS | None, old: list[RS]) -> None:
    want = du.replicas(d)
    candidates = du.active([*old, new])
    if len(candidates) <= 1:
        # One active ReplicaSet (or none: the newest) takes the whole size.
        target = candidates[0] if candidates else new
        if target is None and old:
            target = du.by_creation(old)[-1]
        if target is not None and du.replicas(target) != want:
            await c.scale_and_record(target, want, d)
        return
    if du.is_saturated(d, new):
        for rs in du.active(old):
            await c.scale_and_record(rs, 0, d)
        return
    if not du.is_rolling(d):
        return
    # Spread the change over the active ReplicaSets in proportion to their sizes.
    allowed = want + du.max_surge(d) if want > 0 else 0
    to_add = allowed - du.total(candidates)
    if to_add > 0:
        ordered, operation = du.by_size_newer(candidates), "up"
    elif to_add < 0:
        ordered, operation = du.by_size_older(candidates), "down"
    else:
        ordered, operation = candidates, ""
    sizes: dict[str, int] = {}
    added = 0
    for rs in ordered:
        share = du.proportion(rs, d, to_add, added) if to_add else 0
        sizes[rs["metadata"]["name"]] = du.replicas(rs) + share
        added += share
    if to_add:
        first = ordered[0]["metadata"]["name"]
        sizes[first] = max(0, sizes[first] + to_add - added)
    for rs in ordered:
        await c.scale(rs, sizes[rs["metadata"]["name"]], d, operation)


async def sync_status_only(c: DeploymentController, d: dict[str, Any], rs_list: list[RS]) -> None:
    new, old = await all_replicasets(c, d, rs_list, create=False)
    await sync_deployment_status(c, d, [*old, new], new)
