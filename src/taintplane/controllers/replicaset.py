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
from typing import Any

from taintplane.api.selectors import LabelSelector
from taintplane.client import ApiError, Client, resource
from taintplane.client.events import EventRecorder
from taintplane.client.informer import object_key
from taintplane.client.shared import SharedInformers
from taintplane.client.workqueue import WorkQueue
from taintplane.clock import Clock
from taintplane.controllers.own_writes import OwnWrites
from taintplane.controllers.podranking import pods_to_delete
from taintplane.controllers.replicaset_handlers import ReplicaSetHandlers, selector_of
from taintplane.controllers.replicaset_pods import ReplicaSetPods
from taintplane.controllers.replicaset_status import (
    calculate_status,
    next_availability_check,
    omit_zero,
    same_status,
    status_from_counts,
)
from taintplane.controllers.workloads import (
    NAMESPACE_INDEX,
    OWNER_INDEX,
    Expectations,
    claim,
    controller_ref,
    deep_copy,
    is_pod_active,
    is_pod_terminating,
    namespace_index,
    new_controller_ref,
    owner_index,
)

__all__ = ["ReplicaSetController"]

log = logging.getLogger(__name__)

PODS = resource("", "v1", "pods")
REPLICASETS = resource("apps", "v1", "replicasets")
COMPONENT = "replicaset-controller"
BURST_REPLICAS = 500


class ReplicaSetController(ReplicaSetHandlers):
    def __init__(self, client: Client, clock: Clock, informers: SharedInformers) -> None:
        self.client = client
        self.clock = clock
        self.pods = informers.pods
        self.replicasets = informers.informer("apps", "v1", "replicasets")
        for informer in (self.pods, self.replicasets):
            if not informer.has_index(OWNER_INDEX):
                informer.add_index(OWNER_INDEX, owner_index)
        if not self.replicasets.has_index(NAMESPACE_INDEX):
            self.replicasets.add_index(NAMESPACE_INDEX, namespace_index)
        self.recorder = EventRecorder(client, clock, COMPONENT)
        self.queue = WorkQueue(clock, name="replicaset")
        self.expectations = Expectations(clock)
        #: Status writes the informer has not shown yet: a sync reads them instead of the
        #: older cached copies (so it neither writes again nor meets a 409).
        self.own_writes = OwnWrites()
        self.replicasets.add_handlers(
            lambda rs: self.queue.add(object_key(rs)),
            self._rs_updated,
            self._rs_deleted,
        )
        # The counts first: a sync the handlers below queue must find them current.
        self.counts = ReplicaSetPods(self.pods)
        self.pods.add_handlers(self.counts.added, self.counts.updated, self.counts.deleted)
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

    # ---- sync ------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        rs = self.replicasets.get(key)
        if rs is None:
            self.expectations.forget(key)
            self.own_writes.forget(key)
            return
        rs = self.own_writes.newer(key, rs)
        needs_sync = self.expectations.satisfied(key)
        spec = rs.get("spec") or {}
        selector = selector_of(rs)
        if selector is None or selector.is_empty():
            return  # validation forbids it; never select every pod
        meta = rs["metadata"]
        namespace, uid = meta["namespace"], meta["uid"]
        template = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        counts = self.counts.counts(uid, spec.get("selector") or {}, selector, template)
        adoptable = [
            p
            for p in self.pods.by_index(OWNER_INDEX, f"orphan/{namespace}")
            if is_pod_active(p) and selector.matches(p["metadata"].get("labels") or {})
        ]
        wanted = int(spec.get("replicas", 1))
        deleting = bool(meta.get("deletionTimestamp"))
        scale_down = needs_sync and not deleting and counts.active > wanted
        if adoptable or counts.unmatched or scale_down:
            # Adoption, release or choosing pods to delete needs the pods themselves.
            await self._sync_walking(key, rs, selector, adoptable, needs_sync)
            return
        # Otherwise the counts say it all: no pod is visited. They are read before acting,
        # as upstream counts the pods it listed before it created or deleted any.
        now = self.clock.now()
        min_ready = int(spec.get("minReadySeconds") or 0)
        numbers = (
            counts.active,
            counts.labelled,
            counts.ready,
            counts.available(min_ready, now),
            counts.terminating,
        )
        error: Exception | None = None
        if needs_sync and not deleting:
            try:
                await self._manage_replicas(key, rs, counts.active, [])
            except ApiError as failure:
                error = failure
        now = self.clock.now()
        status = status_from_counts(rs, numbers, error, now)
        updated = await self._update_status(rs, status)
        status = updated.get("status") or {}
        if min_ready > 0 and status.get("readyReplicas", 0) != status.get("availableReplicas", 0):
            self.queue.add_after(key, counts.next_check(min_ready, now))
        if error is not None:
            raise error

    async def _sync_walking(
        self,
        key: str,
        rs: dict[str, Any],
        selector: LabelSelector,
        adoptable: list[dict[str, Any]],
        needs_sync: bool,
    ) -> None:
        """The sync over the pods themselves, as upstream's: claim (adopt, release), scale
        down by rank, status counted over the claimed pods."""
        meta = rs["metadata"]
        namespace, uid = meta["namespace"], meta["uid"]
        candidates = [
            *self.pods.by_index(OWNER_INDEX, uid),
            *self.pods.by_index(OWNER_INDEX, f"orphan/{namespace}"),
        ]
        active = [p for p in candidates if is_pod_active(p)]
        # Upstream asks the server whether the owner may adopt only when there is
        # something to adopt (the check's sync.Once).
        can_adopt = bool(adoptable) and await self._can_adopt(rs)
        active = await claim(self.client, PODS, rs, selector, active, can_adopt=can_adopt)
        terminating = [
            p
            for p in self.pods.by_index(OWNER_INDEX, uid)
            if is_pod_terminating(p) and selector.matches(p["metadata"].get("labels") or {})
        ]
        error: Exception | None = None
        if needs_sync and not meta.get("deletionTimestamp"):
            try:
                await self._manage_replicas(key, rs, len(active), active)
            except ApiError as failure:
                error = failure
        now = self.clock.now()
        status = calculate_status(rs, active, terminating, error, now)
        updated = await self._update_status(rs, status)
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
        self, key: str, rs: dict[str, Any], count: int, active: list[dict[str, Any]]
    ) -> None:
        """Create or delete toward ``spec.replicas`` from ``count`` active pods (``active``
        lists them; only a scale-down needs them)."""
        wanted = int((rs.get("spec") or {}).get("replicas", 1))
        diff = count - wanted
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
        template = deep_copy((rs.get("spec") or {}).get("template") or {})
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

    async def _update_status(self, rs: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        old = rs.get("status") or {}
        generation = int(rs["metadata"].get("generation") or 0)
        if same_status(old, status) and old.get("observedGeneration", 0) == generation:
            return rs
        if generation:
            status["observedGeneration"] = generation
        updated = deep_copy(rs)
        for attempt in range(2):  # one retry on a stale copy, as upstream
            updated["status"] = omit_zero(status)
            try:
                result: dict[str, Any] = await self.client.update(
                    REPLICASETS, updated, subresource="status"
                )
                self.own_writes.wrote(object_key(result), result)
                return result
            except ApiError as failure:
                if failure.code != 409 or attempt:
                    raise
                meta = rs["metadata"]
                updated = await self.client.get(REPLICASETS, meta["name"], meta["namespace"])
        return rs
