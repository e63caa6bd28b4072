"""The Deployment controller: owns one ReplicaSet per pod template, named
``<deployment>-<pod-template-hash>``, and moves replicas from the old ones to the new one.

It follows upstream's ``deployment`` controller: a sync adopts and releases ReplicaSets, marks
pauses, treats a changed ``spec.replicas`` as a proportional scaling of every active
ReplicaSet, otherwise rolls out by the strategy (``RollingUpdate`` within maxSurge and
maxUnavailable, or ``Recreate``), then writes the status with the ``Available`` and
``Progressing`` conditions. The rollout steps are in :mod:`.deployment_rollout`.
"""

from __future__ import annotations

import logging
from typing import Any

from taintplane.api.selectors import LabelSelector, label_selector_from_dict
from taintplane.client import ApiError, Client, resource
from taintplane.client.events import EventRecorder
from taintplane.client.informer import object_key
from taintplane.client.shared import SharedInformers
from taintplane.client.workqueue import WorkQueue
from taintplane.clock import Clock
from taintplane.controllers import deployment_rollout as rollout
from taintplane.controllers import deployment_status as dstatus
from taintplane.controllers import deploymentutil as du
from taintplane.controllers.own_writes import OwnWrites
from taintplane.controllers.workloads import (
    OWNER_INDEX,
    claim,
    controller_ref,
    deep_copy,
    owner_index,
)

__all__ = ["DeploymentController"]

log = logging.getLogger(__name__)

DEPLOYMENTS = resource("apps", "v1", "deployments")
REPLICASETS = resource("apps", "v1", "replicasets")
COMPONENT = "deployment-controller"


