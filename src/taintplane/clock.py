"""The one place taintplane reads time.

Every component takes a :class:`Clock`. :class:`RealClock` follows the wall clock;
:class:`VirtualClock` moves only when told to, so tests assert exact instants instead of
sleeping, and ``taintplane up --clock virtual`` can fast-forward a whole cluster.

Advancing a virtual clock wakes sleepers in time order and lets the event loop run until it
is quiet before moving on, so after ``await clock.advance(300)`` returns, every piece of work
that fell due up to then has run.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

__all__ = ["Clock", "RealClock", "VirtualClock", "sleep_or_wake"]


class Clock(Protocol):
    def now(self) -> datetime:
        """The current instant, timezone-aware in UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back, for measuring intervals."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Return once ``seconds`` have passed on this clock (at once for ≤ 0)."""
        ...


class RealClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


#: Added to a ``last`` sleeper's place in the order: after every other (counts stay far below).
_LAST = 1 << 62


class VirtualClock:
    """A clock that stands still until :meth:`advance` moves it."""

    def __init__(self, start: datetime | None = None) -> None:
        self._start = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._elapsed = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._quiescence: list[Callable[[], Awaitable[bool]]] = []
        self._rest_hooks: list[Callable[[], Awaitable[None]]] = []
        #: Where the running :meth:`advance` stops (on :meth:`monotonic`'s scale), or None.
        self.target: float | None = None

    def add_quiescence_check(self, check: Callable[[], Awaitable[bool]]) -> None:
        """Work outside the event loop (a store's writer thread) that :meth:`advance` must wait
        for: ``check`` waits for it and says whether there was any."""
        self._quiescence.append(check)

    def add_rest_hook(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Work run when an :meth:`advance` has reached its instant and the loop is quiet,
        before it returns: writing down what was elided on the way (heartbeats of a steady
        cluster), so that whatever reads the API while time stands still sees it."""
        self._rest_hooks.append(hook)

    async def _quiesce(self) -> None:
        # Until the loop stays idle and no outside work was waited for. The bound only stops
        # a component that spins forever (none should); real work, however much, finishes.
        for _ in range(1_000_000):
            quiet = await settle()
            waited = False
            for check in self._quiescence:
                waited = await check() or waited
            if quiet and not waited:
                return
        raise RuntimeError("the event loop never became quiet: a component is spinning")

    def now(self) -> datetime:
        return self._start + timedelta(seconds=self._elapsed)

    def monotonic(self) -> float:
        return self._elapsed

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._elapsed + seconds, next(self._order), future))
        await future

    async def sleep_until(self, instant: float, *, first: bool = False, last: bool = False) -> None:
        """Return at ``instant`` (on :meth:`monotonic`'s scale, so a loop that counts its own
        float steps lands on them exactly); ``first``: before every other sleeper due then;
        ``last``: after every other sleeper due then (an observer that should see the instant
        as an advance ending there would, without stopping the advance)."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        order = next(self._order)
        if first:
            order = -order
        elif last:
            order += _LAST
        heapq.heappush(self._sleepers, (max(instant, self._elapsed), order, future))
        await future

    def pending(self) -> int:
        """How many sleepers are waiting (cancelled ones excluded)."""
        return sum(1 for _, _, f in self._sleepers if not f.done())

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking each sleeper at its instant, in order, and settling the
        event loop after each so that work it triggers (and its own sleeps) run in time."""
        if seconds < 0:
            raise ValueError("a clock cannot go back")
        target = self._elapsed + seconds
        await self._quiesce()
        self.target = target
        try:
            await self._advance_to(target)
        finally:
            self.target = None

    async def _advance_to(self, target: float) -> None:
        while self._sleepers and self._sleepers[0][0] <= target:
            due, _, future = heapq.heappop(self._sleepers)
            if future.done():
                continue
            self._elapsed = max(self._elapsed, due)
            future.set_result(None)
            await self._quiesce()
        self._elapsed = target
        await self._quiesce()
        for hook in self._rest_hooks:
            await hook()
        if self._rest_hooks:
            await self._quiesce()


async def settle(rounds: int = 64, is_quiet: Callable[[], bool] | None = None) -> bool:
    """Let the running loop run every ready callback, repeatedly, until nothing new is ready;
    whether it got quiet within ``rounds`` turns.

    asyncio has no public "idle" signal; we yield until the loop's ready queue stays empty
    for two consecutive turns (or ``rounds`` turns pass, which bounds busy loops).
    """
    loop = asyncio.get_running_loop()
    quiet_turns = 0
    for _ in range(rounds):
        await asyncio.sleep(0)
        ready = getattr(loop, "_ready", None)
        idle = (ready is not None and len(ready) == 0) and (is_quiet is None or is_quiet())
        quiet_turns = quiet_turns + 1 if idle else 0
        if quiet_turns >= 2:
            return True
    return False


async def sleep_or_wake(clock: Clock, seconds: float | None, wake: asyncio.Event) -> None:
    """Return once ``seconds`` have passed on ``clock`` (never, for None) or ``wake`` is set,
    whichever comes first: the wait of a loop whose next deadline new work can move earlier."""
    waiters: list[asyncio.Future[object]] = [asyncio.ensure_future(wake.wait())]
    if seconds is not None:
        waiters.append(asyncio.ensure_future(clock.sleep(max(seconds, 0.0))))
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
