"""The etcd v3 backend: a thin adapter over the generated gRPC stubs (STORAGE.md §3, §7).

aetcd's own list and watch are not used: they send neither ``limit`` nor ``revision``.

* Keys are stored as ``PREFIX + key`` (``/registry/core/pods/default/web``), so several
  taintplanes can share one etcd cluster. Revisions are etcd's, shared by the whole cluster.
* Each write is one ``Txn``: the precondition is a compare (CREATE == 0 for a create, MOD ==
  expected for an update), and the failure branch reads the key, so ``Conflict`` carries the
  current revision without a second round trip.
* Lists are ``Range`` pages at one pinned revision, continuing after the last key.
* Watches come from the in-process hub, fed by one etcd watch (``etcd_feed``). A watcher
  resuming from before what the hub holds (older than this process, or pushed out of the
  buffer) gets ``Compacted`` and relists, as kube-apiserver's watch cache answers "too old
  resource version".
* Every call is tracked, so :meth:`drained` can tell a virtual clock that no store work is
  on the way (gRPC completes calls from its own thread, unseen by the event loop).
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
from collections.abc import Coroutine
from typing import Any, TypeVar

import grpc
from aetcd import rpc

from taintplane.store import etcd_channel as ch
from taintplane.store.errors import (
    AlreadyExists,
    Compacted,
    Conflict,
    FutureRevision,
    NotFound,
    StoreError,
    TooLarge,
)
from taintplane.store.etcd_feed import EtcdFeed
from taintplane.store.etcd_target import EtcdTarget, parse_etcd_url
from taintplane.store.hub import HubWatch, WatchHub
from taintplane.store.interface import KV, MAX_VALUE_SIZE, ListResult, WatchEvent

__all__ = ["EtcdStore", "Unavailable"]

Unavailable = ch.Unavailable
_T = TypeVar("_T")

#: Lists without a limit are still read in pages (each one message) at one revision.
_CHUNK = 1000


def _prefix_end(key: bytes) -> bytes:
    """etcd's range end for "every key starting with ``key``"."""
    return key[:-1] + bytes([key[-1] + 1])


