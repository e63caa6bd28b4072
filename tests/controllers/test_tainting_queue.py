"""The node lifecycle controller's rate-limited queue drops a removed value's item lazily (when
it reaches the head) instead of walking and re-heaping the whole queue: over random histories
of adds, removes (also from inside the work), retries, tokens and time, it processes exactly
what a queue that removes items at once processes, in the same order, and agrees on its length,
membership and next due time after every step."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from taintplane.clock import Clock
from taintplane.controllers.nodelifecycle.queue import (
    RateLimitedTimedQueue,
    TimedValue,
    TokenBucket,
)

VALUES = ("a", "b", "c", "d", "e")


class FakeClock:
    def __init__(self) -> None:
        self.elapsed = 0.0

    def monotonic(self) -> float:
        return self.elapsed

    def now(self) -> datetime:
        return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=self.elapsed)


class EagerQueue:
    """The queue as it was: a removed value's item leaves the heap at once."""

    def __init__(self, clock: Clock, qps: float) -> None:
        self.clock = clock
        self.limiter = TokenBucket(clock, qps)
        self.items: list[TimedValue] = []
        self.set: set[str] = set()
        self.order = itertools.count()

    def __len__(self) -> int:
        return len(self.items)

    def __contains__(self, value: str) -> bool:
        return value in self.set

    def add(self, value: str, uid: str = "") -> bool:
        if value in self.set:
            return False
        now = self.clock.now()
        self.items.append(TimedValue(now, next(self.order), value, uid, now))
        self.set.add(value)
        return True

    def remove(self, value: str) -> bool:
        if value not in self.set:
            return False
        self.set.discard(value)
        self.items = [item for item in self.items if item.value != value]
        return True

    async def try_each(self, work: Callable[[TimedValue], Awaitable[tuple[bool, float]]]) -> None:
        while self.items:
            head = min(self.items)
            if not self.limiter.try_accept():
                return
            now = self.clock.now()
            if now < head.process_at:
                return
            done, wait = await work(head)
            if head.value not in self.set or not any(i is head for i in self.items):
                continue
            self.items = [i for i in self.items if i is not head]
            if not done:
                retry = TimedValue(
                    now + timedelta(seconds=wait + 1e-9),
                    next(self.order),
                    head.value,
                    head.uid,
                    head.added_at,
                )
                self.items.append(retry)

    def next_due(self) -> float | None:
        if not self.items:
            return None
        token = self.limiter.seconds_until_token()
        if token is None:
            return None
        head = (min(self.items).process_at - self.clock.now()).total_seconds()
        return max(token, head, 0.0)


#: What a piece of work answers, and what it does to the queue meanwhile.
OUTCOMES = st.tuples(
    st.booleans(),
    st.sampled_from([0.0, 0.05, 3.0]),
    st.none() | st.tuples(st.sampled_from(["add", "remove"]), st.sampled_from(VALUES)),
)
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.sampled_from(VALUES)),
        st.tuples(st.just("remove"), st.sampled_from(VALUES)),
        st.tuples(st.just("wait"), st.sampled_from([0.5, 1.0, 4.0, 10.0])),
        st.tuples(st.just("try"), st.lists(OUTCOMES, max_size=6)),
        st.tuples(st.just("rate"), st.sampled_from([0.0, 0.1, 1.0, 10.0])),
    ),
    max_size=50,
)


def _play(queue: Any, clock: FakeClock, steps: list[Any]) -> list[Any]:
    """The history as the queue lived it: what each step answered and what it processed."""
    seen: list[Any] = []

    async def run() -> None:
        for step in steps:
            if step[0] == "add":
                seen.append(("add", queue.add(step[1])))
            elif step[0] == "remove":
                seen.append(("remove", queue.remove(step[1])))
            elif step[0] == "wait":
                clock.elapsed += step[1]
            elif step[0] == "rate":
                queue.limiter = TokenBucket(cast(Clock, clock), step[1])
            else:
                await queue.try_each(_worker(queue, iter(step[1]), seen))
            seen.append(("state", len(queue), [v for v in VALUES if v in queue], queue.next_due()))

    asyncio.run(run())
    return seen


def _worker(
    queue: Any, script: Any, seen: list[Any]
) -> Callable[[TimedValue], Awaitable[tuple[bool, float]]]:
    """Work that answers from ``script`` and may change the queue while it runs."""

    async def work(item: TimedValue) -> tuple[bool, float]:
        done, wait, meanwhile = next(script, (True, 0.0, None))
        seen.append(("work", item.value, item.process_at, item.sequence))
        if meanwhile is not None:
            getattr(queue, meanwhile[0])(meanwhile[1])
        await asyncio.sleep(0)
        return done, wait

    return work


@settings(max_examples=500, deadline=None)
@given(STEPS, st.sampled_from([0.1, 1.0, 10.0]))
def test_lazy_removal_processes_what_eager_removal_does(steps: list[Any], qps: float) -> None:
    lazy_clock, eager_clock = FakeClock(), FakeClock()
    lazy = RateLimitedTimedQueue(cast(Clock, lazy_clock), qps)
    eager = EagerQueue(cast(Clock, eager_clock), qps)
    assert _play(lazy, lazy_clock, steps) == _play(eager, eager_clock, steps)
