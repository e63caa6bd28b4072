"""The namespace controller (upstream's ``pkg/controller/namespace``): empties a namespace
being deleted and then releases it (the deletion itself is ``namespace_deletion``).

A namespace is queued on every add or update that shows a deletionTimestamp, 5 s later
(``namespaceDeletionGracePeriod``: time for creations racing the deletion to land), and all
of them again every ``--namespace-sync-period`` (5 min). Content still going away brings the
namespace back after half the estimate plus a second; any other failure after the queue's
exponential backoff (5 ms doubling to 60 s, upstream's ``nsControllerRateLimiter``), logged in
one line as upstream's ``deletion of namespace NAME failed: …`` (content left on a node whose
kubelet is gone is such a failure once the pods' grace period has passed). As
client-go's delaying queue, a namespace waits for one instant only: a sooner one replaces it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from taintplane.client import Client
from taintplane.client.shared import SharedInformers
from taintplane.client.workqueue import WorkQueue
from taintplane.clock import Clock
from taintplane.controllers.namespace_deletion import (
    DeletionFailed,
    NamespacedResourcesDeleter,
    ResourcesRemaining,
)

__all__ = ["DELETION_GRACE_PERIOD", "SYNC_PERIOD", "NamespaceController"]

log = logging.getLogger(__name__)

DELETION_GRACE_PERIOD = 5.0
SYNC_PERIOD = 300.0
#: ``--concurrent-namespace-syncs``.
WORKERS = 10


class NamespaceController:
    def __init__(
        self,
        client: Client,
        clock: Clock,
        informers: SharedInformers,
        *,
        workers: int = WORKERS,
        sync_period: float = SYNC_PERIOD,
    ) -> None:
        self.clock = clock
        self.deleter = NamespacedResourcesDeleter(client, clock)
        self.queue = WorkQueue(
            clock,
            name="namespace",
            base_delay=0.005,
            max_delay=60.0,
            failure="deletion of namespace {key} failed: {error}",
            expected=(DeletionFailed,),
        )
        self.namespaces = informers.informer("", "v1", "namespaces")
        self.namespaces.add_handlers(
            on_add=self._enqueue, on_update=lambda _old, new: self._enqueue(new)
        )
        self.workers = workers
        self.sync_period = sync_period
        #: When each waiting namespace is due, and the timers that will queue them.
        self._due: dict[str, float] = {}
        self._timers: set[asyncio.Task[None]] = set()

    def _enqueue(self, namespace: dict[str, Any]) -> None:
        if namespace["metadata"].get("deletionTimestamp"):
            self._add_after(namespace["metadata"]["name"], DELETION_GRACE_PERIOD)

    def _add_after(self, name: str, seconds: float) -> None:
        due = self.clock.monotonic() + seconds
        if self._due.get(name, float("inf")) <= due:
            return
        self._due[name] = due

        async def wake() -> None:
            await self.clock.sleep(seconds)
            if self._due.get(name) == due:
                del self._due[name]
                self.queue.add(name)

        timer = asyncio.create_task(wake(), name=f"namespace:after:{name}")
        self._timers.add(timer)
        timer.add_done_callback(self._timers.discard)

    async def run(self) -> None:
        try:
            await asyncio.gather(
                self._resync(), *(self.queue.run(self._sync) for _ in range(self.workers))
            )
        finally:
            for timer in list(self._timers):
                timer.cancel()

    async def _resync(self) -> None:
        while True:
            await self.clock.sleep(self.sync_period)
            for namespace in list(self.namespaces.cache.values()):
                self._enqueue(namespace)

    async def _sync(self, name: str) -> None:
        if self.namespaces.get(name) is None:
            return  # deleted since it was queued
        try:
            await self.deleter.delete(name)
        except ResourcesRemaining as remaining:
            wait = remaining.estimate // 2 + 1
            log.debug("content remaining in namespace %s, waiting %d seconds", name, wait)
            self._add_after(name, wait)