class EtcdStore:
    def __init__(
        self,
        target: EtcdTarget | str,
        *,
        watch_buffer: int = 20_000,
        connect_timeout: float = 5.0,
        request_timeout: float = 30.0,
    ) -> None:
        self.target = parse_etcd_url(target) if isinstance(target, str) else target
        self._root = self.target.prefix.encode()
        self._hub = WatchHub(watch_buffer)
        self._connect_timeout = connect_timeout
        self._timeout = request_timeout
        self._compacted_to = 0
        self._inflight: set[asyncio.Future[Any]] = set()
        self._channel: grpc.aio.Channel | None = None
        self._feed: EtcdFeed | None = None
        self._closed = False

    # ---- lifecycle -----------------------------------------------------------------------

    async def open(self) -> EtcdStore:
        """Connect; ``Unavailable`` naming the endpoints if no member answers in time."""
        self._channel = await ch.open_channel(self.target)
        self._kv = rpc.KVStub(self._channel)
        try:
            # Not wait_for_ready: refused connections to every member fail at once, so a
            # user who forgot to start etcd hears about it without waiting for the deadline.
            response = await self._kv.Range(
                rpc.RangeRequest(key=self._root), timeout=self._connect_timeout
            )
        except grpc.aio.AioRpcError as error:
            await self._channel.close()
            reason = error.details() or error.code().name
            if error.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                reason = f"no answer within {self._connect_timeout:g} s"
            raise Unavailable(
                f"cannot reach etcd at {self.target.describe()} ({reason}): start etcd there "
                "or pass the client URL of a running member"
            ) from error
        self._hub.start_at(response.header.revision)
        low = self._root + b"/"
        self._feed = EtcdFeed(self._channel, self._hub, low, _prefix_end(low))
        self._feed.start()
        return self

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._feed is not None:
            await self._feed.stop()
        self._hub.close_all()
        if self._channel is not None:
            await self._channel.close()

    async def drained(self) -> bool:
        """Wait until every call in flight has completed; whether there were any (virtual
        time waits on this before it moves on)."""
        if not self._inflight:
            return False
        await asyncio.gather(*list(self._inflight), return_exceptions=True)
        return True

    async def _tracked(self, work: Coroutine[Any, Any, _T]) -> _T:
        if self._closed or self._channel is None:
            work.close()
            raise StoreError("store is closed")
        task = asyncio.ensure_future(work)
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)
        return await task

    def _key(self, key: str) -> bytes:
        return self._root + key.encode()

    def _range_of(self, prefix: str) -> tuple[bytes, bytes]:
        low = self._root + (prefix.encode() if prefix else b"/")
        return low, _prefix_end(low)

    # ---- calls ---------------------------------------------------------------------------

    async def _txn(self, key: str, request: Any) -> Any:
        try:
            return await self._kv.Txn(request, timeout=self._timeout, wait_for_ready=True)
        except grpc.aio.AioRpcError as error:
            raise ch.store_error(error, key) from error

    async def _range(self, request: Any, requested: int = 0) -> Any:
        # A read may be retried on another member; gRPC has moved on from a broken one.
        for attempt in (1, 2):
            try:
                return await self._kv.Range(request, timeout=self._timeout, wait_for_ready=True)
            except grpc.aio.AioRpcError as error:
                failure = ch.store_error(error, request.key.decode(), requested=requested)
                if isinstance(failure, ch.Unavailable) and attempt == 1:
                    continue
                if isinstance(failure, Compacted):
                    # etcd's message gives no number; the highest we know of, or "after it".
                    failure = Compacted(requested, max(self._compacted_to, requested + 1))
                if isinstance(failure, FutureRevision):
                    current = await self._current_revision()
                    failure = FutureRevision(requested, current)
                raise failure from error
        raise AssertionError("unreachable")

    async def _write(self, key: str, request: Any) -> Any:
        response = await self._txn(key, request)
        if response.succeeded:
            # Return once our own change is in the hub (see etcd_feed). The change is
            # committed either way: if the feed is cut off (the member went away after
            # answering), stop waiting rather than hold the caller forever.
            assert self._feed is not None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._feed.reached(response.header.revision), self._timeout)
        return response

    @staticmethod
    def _current_of(response: Any) -> Any:
        """The key's state in a failed Txn's read branch, or None if it does not exist."""
        kvs = response.responses[0].response_range.kvs
        return kvs[0] if kvs else None

    # ---- writes --------------------------------------------------------------------------

    @staticmethod
    def _check_size(key: str, value: bytes) -> None:
        if len(value) > MAX_VALUE_SIZE:
            raise TooLarge(key, len(value), MAX_VALUE_SIZE)

    async def create(self, key: str, value: bytes) -> int:
        self._check_size(key, value)
        k = self._key(key)
        request = rpc.TxnRequest(
            compare=[ch.compare_create_is(k, 0)],
            success=[rpc.RequestOp(request_put=rpc.PutRequest(key=k, value=value))],
            failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=k))],
        )
        response = await self._tracked(self._sized_write(key, value, request))
        if not response.succeeded:
            raise AlreadyExists(key, self._current_of(response).mod_revision)
        return int(response.header.revision)

    async def update(self, key: str, value: bytes, expected_revision: int) -> int:
        self._check_size(key, value)
        k = self._key(key)
        request = rpc.TxnRequest(
            compare=[ch.compare_exists(k), ch.compare_mod_is(k, expected_revision)],
            success=[rpc.RequestOp(request_put=rpc.PutRequest(key=k, value=value))],
            failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=k))],
        )
        response = await self._tracked(self._sized_write(key, value, request))
        if not response.succeeded:
            current = self._current_of(response)
            if current is None:
                raise NotFound(key)
            raise Conflict(key, current.mod_revision)
        return int(response.header.revision)

    async def _sized_write(self, key: str, value: bytes, request: Any) -> Any:
        try:
            return await self._write(key, request)
        except TooLarge as error:
            # etcd's own limit (--max-request-bytes) counts the key and the request too.
            raise TooLarge(key, len(value), MAX_VALUE_SIZE) from error

    async def delete(self, key: str, expected_revision: int | None = None) -> tuple[int, bytes]:
        k = self._key(key)
        compare = [ch.compare_exists(k)]
        if expected_revision is not None:
            compare.append(ch.compare_mod_is(k, expected_revision))
        request = rpc.TxnRequest(
            compare=compare,
            success=[
                rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=k, prev_kv=True))
            ],
            failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=k))],
        )
        response = await self._tracked(self._write(key, request))
        if not response.succeeded:
            current = self._current_of(response)
            if current is None:
                raise NotFound(key)
            raise Conflict(key, current.mod_revision)
        last = response.responses[0].response_delete_range.prev_kvs[0].value
        return int(response.header.revision), bytes(last)

    async def compact(self, revision: int) -> None:
        await self._tracked(self._compact(revision))

    async def _compact(self, revision: int) -> None:
        target = min(revision, await self._current_revision())
        if target <= self._compacted_to:
            return
        try:
            await self._kv.Compact(
                rpc.CompactionRequest(revision=target), timeout=self._timeout, wait_for_ready=True
            )
        except grpc.aio.AioRpcError as error:
            failure = ch.store_error(error, "compact", requested=target)
            # Another API server sharing this etcd compacted as far already: nothing to do.
            if not isinstance(failure, Compacted):
                raise failure from error
        self._compacted_to = max(self._compacted_to, target)

    # ---- reads ---------------------------------------------------------------------------

    async def current_revision(self) -> int:
        return await self._tracked(self._current_revision())

    async def _current_revision(self) -> int:
        # A point read of a key never written (the bare prefix): just the header.
        response = await self._range(rpc.RangeRequest(key=self._root))
        return int(response.header.revision)

    async def get(self, key: str, revision: int = 0) -> KV | None:
        if revision and revision < self._compacted_to:
            raise Compacted(revision, self._compacted_to)
        request = rpc.RangeRequest(key=self._key(key), revision=revision)
        response = await self._tracked(self._range(request, revision))
        if not response.kvs:
            return None
        kv = response.kvs[0]
        return KV(key, kv.value, kv.mod_revision, kv.create_revision)

    async def list(
        self, prefix: str, *, revision: int = 0, limit: int = 0, continue_after: str | None = None
    ) -> ListResult:
        if revision and revision < self._compacted_to:
            raise Compacted(revision, self._compacted_to)
        return await self._tracked(self._list(prefix, revision, limit, continue_after))

    async def _list(
        self, prefix: str, revision: int, limit: int, continue_after: str | None
    ) -> ListResult:
        low, high = self._range_of(prefix)
        if continue_after is not None and continue_after >= prefix:
            low = max(low, self._key(continue_after) + b"\0")
        strip = len(self._root)
        items: builtins.list[KV] = []
        while True:
            want = limit - len(items) if limit > 0 else _CHUNK
            request = rpc.RangeRequest(key=low, range_end=high, limit=want, revision=revision)
            response = await self._range(request, revision)
            revision = revision or int(response.header.revision)  # later pages: same snapshot
            items += [
                KV(kv.key[strip:].decode(), kv.value, kv.mod_revision, kv.create_revision)
                for kv in response.kvs
            ]
            if not response.more or (limit > 0 and len(items) >= limit):
                break
            low = response.kvs[-1].key + b"\0"
        more = bool(response.more) and bool(items)
        # The range's count ignores the limit: what it counted past this response remains.
        remaining = int(response.count) - len(response.kvs) if more else 0
        return ListResult(items, revision, items[-1].key if more else None, remaining)

    async def count(self, prefix: str) -> int:
        low, high = self._range_of(prefix)
        request = rpc.RangeRequest(key=low, range_end=high, count_only=True)
        response = await self._tracked(self._range(request))
        return int(response.count)

    # ---- watch ---------------------------------------------------------------------------

    def watch(self, prefix: str, after_revision: int) -> HubWatch:
        return HubWatch(self._hub, prefix, after_revision, self._too_old, self._compacted)

    def _compacted(self) -> int:
        return self._compacted_to

    async def _too_old(self, prefix: str, after: int, until: int) -> builtins.list[WatchEvent]:
        # Only the hub's window is served (see the module docstring).
        raise Compacted(after, max(self._hub.floor, self._compacted_to))
