"""A keyed work queue on a clock, in the manner of client-go's workqueue.

A key is queued at most once; a key added while it is being processed is processed again
afterwards (never twice at once). ``add_after`` and ``retry`` delay on the component's clock,
so under virtual time a retry happens at an exact instant.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable

from taintplane.clock import Clock

__all__ = ["WorkQueue"]

log = logging.getLogger(__name__)


class WorkQueue:
    def __init__(
        self, clock: Clock, *, name: str, base_delay: float = 0.005, max_delay: float = 1000.0
    ) -> None:
        self.clock = clock
        self.name = name
        self._queue: deque[str] = deque()
        self._queued: set[str] = set()
        self._processing: set[str] = set()
        self._dirty: set[str] = set()
        self._ready = asyncio.Event()
        self._failures: dict[str, int] = {}
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._timers: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._queue)

    def add(self, key: str) -> None:
        if key in self._processing:
            self._dirty.add(key)
            return
        if key not in self._queued:
            self._queued.add(key)
            self._queue.append(key)
            self._ready.set()

    def add_after(self, key: str, seconds: float) -> None:
        if seconds <= 0:
            self.add(key)
            return

        async def later() -> None:
            await self.clock.sleep(seconds)
            self.add(key)

        task = asyncio.create_task(later(), name=f"{self.name}:after")
        self._timers.add(task)
        task.add_done_callback(self._timers.discard)

    def retry(self, key: str) -> None:
        """Add again after an exponentially growing delay (reset by :meth:`forget`)."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        self.add_after(key, min(self._base_delay * 2**failures, self._max_delay))

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)

    async def get(self) -> str:
        while not self._queue:
            self._ready.clear()
            await self._ready.wait()
        key = self._queue.popleft()
        self._queued.discard(key)
        self._processing.add(key)
        return key

    def done(self, key: str) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)

    async def run(self, sync: Callable[[str], Awaitable[None]]) -> None:
        """Process keys one at a time until cancelled; a sync that raises is retried."""
        try:
            while True:
                key = await self.get()
                try:
                    await sync(key)
                    self.forget(key)
                except asyncio.CancelledError:
                    raise
                except Exception:  # one bad key must not stop the controller
                    log.exception("%s: syncing %s failed; retrying", self.name, key)
                    self.retry(key)
                finally:
                    self.done(key)
        finally:
            for timer in list(self._timers):
                timer.cancel()
