"""The work queue's waiting keys: a key waits at most once for a given instant (client-go's
delaying queue keeps only a key's earliest wait; a later one is kept here too, as under a virtual
clock the earlier can land exactly on a boundary real time overshoots)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from taintplane.client.workqueue import WorkQueue
from taintplane.clock import VirtualClock

Script = Callable[[VirtualClock, WorkQueue], Awaitable[None]]


def synced_during(script: Script, *, again: int = 0, every: float = 0.0) -> list[float]:
    """The instants at which key "k" is synced while ``script`` drives the clock and queue;
    each sync asks for ``again`` more, ``every`` seconds after it."""

    async def main() -> list[float]:
        clock = VirtualClock()
        queue = WorkQueue(clock, name="test")
        instants: list[float] = []

        async def sync(key: str) -> None:
            instants.append(clock.monotonic())
            if len(instants) <= again:
                queue.add_after(key, every)

        runner = asyncio.create_task(queue.run(sync))
        await script(clock, queue)
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
        return instants

    return asyncio.run(main())


def synced_at(*delays: float) -> list[float]:
    """The instants at which a key is synced when ``add_after`` is called with each delay at
    time 0, the queue left to run for a minute."""

    async def script(clock: VirtualClock, queue: WorkQueue) -> None:
        for delay in delays:
            queue.add_after("k", delay)
        await clock.advance(60)
        assert clock.pending() == 0  # no timer left behind

    return synced_during(script)


def test_a_key_asked_for_many_times_at_one_deadline_is_synced_once() -> None:
    # A controller asking for a look at the same deadline on each of 300 syncs (the
    # Deployment controller's progress check) gets one sync there, not 300.
    assert synced_at(*[10.0] * 300) == [10.0]


def test_waits_for_different_instants_are_all_kept() -> None:
    assert synced_at(10, 5, 20, 5, 10.0000001) == [5.0, 10.0, 20.0]


def test_a_wait_asked_for_later_at_the_same_instant_is_the_same_wait() -> None:
    async def script(clock: VirtualClock, queue: WorkQueue) -> None:
        queue.add_after("k", 10)
        await clock.advance(3.3)
        queue.add_after("k", 10 - 3.3)  # 6.7: the same deadline, reached through floats
        await clock.advance(60)

    assert synced_during(script) == [10.0]


def test_a_key_waits_again_once_its_wait_is_over() -> None:
    async def script(clock: VirtualClock, queue: WorkQueue) -> None:
        queue.add_after("k", 1)
        await clock.advance(60)

    assert synced_during(script, again=2, every=2) == [1.0, 3.0, 5.0]


def test_a_zero_delay_adds_at_once_beside_a_waiting_one() -> None:
    assert synced_at(10, 0) == [0.0, 10.0]
