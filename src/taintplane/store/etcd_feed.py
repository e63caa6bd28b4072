"""One long-lived etcd watch over the whole key prefix, feeding the in-process hub.

Every watcher of the API server is served from the hub (STORAGE.md §2.1, §7: etcd replays
history to a watcher at ~10k events/s, so watches to etcd are kept few and long-lived). The
feed also tells writers when their own change has reached the hub: a write returns only
then, so whoever sees the acknowledgement can watch from that revision and a bookmark never
claims a revision whose events are still on the way (as with the SQLite backend).

No progress notifications: etcd before 3.5.8 may send one ahead of events still queued for a
watcher catching up, and a bookmark built on it could make a client skip those events.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
from aetcd import rpc

from taintplane.store.hub import WatchHub
from taintplane.store.interface import EventType, WatchEvent

__all__ = ["EtcdFeed"]

log = logging.getLogger(__name__)

_PUT = 0  # mvccpb.Event.EventType


class EtcdFeed:
    def __init__(self, channel: grpc.aio.Channel, hub: WatchHub, low: bytes, high: bytes) -> None:
        self._stub = rpc.WatchStub(channel)
        self._hub = hub
        self._low, self._high = low, high
        self._strip = len(low) - 1  # keys are given back without the prefix ("/registry")
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._task: asyncio.Task[None] | None = None
        self._stopped = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="etcd-watch-feed")

    async def stop(self) -> None:
        self._stopped.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for _, _, future in self._waiters:
            if not future.done():
                future.cancel()

    async def reached(self, revision: int) -> None:
        """Return once the hub has published every change up to ``revision``."""
        if self._hub.last_revision >= revision:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (revision, next(self._order), future))
        await future

    def _wake(self) -> None:
        last = self._hub.last_revision
        while self._waiters and self._waiters[0][0] <= last:
            _, _, future = heapq.heappop(self._waiters)
            if not future.done():
                future.set_result(None)

    async def _requests(self, start: int) -> AsyncIterator[Any]:
        create = rpc.WatchCreateRequest(
            key=self._low, range_end=self._high, start_revision=start, prev_kv=True
        )
        yield rpc.WatchRequest(create_request=create)
        await self._stopped.wait()  # keep the stream open

    async def _run(self) -> None:
        backoff = 0.05
        while not self._stopped.is_set():
            call = self._stub.Watch(self._requests(self._hub.last_revision + 1))
            try:
                async for response in call:
                    backoff = 0.05
                    if response.compact_revision:
                        # The changes we had not seen yet are gone: every watcher must relist.
                        log.warning("etcd compacted past the watch feed; watchers relist")
                        self._hub.reset(response.compact_revision)
                        self._wake()
                        break
                    if response.canceled:
                        break
                    if response.events:
                        self._hub.publish(self._event(e) for e in response.events)
                        self._wake()
            except grpc.aio.AioRpcError as error:
                log.warning("etcd watch feed broke (%s); reconnecting", error.code().name)
            finally:
                call.cancel()
            if not self._stopped.is_set():
                # A reconnect pause (network time, not logic); gRPC moves to the next member.
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 2.0)

    def _event(self, event: Any) -> WatchEvent:
        kv = event.kv
        key = kv.key[self._strip :].decode()
        prev = event.prev_kv.value if event.HasField("prev_kv") else None
        if event.type == _PUT:
            if kv.create_revision == kv.mod_revision:
                return WatchEvent(EventType.ADDED, key, kv.value, None, kv.mod_revision)
            return WatchEvent(EventType.MODIFIED, key, kv.value, prev, kv.mod_revision)
        last = prev if prev is not None else b""
        return WatchEvent(EventType.DELETED, key, last, prev, kv.mod_revision)
