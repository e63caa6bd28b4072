"""The scheduling queue on virtual time: backoff, event-driven moves, the five-minute flush."""

import asyncio

from taintplane.clock import VirtualClock
from taintplane.scheduler.nodeinfo import PodInfo
from taintplane.scheduler.queue import ClusterEvent, SchedulingQueue
from tests.scheduler.builders import make_pod


def info(name, priority=0):
    return PodInfo.of(make_pod(name, priority=priority))


def run(scenario):
    asyncio.run(scenario())


async def pop_now(queue, clock):
    """The pod that is ready at this instant (fails if none is)."""
    task = asyncio.create_task(queue.pop())
    await clock.advance(0)
    assert task.done(), "no pod was ready"
    return task.result().name


def test_higher_priority_first_then_oldest():
    async def scenario():
        clock = VirtualClock()
        queue = SchedulingQueue(clock)
        queue.add(info("low-1"))
        await clock.advance(1)
        queue.add(info("high", priority=10))
        queue.add(info("low-2"))
        assert [await pop_now(queue, clock) for _ in range(3)] == ["high", "low-1", "low-2"]

    run(scenario)


def test_unschedulable_pods_wait_for_an_event_their_rejecting_plugin_cares_about():
    async def scenario():
        clock = VirtualClock()
        queue = SchedulingQueue(clock)
        queue.add(info("tainted-out"))
        pod = await queue.pop()
        queue.unschedulable(pod, {"TaintToleration"})
        await clock.advance(30)  # backoff (1 s) long over
        queue.on_event(ClusterEvent.NODE_ALLOCATABLE)  # irrelevant to taints
        waiter = asyncio.create_task(queue.pop())
        await clock.advance(0)
        assert not waiter.done()
        queue.on_event(ClusterEvent.NODE_TAINT)
        await clock.advance(0)
        assert waiter.done()
        assert waiter.result().name == "tainted-out"

    run(scenario)


def test_a_move_within_the_backoff_waits_for_the_backoff_while_others_are_active():
    async def scenario():
        clock = VirtualClock()
        queue = SchedulingQueue(clock)
        queue.add(info("p", priority=10))
        queue.unschedulable(await queue.pop(), {"TaintToleration"})
        queue.on_event(ClusterEvent.NODE_TAINT)  # immediately: still backing off (1 s)
        queue.add(info("other"))
        # The backoff queue is only a fallback: an active pod goes first, whatever its priority.
        assert await pop_now(queue, clock) == "other"
        assert queue.pending() == {"backoff": 1, "inflight": 1}
        # Its backoff over (the window after its expiry's), it is active again.
        await clock.advance(1.9)
        queue.add(info("late"))
        assert await pop_now(queue, clock) == "late"
        assert queue.pending()["backoff"] == 1
        await clock.advance(0.1)
        queue.add(info("later"))
        assert await pop_now(queue, clock) == "p"

    run(scenario)


def test_with_the_active_queue_empty_a_backing_off_pod_is_tried_at_once():
    """SchedulerPopFromBackoffQ (on by default since 1.33): no idling while a rejected pod
    waits out its backoff."""

    async def scenario():
        clock = VirtualClock()
        queue = SchedulingQueue(clock)
        queue.add(info("p"))
        queue.unschedulable(await queue.pop(), {"NodeUnschedulable"})
        queue.on_event(ClusterEvent.NODE_SCHEDULABLE)  # a node uncordoned at the same instant
        assert queue.pending() == {"backoff": 1}
        assert await pop_now(queue, clock) == "p"

    run(scenario)


def test_the_backoff_queue_orders_by_expiry_window_then_as_the_active_queue():
    async def scenario():
        clock = VirtualClock()
        queue = SchedulingQueue(clock)
        for name, priority in (("early-low", 0), ("low", 0), ("high", 5)):
            queue.add(info(name, priority=priority))
        pods = [await queue.pop() for _ in range(3)]  # high, early-low, low
        queue.on_event(ClusterEvent.NODE_TAINT)  # during their cycles: all go to backoff
        queue.unschedulable(pods[1], {"TaintToleration"})  # early-low: expiry window [1, 2)
        await clock.advance(0.5)
        queue.unschedulable(pods[2], {"TaintToleration"})  # expiry 1.5: the same window
        queue.unschedulable(pods[0], {"TaintToleration"})
        assert [await pop_now(queue, clock) for _ in range(3)] == ["high", "early-low", "low"]

    run(scenario)