class DeploymentController:
    def __init__(self, client: Client, clock: Clock, informers: SharedInformers) -> None:
        self.client = client
        self.clock = clock
        self.deployments = informers.informer("apps", "v1", "deployments")
        self.replicasets = informers.informer("apps", "v1", "replicasets")
        self.pods = informers.pods
        for informer in (self.pods, self.replicasets):
            if not informer.has_index(OWNER_INDEX):
                informer.add_index(OWNER_INDEX, owner_index)
        self.recorder = EventRecorder(client, clock, COMPONENT)
        self.queue = WorkQueue(clock, name="deployment")
        #: Our writes the informers have not shown yet: a sync reads them instead of the
        #: older cached copies (so it neither writes again nor meets a 409).
        self.own_writes = OwnWrites()
        self.rs_writes = OwnWrites()
        enqueue = self._enqueue
        self.deployments.add_handlers(enqueue, lambda _old, new: enqueue(new), enqueue)
        self.replicasets.add_handlers(self._rs_added, self._rs_updated, self._rs_deleted)
        self.pods.add_handlers(on_delete=self._pod_deleted)

    async def run(self) -> None:
        await self.queue.run(self._sync_or_requeue)

    async def _sync_or_requeue(self, key: str) -> None:
        """A conflict means our cache was behind a write, a 404 that the Deployment (or its
        ReplicaSet) was deleted under the sync: try again shortly, without the error log
        other failures get (upstream's handleErr logs a retried error at V(2) only; the
        next sync finds the Deployment gone from the cache and stops)."""
        try:
            await self.sync(key)
        except ApiError as error:
            if error.code not in (404, 409):
                raise
            self.queue.retry(key)

    # ---- informer callbacks ----------------------------------------------------------------

    def _enqueue(self, d: dict[str, Any]) -> None:
        self.queue.add(object_key(d))

    def _owner(self, rs: dict[str, Any]) -> dict[str, Any] | None:
        ref = controller_ref(rs)
        if ref is None or ref.get("kind") != "Deployment":
            return None
        d = self.deployments.get(f"{rs['metadata']['namespace']}/{ref.get('name')}")
        if d is None or d["metadata"].get("uid") != ref.get("uid"):
            return None
        return d

    def _enqueue_matching(self, rs: dict[str, Any]) -> None:
        labels = rs["metadata"].get("labels") or {}
        for d in self.deployments.cache.values():
            if d["metadata"].get("namespace") != rs["metadata"].get("namespace"):
                continue
            selector = _selector(d)
            if selector is not None and not selector.is_empty() and selector.matches(labels):
                self._enqueue(d)

    def _rs_added(self, rs: dict[str, Any]) -> None:
        if rs["metadata"].get("deletionTimestamp"):
            self._rs_deleted(rs)
            return
        owner = self._owner(rs)
        if owner is not None:
            self._enqueue(owner)
        elif controller_ref(rs) is None:
            self._enqueue_matching(rs)

    def _rs_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        old_ref, new_ref = controller_ref(old), controller_ref(new)
        if old_ref != new_ref and old_ref is not None:
            previous = self._owner(old)
            if previous is not None:
                self._enqueue(previous)
        owner = self._owner(new)
        if owner is not None:
            self._enqueue(owner)
        elif new_ref is None and (
            old["metadata"].get("labels") != new["metadata"].get("labels") or old_ref != new_ref
        ):
            self._enqueue_matching(new)

    def _rs_deleted(self, rs: dict[str, Any]) -> None:
        self.rs_writes.forget(object_key(rs))
        owner = self._owner(rs)
        if owner is not None:
            self._enqueue(owner)

    def _pod_deleted(self, pod: dict[str, Any]) -> None:
        """A Recreate rollout waits for the old pods to be gone: upstream syncs it when the
        last pod of its ReplicaSets goes (any other pod's going changes a ReplicaSet's status,
        which queues it anyway)."""
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return
        rs = self.replicasets.get(f"{pod['metadata']['namespace']}/{ref.get('name')}")
        owner = None if rs is None else self._owner(rs)
        if owner is not None and not du.is_rolling(owner) and not self._has_pods(owner):
            self._enqueue(owner)

    def _has_pods(self, d: dict[str, Any]) -> bool:
        """Whether a pod controlled by one of ``d``'s ReplicaSets and matching its selector
        is cached (upstream's ``getPodMapForDeployment``, counted)."""
        selector = _selector(d)
        for rs in self.replicasets.by_index(OWNER_INDEX, d["metadata"].get("uid", "")):
            for pod in self.pods.by_index(OWNER_INDEX, rs["metadata"].get("uid", "")):
                if selector is None or selector.matches(pod["metadata"].get("labels") or {}):
                    return True
        return False

    # ---- sync ------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        cached = self.deployments.get(key)
        if cached is None:
            self.own_writes.forget(key)
            return
        d = deep_copy(self.own_writes.newer(key, cached))
        selector = _selector(d)
        if selector is None or selector.is_empty():
            self.recorder.event(
                d,
                "Warning",
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            )
            generation = int(d["metadata"].get("generation") or 0)
            if (d.get("status") or {}).get("observedGeneration", 0) < generation:
                d.setdefault("status", {})["observedGeneration"] = generation
                await self.update_status(d)
            return
        rs_list = await self._replicasets_for(d, selector)
        if d["metadata"].get("deletionTimestamp"):
            await rollout.sync_status_only(self, d, rs_list)
            return
        await self._check_paused(d)
        if (d.get("spec") or {}).get("paused"):
            await rollout.scale_sync(self, d, rs_list)
            return
        if self._is_scaling_event(d, rs_list):
            await rollout.scale_sync(self, d, rs_list)
        elif du.is_rolling(d):
            await rollout.rollout_rolling(self, d, rs_list)
        else:
            await rollout.rollout_recreate(self, d, rs_list, self._pods_by_rs(rs_list))

    async def _replicasets_for(
        self, d: dict[str, Any], selector: LabelSelector
    ) -> list[dict[str, Any]]:
        meta = d["metadata"]
        candidates = [
            self.rs_writes.newer(object_key(rs), rs) if self.rs_writes else rs
            for rs in self.replicasets.by_index(OWNER_INDEX, meta["uid"])
        ]
        candidates += self.replicasets.by_index(OWNER_INDEX, f"orphan/{meta['namespace']}")
        can_adopt = False
        if any(controller_ref(rs) is None for rs in candidates):
            try:
                fresh = await self.client.get(DEPLOYMENTS, meta["name"], meta["namespace"])
                fresh_meta = fresh["metadata"]
                can_adopt = fresh_meta.get("uid") == meta["uid"] and not fresh_meta.get(
                    "deletionTimestamp"
                )
            except ApiError as error:
                if error.code != 404:
                    raise
        return await claim(self.client, REPLICASETS, d, selector, candidates, can_adopt=can_adopt)

    def wrote_replicaset(self, result: dict[str, Any]) -> dict[str, Any]:
        """Note a ReplicaSet as our write returned it; returns it."""
        self.rs_writes.wrote(object_key(result), result)
        return result

    def _pods_by_rs(self, rs_list: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
        return {
            rs["metadata"]["uid"]: self.pods.by_index(OWNER_INDEX, rs["metadata"]["uid"])
            for rs in rs_list
        }

    async def _check_paused(self, d: dict[str, Any]) -> None:
        """Progressing=Unknown with DeploymentPaused / DeploymentResumed on a change."""
        if not du.has_progress_deadline(d):
            return
        status = d.setdefault("status", {})
        condition = du.get_condition(status, "Progressing")
        if condition is not None and condition.get("reason") == "ProgressDeadlineExceeded":
            return
        paused_marked = condition is not None and condition.get("reason") == "DeploymentPaused"
        paused = bool((d.get("spec") or {}).get("paused"))
        now = self.clock.now()
        if paused and not paused_marked:
            reason, message = "DeploymentPaused", "Deployment is paused"
        elif not paused and paused_marked:
            reason, message = "DeploymentResumed", "Deployment is resumed"
        else:
            return
        du.set_condition(status, du.new_condition("Progressing", "Unknown", reason, message, now))
        await self.update_status(d)

    def _is_scaling_event(self, d: dict[str, Any], rs_list: list[dict[str, Any]]) -> bool:
        """Some active ReplicaSet was sized for a different spec.replicas than now."""
        for rs in du.active(rs_list):
            desired = (rs["metadata"].get("annotations") or {}).get(du.DESIRED_REPLICAS)
            if desired is not None and desired != str(du.replicas(d)):
                return True
        return False

    # ---- writes ----------------------------------------------------------------------------

    async def update_status(self, d: dict[str, Any]) -> None:
        """Write ``d``'s status (and revision annotation); ``d`` becomes what was stored."""
        d["status"] = dstatus.omit_zero(d.get("status") or {})
        result = await self.client.update(DEPLOYMENTS, d, subresource="status")
        self.own_writes.wrote(object_key(result), result)
        d.clear()
        d.update(result)

    async def scale(
        self, rs: dict[str, Any], new_scale: int, d: dict[str, Any], operation: str = ""
    ) -> tuple[bool, dict[str, Any]]:
        """``scaleReplicaSet``: set the size and the replica annotations, with a
        ``ScalingReplicaSet`` event when the size changed."""
        old_scale = du.replicas(rs)
        operation = operation or ("up" if old_scale < new_scale else "down")
        size_changed = old_scale != new_scale
        maximum = du.replicas(d) + du.max_surge(d)
        if not size_changed and not du.replicas_annotations_need_update(
            rs, du.replicas(d), maximum
        ):
            return False, rs
        updated = deep_copy(rs)
        updated["spec"]["replicas"] = new_scale
        du.set_replicas_annotations(updated, du.replicas(d), maximum)
        result = self.wrote_replicaset(await self.client.update(REPLICASETS, updated))
        if size_changed:
            self.recorder.event(
                d,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled {operation} replica set {result['metadata']['name']} "
                f"from {old_scale} to {new_scale}",
            )
        return size_changed, result

    async def scale_and_record(
        self, rs: dict[str, Any], new_scale: int, d: dict[str, Any]
    ) -> tuple[bool, dict[str, Any]]:
        if du.replicas(rs) == new_scale:
            return False, rs
        return await self.scale(rs, new_scale, d)


def _selector(d: dict[str, Any]) -> LabelSelector | None:
    try:
        return label_selector_from_dict((d.get("spec") or {}).get("selector"))
    except ValueError:
        return None
