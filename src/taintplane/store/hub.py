"""In-process watch fan-out shared by the backends.

The backend publishes every committed change, in revision order, on the event loop thread.
The hub keeps the most recent changes in a ring buffer (so a watcher resuming from a recent
revision replays from memory) and feeds each subscriber's queue synchronously at publish
time, so a watcher whose queue is empty has seen everything up to ``last_revision``.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from taintplane.store.errors import Compacted
from taintplane.store.interface import WatchEvent

__all__ = ["HubWatch", "WatchHub"]

#: A watcher this far behind is cut off; the client re-watches (and relists if compacted).
MAX_QUEUED = 200_000


@dataclass(eq=False)
class _Subscriber:
    prefix: str
    queue: asyncio.Queue[WatchEvent | None] = field(default_factory=asyncio.Queue)
    overflowed: bool = False


class WatchHub:
    def __init__(self, buffer_size: int = 20_000) -> None:
        self._buffer: deque[WatchEvent] = deque(maxlen=buffer_size)
        self._subscribers: set[_Subscriber] = set()
        self.last_revision = 0
        #: Every change after this revision is in the buffer (it rises as old ones drop out).
        #: Not "the first buffered revision minus one": revisions may have gaps (etcd's are
        #: shared with keys outside our prefix).
        self.floor = 0

    def start_at(self, revision: int) -> None:
        self.last_revision = revision
        self.floor = revision

    def reset(self, revision: int) -> None:
        """Changes up to ``revision`` were lost (the backend's feed fell behind compaction):
        cut every watcher off (each re-watches and gets 410) and start again after it."""
        self.close_all()
        self._subscribers.clear()
        self._buffer.clear()
        self.start_at(max(revision, self.last_revision))

    def publish(self, events: Iterable[WatchEvent]) -> None:
        for event in events:
            if len(self._buffer) == self._buffer.maxlen:
                self.floor = self._buffer[0].revision
            self._buffer.append(event)
            self.last_revision = event.revision
            for sub in self._subscribers:
                if not event.key.startswith(sub.prefix) or sub.overflowed:
                    continue
                if sub.queue.qsize() >= MAX_QUEUED:
                    sub.overflowed = True
                    sub.queue.put_nowait(None)
                else:
                    sub.queue.put_nowait(event)

    def close_all(self) -> None:
        for sub in self._subscribers:
            sub.queue.put_nowait(None)

    def buffered_since(self, after_revision: int) -> list[WatchEvent] | None:
        """Buffered events after ``after_revision``, or ``None`` if the buffer starts too late."""
        if after_revision < self.floor:
            return None  # changes between after_revision and the floor are not here
        return [e for e in self._buffer if e.revision > after_revision]

    def subscribe(self, prefix: str) -> _Subscriber:
        sub = _Subscriber(prefix)
        self._subscribers.add(sub)
        return sub

    def unsubscribe(self, sub: _Subscriber) -> None:
        self._subscribers.discard(sub)


ReplayFn = Callable[[str, int, int], Awaitable[list[WatchEvent]]]
CompactRevisionFn = Callable[[], int]


class HubWatch:
    """One watcher: replay from ``after_revision`` (buffer, or the backend's log), then live."""

    def __init__(
        self,
        hub: WatchHub,
        prefix: str,
        after_revision: int,
        replay: ReplayFn,
        compact_revision: CompactRevisionFn,
    ) -> None:
        self._hub = hub
        self._prefix = prefix
        self._after = after_revision
        self._replay = replay
        self._compact_revision = compact_revision
        # Subscribe first: nothing committed from here on can be missed.
        self._sub = hub.subscribe(prefix)
        self._subscribed_at = hub.last_revision
        self._closed = False
        self._replaying = True
        self._iterator: AsyncIterator[WatchEvent] | None = None

    def bookmark_revision(self) -> int | None:
        if self._replaying or not self._sub.queue.empty():
            return None
        # A watch may start after the hub's last change (a list read a newer revision than
        # the backend's feed has delivered yet): everything up to its start is covered too.
        return max(self._hub.last_revision, self._after)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._hub.unsubscribe(self._sub)
            self._sub.queue.put_nowait(None)

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        # One iterator per watch: iterating again continues where the last loop stopped.
        if self._iterator is None:
            self._iterator = self._events()
        return self._iterator

    async def _events(self) -> AsyncIterator[WatchEvent]:
        try:
            compacted_to = self._compact_revision()
            if self._after < compacted_to:
                raise Compacted(self._after, compacted_to)
            last = self._after
            if self._after < self._subscribed_at:
                buffered = self._hub.buffered_since(self._after)
                if buffered is None:
                    backlog = await self._replay(self._prefix, self._after, self._subscribed_at)
                else:
                    backlog = [e for e in buffered if e.key.startswith(self._prefix)]
                for event in backlog:
                    if event.revision > self._subscribed_at:
                        break
                    last = event.revision
                    yield event
            self._replaying = False
            while not self._closed:
                item = await self._sub.queue.get()
                if item is None:
                    return
                if item.revision <= last:
                    continue
                last = item.revision
                yield item
        finally:
            self.close()