def test_the_next_window_comes_after_whatever_the_priority():
    async def scenario():
        clock = VirtualClock()
        queue = SchedulingQueue(clock)
        queue.add(info("low"))
        queue.add(info("high", priority=5))
        high = await queue.pop()
        low = await queue.pop()
        queue.on_event(ClusterEvent.NODE_TAINT)
        queue.unschedulable(low, {"TaintToleration"})  # expiry window [1, 2)
        await clock.advance(1)
        queue.unschedulable(high, {"TaintToleration"})  # expiry window [2, 3)
        assert [await pop_now(queue, clock) for _ in range(2)] == ["low", "high"]

    run(scenario)


def test_an_event_during_the_cycle_sends_the_failed_pod_to_backoff_not_limbo():
    async def scenario():
        clock = VirtualClock()
        queue = SchedulingQueue(clock)
        queue.add(info("p"))
        pod = await queue.pop()
        queue.on_event(ClusterEvent.NODE_ADD)  # while "p" is being scheduled
        queue.unschedulable(pod, {"TaintToleration"})
        waiter = asyncio.create_task(queue.pop())
        await clock.advance(1)
        assert waiter.done()

    run(scenario)


def test_unschedulable_pods_are_retried_after_five_minutes_anyway():
    async def scenario():
        clock = VirtualClock()
        queue = SchedulingQueue(clock)
        queue.add(info("forgotten"))
        queue.unschedulable(await queue.pop(), {"NodeAffinity"})
        waiter = asyncio.create_task(queue.pop())
        await clock.advance(299)
        assert not waiter.done()
        await clock.advance(1)
        assert waiter.done()

    run(scenario)


def test_backoff_doubles_per_attempt_up_to_ten_seconds():
    async def scenario():
        clock = VirtualClock()
        queue = SchedulingQueue(clock)
        queue.add(info("erring"))
        pod = await queue.pop()
        delays = []
        for _ in range(6):
            await clock.advance(0.5)  # mid-window: expiries are truncated to whole seconds
            queue.error(pod)
            started = clock.monotonic()
            waiter = asyncio.create_task(queue.pop())
            while not waiter.done():
                await clock.advance(0.5)
            delays.append(clock.monotonic() - started)
            pod = waiter.result()
        # A pod that failed with an error is not popped early (upstream's podErrorBackoffQ):
        # it waits for the window after the one its expiry falls in.
        assert delays == [1.5, 2.5, 4.5, 8.5, 10.5, 10.5]

    run(scenario)


def test_deleted_pods_leave_the_queue():
    async def scenario():
        clock = VirtualClock()
        queue = SchedulingQueue(clock)
        queue.add(info("gone"))
        queue.add(info("kept"))
        queue.delete("default/gone")
        assert await pop_now(queue, clock) == "kept"
        assert "default/gone" not in queue

    run(scenario)


def test_a_status_change_is_kept_for_the_next_attempt_without_moving_the_pod():
    """Upstream's Update when the pod's spec did not change: the newer object replaces the
    queued one in place, so the next attempt (and its events) is about that version."""

    async def scenario():
        clock = VirtualClock()
        queue = SchedulingQueue(clock)
        queue.add(info("waiting"))
        pod = await queue.pop()
        queue.unschedulable(pod, {"TaintToleration"})
        newer = make_pod("waiting")
        newer["metadata"]["resourceVersion"] = "42"
        newer["status"] = {"conditions": [{"type": "PodScheduled", "status": "False"}]}
        queue.refresh(PodInfo.of(newer))
        waiter = asyncio.create_task(queue.pop())
        await clock.advance(30)
        assert not waiter.done()  # not moved: still waiting for an event it cares about
        queue.on_event(ClusterEvent.NODE_TAINT)
        await clock.advance(0)
        assert waiter.result().pod["metadata"]["resourceVersion"] == "42"
        stranger = info("never-queued")
        queue.refresh(stranger)  # not queued: nothing to keep, nothing added
        assert stranger.key not in queue

    run(scenario)
