import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from taintplane.clock import RealClock, VirtualClock


def test_real_clock_is_utc_and_monotonic():
    clock = RealClock()
    assert clock.now().tzinfo is UTC
    first = clock.monotonic()
    assert clock.monotonic() >= first


def test_real_clock_sleep_of_zero_returns():
    asyncio.run(RealClock().sleep(0))


def test_virtual_clock_stands_still_until_advanced():
    start = datetime(2030, 5, 1, tzinfo=UTC)
    clock = VirtualClock(start)
    assert clock.now() == start

    async def scenario():
        await clock.advance(90)
        assert clock.now() == start + timedelta(seconds=90)
        assert clock.monotonic() == 90

    asyncio.run(scenario())


def test_sleepers_wake_at_their_instant_in_order():
    clock = VirtualClock()
    woke: list[tuple[str, float]] = []

    async def sleeper(name, seconds):
        await clock.sleep(seconds)
        woke.append((name, clock.monotonic()))

    async def scenario():
        tasks = [asyncio.create_task(sleeper(n, s)) for n, s in [("c", 30), ("a", 10), ("b", 20)]]
        await clock.advance(0)
        assert clock.pending() == 3
        await clock.advance(25)
        assert woke == [("a", 10), ("b", 20)]
        await clock.advance(5)
        assert woke == [("a", 10), ("b", 20), ("c", 30)]
        await asyncio.gather(*tasks)

    asyncio.run(scenario())


def test_work_triggered_by_a_wakeup_runs_in_the_same_advance():
    clock = VirtualClock()
    woke: list[float] = []

    async def chain():
        await clock.sleep(10)
        woke.append(clock.monotonic())
        await clock.sleep(10)  # falls due inside the same advance
        woke.append(clock.monotonic())

    async def scenario():
        task = asyncio.create_task(chain())
        await clock.advance(0)
        await clock.advance(60)
        assert woke == [10, 20]
        assert clock.monotonic() == 60
        await task

    asyncio.run(scenario())


def test_cancelled_sleepers_are_skipped_and_time_cannot_go_back():
    clock = VirtualClock()

    async def scenario():
        task = asyncio.create_task(clock.sleep(5))
        await clock.advance(0)
        task.cancel()
        await clock.advance(10)
        assert clock.pending() == 0
        with pytest.raises(ValueError, match="cannot go back"):
            await clock.advance(-1)
        await clock.sleep(0)

    asyncio.run(scenario())


def test_advance_waits_for_work_outside_the_loop_before_moving_on():
    import concurrent.futures

    clock = VirtualClock()
    pool = concurrent.futures.ThreadPoolExecutor(1)
    inflight: set[asyncio.Future[None]] = set()
    log: list[tuple[str, float]] = []

    async def drained() -> bool:
        if not inflight:
            return False
        await asyncio.gather(*inflight)
        return True

    clock.add_quiescence_check(drained)

    async def ticker():
        for _ in range(3):
            await clock.sleep(10)
            future = asyncio.get_running_loop().run_in_executor(pool, lambda: None)
            inflight.add(future)
            future.add_done_callback(inflight.discard)
            await future  # a thread's work between two sleeps
            log.append(("tick", clock.monotonic()))

    async def scenario():
        task = asyncio.create_task(ticker())
        await clock.advance(0)
        await clock.advance(30)
        assert log == [("tick", 10), ("tick", 20), ("tick", 30)]
        await task

    asyncio.run(scenario())
    pool.shutdown()


def test_sleep_until_lands_on_the_instant_and_first_goes_before_others_due_then():
    clock = VirtualClock()
    order: list[tuple[str, float]] = []

    async def sleeper(name: str, instant: float, first: bool = False) -> None:
        await clock.sleep_until(instant, first=first)
        order.append((name, clock.monotonic()))

    async def scenario() -> None:
        tasks = [
            asyncio.ensure_future(sleeper("plain", 30.0)),
            asyncio.ensure_future(sleeper("first", 30.0, first=True)),
            asyncio.ensure_future(sleeper("early", 10.5)),
        ]
        await clock.advance(60)
        await asyncio.gather(*tasks)

    asyncio.run(scenario())
    assert order == [("early", 10.5), ("first", 30.0), ("plain", 30.0)]


def test_a_last_sleeper_wakes_after_every_other_due_then_even_ones_queued_after_it():
    clock = VirtualClock()
    order: list[str] = []

    async def sleeper(name: str, instant: float, *, last: bool = False) -> None:
        await clock.sleep_until(instant, last=last)
        order.append(name)

    async def scenario() -> None:
        observer = asyncio.ensure_future(sleeper("observer", 30.0, last=True))
        await asyncio.sleep(0)
        others = [asyncio.ensure_future(sleeper(n, 30.0)) for n in ("a", "b")]
        others.append(asyncio.ensure_future(clock.sleep(30.0)))
        await clock.advance(30)
        await asyncio.gather(observer, *others)

    asyncio.run(scenario())
    assert order == ["a", "b", "observer"]


def test_rest_hooks_run_when_an_advance_has_reached_its_instant_and_target_is_known_meanwhile():
    clock = VirtualClock()
    seen: list[tuple[str, float, float | None]] = []

    async def hook() -> None:
        seen.append(("rest", clock.monotonic(), clock.target))

    async def sleeper() -> None:
        await clock.sleep(5)
        seen.append(("woke", clock.monotonic(), clock.target))

    async def scenario() -> None:
        clock.add_rest_hook(hook)
        task = asyncio.ensure_future(sleeper())
        await clock.advance(20)
        await task

    asyncio.run(scenario())
    assert seen == [("woke", 5.0, 20.0), ("rest", 20.0, 20.0)]
    assert clock.target is None
