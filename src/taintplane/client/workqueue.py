"""A keyed work queue on a clock, in the manner of client-go's workqueue.

A key is queued at most once; a key added while it is being processed is processed again
afterwards (never twice at once). ``add_after`` and ``retry`` delay on the component's clock,
so under virtual time a retry happens at an exact instant. A key waits at most once for a given
instant: a controller that asks on every sync for a look at the same deadline gets one sync
there, not one per request (client-go's delaying queue keeps even fewer: only the earliest wait
of a key. Here a later one is kept too, because under a virtual clock the earlier one can land
exactly on a boundary that real time always overshoots, e.g. a DaemonSet pod that becomes
available strictly after ``minReadySeconds``, and upstream adds a second for that skew).

``retry`` is client-go's ``AddRateLimited`` with ``DefaultControllerRateLimiter``: the longer of
a per-key exponential delay (reset by ``forget``, 5 ms doubling up to 1000 s) and the wait for a
token from one bucket the whole queue shares (10 a second, 100 at most). A key that keeps being
retried after every successful sync (forgotten each time) is so held at 10 syncs a second
instead of one every 5 ms.

Each named queue keeps client-go's ``workqueue_*`` metrics (:mod:`.queue_metrics`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable

import httpx

from taintplane.client.client import ApiError
from taintplane.client.queue_metrics import QueueMetrics
from taintplane.clock import Clock

__all__ = ["EXPECTED", "TokenBucket", "WorkQueue"]

log = logging.getLogger(__name__)

#: Failures a sync may meet in normal operation (and retries): refusals by the API server and
#: a server out of reach. Anything else is logged with its traceback.
EXPECTED = (ApiError, httpx.TransportError, ConnectionError, TimeoutError)


class TokenBucket:
    """client-go's ``BucketRateLimiter`` (golang.org/x/time/rate) on a clock: ``qps`` tokens a
    second up to ``burst``; every reservation takes one at once, and the bucket goes into debt,
    so each reservation waits for the tokens the earlier ones borrowed."""

    def __init__(self, clock: Clock, *, qps: float, burst: int) -> None:
        self.clock = clock
        self.qps = qps
        self.burst = burst
        self._tokens = float(burst)
        self._last = clock.monotonic()

    def reserve(self) -> float:
        """Take a token; the seconds until it is there (0 when the bucket has one)."""
        now = self.clock.monotonic()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1
        return -self._tokens / self.qps if self._tokens < 0 else 0.0


class WorkQueue:
    def __init__(
        self,
        clock: Clock,
        *,
        name: str,
        base_delay: float = 0.005,
        max_delay: float = 1000.0,
        qps: float = 10.0,
        burst: int = 100,
        failure: str = 'error syncing "{key}": {error}, requeuing',
        expected: tuple[type[Exception], ...] = (),
    ) -> None:
        self.clock = clock
        self.name = name
        #: How an expected sync failure is worded (``{key}``, ``{error}``): upstream's
        #: controllers each word their HandleError line (resourceclaim: ``%v failed with: %v``).
        self.failure = failure
        #: Failures besides the API's that are the controller's to retry, logged in one line
        #: (a namespace whose content is still there), not as a bug with its traceback.
        self.expected: tuple[type[Exception], ...] = (*EXPECTED, *expected)
        self._queue: deque[str] = deque()
        self._queued: set[str] = set()
        self._processing: set[str] = set()
        self._dirty: set[str] = set()
        self._ready = asyncio.Event()
        self._failures: dict[str, int] = {}
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._bucket = TokenBucket(clock, qps=qps, burst=burst)
        self._timers: set[asyncio.Task[None]] = set()
        #: (key, instant on the clock's monotonic scale, to the microsecond) of each wait.
        self._waiting: set[tuple[str, float]] = set()
        self.metrics = QueueMetrics(clock, name)

    def __len__(self) -> int:
        return len(self._queue)

    def add(self, key: str) -> None:
        if key in self._queued or key in self._dirty:
            return
        self.metrics.add(key)
        if key in self._processing:
            self._dirty.add(key)
            return
        self._push(key)

    def _push(self, key: str) -> None:
        self._queued.add(key)
        self._queue.append(key)
        self._ready.set()

    def add_after(self, key: str, seconds: float) -> None:
        self.metrics.retry()
        if seconds <= 0:
            self.add(key)
            return
        wait = (key, round(self.clock.monotonic() + seconds, 6))
        if wait in self._waiting:
            return  # already due then
        self._waiting.add(wait)

        async def later() -> None:
            try:
                await self.clock.sleep(seconds)
            finally:
                self._waiting.discard(wait)
            self.add(key)

        task = asyncio.create_task(later(), name=f"{self.name}:after")
        self._timers.add(task)
        task.add_done_callback(self._timers.discard)

    def retry(self, key: str) -> None:
        """Add again after an exponentially growing delay (reset by :meth:`forget`), or later
        if the queue's bucket is out of tokens (client-go's ``MaxOfRateLimiter``: both are
        consulted, so the bucket is charged even when the per-key delay is the longer)."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        backoff = min(self._base_delay * 2**failures, self._max_delay)
        self.add_after(key, max(backoff, self._bucket.reserve()))

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)

    async def get(self) -> str:
        while not self._queue:
            self._ready.clear()
            await self._ready.wait()
        key = self._queue.popleft()
        self._queued.discard(key)
        self.metrics.get(key)
        self._processing.add(key)
        return key

    def done(self, key: str) -> None:
        self.metrics.done(key)
        self._processing.discard(key)
        if key in self._dirty:
            # Counted as added when it was added during processing; it only waits now.
            self._dirty.discard(key)
            self._push(key)

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
                except self.expected as error:
                    # The API refused a write, or was out of reach: the controller's business
                    # to retry, not a crash. One line, as client-go's controllers log it.
                    log.error(
                        "%s: %s",
                        self.name,
                        self.failure.format(key=key, error=error),
                        exc_info=log.isEnabledFor(logging.INFO),
                    )
                    self.retry(key)
                except Exception:  # a bug; one bad key must still not stop the controller
                    log.exception('%s: error syncing "%s", requeuing', self.name, key)
                    self.retry(key)
                finally:
                    self.done(key)
        finally:
            for timer in list(self._timers):
                timer.cancel()
