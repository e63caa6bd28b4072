"""Rate limiting of NoExecute tainting: a token bucket and upstream's RateLimitedTimedQueue.

Semantics kept from upstream (``nodelifecycle/scheduler/rate_limited_queue.go``):

- The bucket holds at most one token (burst 1) and starts full; a rate of 0 never admits.
- ``try_each`` takes a token *before* looking at the head's due time (a head that is not yet
  due still spends one), stops at the first refusal, and re-queues a failed item after the
  wait it asks for.
- An item processed successfully leaves the queue but stays in the set, so it cannot be
  added again until it is explicitly removed (the node became healthy, or lost its taint).
- Swapping in a new rate keeps a drained bucket drained.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from taintplane.clock import Clock

__all__ = ["RateLimitedTimedQueue", "TimedValue", "TokenBucket"]


class TokenBucket:
    """A token bucket on a clock; ``qps`` ≤ 0 is upstream's "never" limiter."""

    def __init__(self, clock: Clock, qps: float, burst: int = 1) -> None:
        self.clock = clock
        self.qps = qps
        self.burst = burst
        self._tokens = float(burst)
        self._last = clock.monotonic()

    def _refill(self) -> None:
        now = self.clock.monotonic()
        if self.qps > 0:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now

    def try_accept(self) -> bool:
        if self.qps <= 0:
            return False
        self._refill()
        if self._tokens >= 1.0 - 1e-9:
            self._tokens = max(0.0, self._tokens - 1.0)
            return True
        return False

    def seconds_until_token(self) -> float | None:
        """How long until a token is available (None: never)."""
        if self.qps <= 0:
            return None
        self._refill()
        missing = 1.0 - self._tokens
        return 0.0 if missing <= 1e-9 else missing / self.qps


@dataclass(order=True)
class TimedValue:
    process_at: datetime
    sequence: int
    value: str
    uid: str = ""
    added_at: datetime | None = None


class RateLimitedTimedQueue:
    """Upstream's queue, its items in a heap by (due instant, order added). A value has at
    most one item queued: ``_queued`` holds it, and an item no longer there (its value
    removed, perhaps added again since) is left in the heap to be dropped when it reaches the
    head. Removing a value is then O(1) rather than a walk and re-heap of the whole queue:
    the controller removes and re-adds every untainted unhealthy node at every pass, so a
    zone outage of N nodes cost O(N²) a pass."""

    def __init__(self, clock: Clock, qps: float) -> None:
        self.clock = clock
        self.limiter = TokenBucket(clock, qps)
        self._heap: list[TimedValue] = []
        self._queued: dict[str, TimedValue] = {}
        self._set: set[str] = set()
        self._order = itertools.count()

    def __len__(self) -> int:
        return len(self._queued)

    def __contains__(self, value: str) -> bool:
        return value in self._set

    def add(self, value: str, uid: str = "") -> bool:
        if value in self._set:
            return False
        now = self.clock.now()
        self._push(TimedValue(now, next(self._order), value, uid, now))
        self._set.add(value)
        return True

    def remove(self, value: str) -> bool:
        """Forget the value entirely (it may be added again)."""
        if value not in self._set:
            return False
        self._set.discard(value)
        self._queued.pop(value, None)
        return True

    def _push(self, item: TimedValue) -> None:
        heapq.heappush(self._heap, item)
        self._queued[item.value] = item

    def _head(self) -> TimedValue | None:
        """The first item still queued, the removed ones before it dropped."""
        heap = self._heap
        while heap:
            head = heap[0]
            if self._queued.get(head.value) is head:
                return head
            heapq.heappop(heap)
        return None

    def swap_limiter(self, qps: float) -> None:
        if self.limiter.qps == qps:
            return
        fresh = TokenBucket(self.clock, qps)
        if qps > 0 and not self.limiter.try_accept():
            fresh.try_accept()  # we were waiting on the old bucket: start the new one drained
        self.limiter = fresh

    def refill_limiter(self, qps: float) -> None:
        """A new, full bucket at ``qps``, whatever the old one held."""
        self.limiter = TokenBucket(self.clock, qps)

    async def try_each(self, work: Callable[[TimedValue], Awaitable[tuple[bool, float]]]) -> None:
        """Process due items while tokens last; ``work`` says (done, retry after seconds)."""
        while (head := self._head()) is not None:
            if not self.limiter.try_accept():
                return
            now = self.clock.now()
            if now < head.process_at:
                return
            done, wait = await work(head)
            if self._queued.get(head.value) is not head:
                continue  # removed (or removed and added again) while we worked on it
            # Still first: whatever was added meanwhile is due at ``now`` or later and came
            # after it (a heap whose top moved all the same is mended the slow way).
            if self._heap[0] is head:
                heapq.heappop(self._heap)
            else:
                self._heap.remove(head)
                heapq.heapify(self._heap)
            del self._queued[head.value]
            if not done:
                self._push(
                    TimedValue(
                        now + timedelta(seconds=wait + 1e-9),
                        next(self._order),
                        head.value,
                        head.uid,
                        head.added_at,
                    )
                )

    def next_due(self) -> float | None:
        """Seconds until :meth:`try_each` could make progress (None: it never will)."""
        first = self._head()
        if first is None:
            return None
        token = self.limiter.seconds_until_token()
        if token is None:
            return None
        head = (first.process_at - self.clock.now()).total_seconds()
        return max(token, head, 0.0)
