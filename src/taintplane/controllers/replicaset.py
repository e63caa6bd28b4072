"""The ReplicaSet controller: keeps ``spec.replicas`` active pods matching the selector.

As upstream's ``replicaset`` controller: pods that are finished (Succeeded/Failed) or being
deleted do not count, so an evicted or deleted pod is replaced at once; creations go in
slow-start batches (1, 2, 4, …) of at most ``burstReplicas`` a sync; deletions pick pods by
:func:`~taintplane.controllers.podranking.pods_to_delete`; matching orphans are adopted and
owned pods that stop matching are released. Expectations keep a sync from acting again
before the informer has shown the pods it created or deleted.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from datetime import datetime
from typing import Any

from taintplane.api.selectors import LabelSelector, label_selector_from_dict
from taintplane.client import ApiError, Client, resource
from taintplane.client.events import EventRecorder
from taintplane.client.informer import object_key
from taintplane.client.shared import SharedInformers
from taintplane.client.workqueue import WorkQueue
from taintplane.clock import Clock
from taintplane.controllers.podranking import pods_to_delete
from taintplane.controllers.replicaset_status import (
    calculate_status,
    next_availability_check,
    omit_zero,
    same_status,
)
from taintplane.controllers.workloads import (
    OWNER_INDEX,
    Expectations,
    claim,
    controller_ref,
    is_pod_active,
    is_pod_terminating,
    new_controller_ref,
    owner_index,
)

__all__ = ["ReplicaSetController"]

log = logging.getLogger(__name__)

PODS = resource("", "v1", "pods")
REPLICASETS = resource("apps", "v1", "replicasets")
COMPONENT = "replicaset-controller"
BURST_REPLICAS = 500


class ReplicaSetController:
    def __init__(self, client: Client, clock: Clock, informers: SharedInformers) -> None:
        self.client = client
        self.clock = clock
        self.pods = informers.pods
        self.replicasets = informers.informer("apps", "v1", "replicasets")
        for informer in (self.pods, self.replicasets):
            if not informer.has_index(OWNER_INDEX):
                informer.add_index(OWNER_INDEX, owner_index)
        self.recorder = EventRecorder(client, clock, COMPONENT)
        self.queue = WorkQueue(clock, name="replicaset")
        self.expectations = Expectations(clock)
        self.replicasets.add_handlers(
            lambda rs: self.queue.add(object_key(rs)),
            self._rs_updated,
            self._rs_deleted,
        )
        self.pods.add_handlers(self._pod_added, self._pod_updated, self._pod_deleted)

    async def run(self) -> None:
        await self.queue.run(self._sync_or_requeue)

    async def _sync_or_requeue(self, key: str) -> None:
        """A conflict means our cache was behind a write: try again shortly, without the
        error log other failures get."""
        try:
            await self.sync(key)
        except ApiError as error:
            if error.code != 409:
                raise
            self.queue.retry(key)

    # ---- informer callbacks ----------------------------------------------------------------

    def _rs_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.queue.add(object_key(new))

    def _rs_deleted(self, rs: dict[str, Any]) -> None:
        key = object_key(rs)
        self.expectations.forget(key)
        self.queue.add(key)

    def _owner_key(self, pod: dict[str, Any]) -> str | None:
        """The key of the ReplicaSet controlling ``pod``, if it is one we know."""
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return None
        key = f"{pod['metadata']['namespace']}/{ref.get('name')}"
        rs = self.replicasets.get(key)
        if rs is None or rs["metadata"].get("uid") != ref.get("uid"):
            return None
        return key

    def _enqueue_matching(self, pod: dict[str, Any]) -> None:
        """An orphan changed: every ReplicaSet whose selector matches may adopt it."""
        namespace = pod["metadata"]["namespace"]
        labels = pod["metadata"].get("labels") or {}
        for rs in self.replicasets.cache.values():
            if rs["metadata"].get("namespace") != namespace:
                continue
            selector = _selector(rs)
            if selector is not None and not selector.is_empty() and selector.matches(labels):
                self.queue.add(object_key(rs))

    def _pod_added(self, pod: dict[str, Any]) -> None:
        if pod["metadata"].get("deletionTimestamp"):
            self._pod_deleted(pod)  # seen first while terminating: counts as gone
            return
        key = self._owner_key(pod)
        if key is not None:
            self.expectations.creation_observed(key)
            self.queue.add(key)
        elif controller_ref(pod) is None:
            self._enqueue_matching(pod)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        labels_changed = old["metadata"].get("labels") != new["metadata"].get("labels")
        if new["metadata"].get("deletionTimestamp"):
            self._pod_deleted(new)
            if labels_changed:
                self._pod_deleted(old)
            return
        old_ref, new_ref = controller_ref(old), controller_ref(new)
        if old_ref != new_ref and old_ref is not None:
            old_key = self._owner_key(old)
            if old_key is not None:
                self.queue.add(old_key)
        key = self._owner_key(new)
        if key is not None:
            self.queue.add(key)
        elif new_ref is None and (labels_changed or old_ref != new_ref):
            self._enqueue_matching(new)

    def _pod_deleted(self, pod: dict[str, Any]) -> None:
        key = self._owner_key(pod)
        if key is not None:
            self.expectations.deletion_observed(key, object_key(pod))
            self.queue.add(key)

    # ---- sync ------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        rs = self.replicasets.get(key)
        if rs is None:
            self.expectations.forget(key)
            return
        needs_sync = self.expectations.satisfied(key)
        selector = _selector(rs)
        if selector is None or selector.is_empty():
            return  # validation forbids it; never select every pod
        meta = rs["metadata"]
        namespace, uid = meta["namespace"], meta["uid"]
        candidates = [
            *self.pods.by_index(OWNER_INDEX, uid),
            *self.pods.by_index(OWNER_INDEX, f"orphan/{namespace}"),
        ]
        active = [p for p in candidates if is_pod_active(p)]
        active = await claim(
            self.client,
            PODS,
            rs,
            selector,
            active,
            can_adopt=await self._can_adopt(rs),
        )
        terminating = [
            p
            for p in self.pods.by_index(OWNER_INDEX, uid)
            if is_pod_terminating(p) and selector.matches(p["metadata"].get("labels") or {})
        ]
        error: Exception | None = None
        if needs_sync and not meta.get("deletionTimestamp"):
            try:
                await self._manage_replicas(key, rs, active)
            except ApiError as failure:
                error = failure
        now = self.clock.now()
        updated = await self._update_status(rs, active, terminating, error, now)
        spec = updated.get("spec") or {}
        status = updated.get("status") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        if min_ready > 0 and status.get("readyReplicas", 0) != status.get("availableReplicas", 0):
            self.queue.add_after(key, next_availability_check(active, min_ready, now))
        if error is not None:
            raise error

    async def _can_adopt(self, rs: dict[str, Any]) -> bool:
        """Adopt only for a ReplicaSet that still exists as we saw it and is not being
        deleted (upstream re-reads it from the server, not the cache)."""
        meta = rs["metadata"]
        try:
            fresh = await self.client.get(REPLICASETS, meta["name"], meta["namespace"])
        except ApiError as error:
            if error.code == 404:
                return False
            raise
        fresh_meta = fresh["metadata"]
        return fresh_meta.get("uid") == meta["uid"] and not fresh_meta.get("deletionTimestamp")

    async def _manage_replicas(
        self, key: str, rs: dict[str, Any], active: list[dict[str, Any]]
    ) -> None:
        wanted = int((rs.get("spec") or {}).get("replicas", 1))
        diff = len(active) - wanted
        if diff < 0:
            count = min(-diff, BURST_REPLICAS)
            self.expectations.expect(key, adds=count)
            await self._create_pods(key, rs, count)
        elif diff > 0:
            count = min(diff, BURST_REPLICAS)
            victims = pods_to_delete(active, self._related_pods(rs), count, self.clock.now())
            self.expectations.expect(key, deletes=[object_key(p) for p in victims])
            results = await asyncio.gather(
                *(self._delete_pod(key, rs, pod) for pod in victims), return_exceptions=True
            )
            for result in results:
                if isinstance(result, BaseException):
                    raise result

    async def _create_pods(self, key: str, rs: dict[str, Any], count: int) -> None:
        """Slow start: batches of 1, 2, 4, … stopping after a batch with a failure, so a
        quota or admission refusal costs one request, not ``count``."""
        batch, done = 1, 0
        while done < count:
            size = min(batch, count - done)
            results = await asyncio.gather(
                *(self._create_pod(rs) for _ in range(size)), return_exceptions=True
            )
            done += size
            failures = [r for r in results if isinstance(r, BaseException)]
            if failures:
                # Neither the failed creations nor the skipped ones will ever be observed.
                for _ in range(len(failures) + count - done):
                    self.expectations.creation_observed(key)
                raise failures[0]
            batch *= 2

    async def _create_pod(self, rs: dict[str, Any]) -> None:
        meta = rs["metadata"]
        template = copy.deepcopy((rs.get("spec") or {}).get("template") or {})
        template_meta = template.get("metadata") or {}
        labels = dict(template_meta.get("labels") or {})
        if not labels:
            raise ApiError({"code": 422, "message": "unable to create pods, no labels"})
        pod_meta: dict[str, Any] = {
            "generateName": f"{meta['name']}-",
            "namespace": meta["namespace"],
            "labels": labels,
            "ownerReferences": [new_controller_ref(rs)],
        }
        for field in ("annotations", "finalizers"):
            if template_meta.get(field):
                pod_meta[field] = copy.deepcopy(template_meta[field])
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta}
        pod["spec"] = template.get("spec") or {}
        try:
            created = await self.client.create(PODS, pod, namespace=meta["namespace"])
        except ApiError as error:
            if "is being terminated" not in str(error):  # namespace going: no event
                self.recorder.event(rs, "Warning", "FailedCreate", f"Error creating: {error}")
            raise
        self.recorder.event(
            rs, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}"
        )

    async def _delete_pod(self, key: str, rs: dict[str, Any], pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        try:
            await self.client.delete(PODS, name, pod["metadata"]["namespace"])
        except ApiError as error:
            if error.code == 404:  # already gone: nothing to wait for
                self.expectations.deletion_observed(key, object_key(pod))
                return
            self.expectations.deletion_observed(key, object_key(pod))
            self.recorder.event(rs, "Warning", "FailedDelete", f"Error deleting: {error}")
            raise
        self.recorder.event(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {name}")

    def _related_pods(self, rs: dict[str, Any]) -> list[dict[str, Any]]:
        """Pods of every ReplicaSet controlled by the same owner (for ranking by node)."""
        ref = controller_ref(rs)
        if ref is None:
            return self.pods.by_index(OWNER_INDEX, rs["metadata"]["uid"])
        siblings = self.replicasets.by_index(OWNER_INDEX, str(ref.get("uid")))
        related: list[dict[str, Any]] = []
        for sibling in siblings:
            related += self.pods.by_index(OWNER_INDEX, sibling["metadata"]["uid"])
        return related

    # ---- status ----------------------------------------------------------------------------

    async def _update_status(
        self,
        rs: dict[str, Any],
        active: list[dict[str, Any]],
        terminating: list[dict[str, Any]],
        error: Exception | None,
        now: datetime,
    ) -> dict[str, Any]:
        status = calculate_status(rs, active, terminating, error, now)
        old = rs.get("status") or {}
        generation = int(rs["metadata"].get("generation") or 0)
        if same_status(old, status) and old.get("observedGeneration", 0) == generation:
            return rs
        if generation:
            status["observedGeneration"] = generation
        updated = copy.deepcopy(rs)
        for attempt in range(2):  # one retry on a stale copy, as upstream
            updated["status"] = omit_zero(status)
            try:
                result: dict[str, Any] = await self.client.update(
                    REPLICASETS, updated, subresource="status"
                )
                return result
            except ApiError as failure:
                if failure.code != 409 or attempt:
                    raise
                meta = rs["metadata"]
                updated = await self.client.get(REPLICASETS, meta["name"], meta["namespace"])
        return rs


def _selector(rs: dict[str, Any]) -> LabelSelector | None:
    try:
        return label_selector_from_dict((rs.get("spec") or {}).get("selector"))
    except ValueError:
        return None
