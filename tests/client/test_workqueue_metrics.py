"""client-go's workqueue_* metrics on a virtual clock: adds, depth and retries counted where
client-go's queue counts them, durations exact on the queue's clock."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import generate_latest

from taintplane.client.queue_metrics import (
    DURATION_BUCKETS,
    QueueMetrics,
    WorkQueueCollector,
    queue_metrics_of,
)
from taintplane.client.workqueue import WorkQueue
from taintplane.clock import VirtualClock

NAME = "device-taint-eviction-controller"
LABEL = f'name="{NAME}"'

# component-base/metrics/prometheus/workqueue/metrics.go
EXPECTED_HELP = {
    "workqueue_adds_total": "[BETA] Total number of adds handled by workqueue",
    "workqueue_depth": "[BETA] Current depth of workqueue",
    "workqueue_longest_running_processor_seconds": "[BETA] How many seconds has the longest "
    "running processor for workqueue been running.",
    "workqueue_queue_duration_seconds": "[BETA] How long in seconds an item stays in workqueue "
    "before being requested.",
    "workqueue_retries_total": "[BETA] Total number of retries handled by workqueue",
    "workqueue_unfinished_work_seconds": "[BETA] How many seconds of work has done that is in "
    "progress and hasn't been observed by work_duration. Large values indicate stuck threads. "
    "One can deduce the number of stuck threads by observing the rate at which this increases.",
    "workqueue_work_duration_seconds": "[BETA] How long in seconds processing an item from "
    "workqueue takes.",
}


def scrape(*queues: QueueMetrics) -> dict[str, float]:
    text = generate_latest(WorkQueueCollector(list(queues))).decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, _, value = line.rpartition(" ")
            samples[series] = float(value)
    return samples


def helps(*queues: QueueMetrics) -> dict[str, str]:
    text = generate_latest(WorkQueueCollector(list(queues))).decode()
    return {
        name: help_text
        for name, _, help_text in (
            line.removeprefix("# HELP ").partition(" ")
            for line in text.splitlines()
            if line.startswith("# HELP ")
        )
    }


def test_buckets_are_component_base_exponential_buckets() -> None:
    # ExponentialBuckets(10e-7, 10, 10), with Go's rounding of repeated multiplication.
    assert DURATION_BUCKETS[0] == 1e-6
    assert len(DURATION_BUCKETS) == 10
    assert repr(DURATION_BUCKETS[1]) == "9.999999999999999e-06"
    assert DURATION_BUCKETS[3:] == (0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)


def test_help_texts_carry_upstreams_beta_level() -> None:
    assert helps(WorkQueue(VirtualClock(), name=NAME).metrics) == EXPECTED_HELP


def test_adds_depth_and_durations_are_exact_on_the_virtual_clock() -> None:
    async def main() -> None:
        clock = VirtualClock()
        queue = WorkQueue(clock, name=NAME)
        queue.add("a")
        queue.add("a")  # already waiting: not an add
        queue.add("b")
        metrics = scrape(queue.metrics)
        assert metrics[f"workqueue_adds_total{{{LABEL}}}"] == 2
        assert metrics[f"workqueue_depth{{{LABEL}}}"] == 2

        await clock.advance(2)
        assert await queue.get() == "a"
        await clock.advance(3)
        metrics = scrape(queue.metrics)
        assert metrics[f"workqueue_depth{{{LABEL}}}"] == 1
        assert metrics[f"workqueue_unfinished_work_seconds{{{LABEL}}}"] == 3
        assert metrics[f"workqueue_longest_running_processor_seconds{{{LABEL}}}"] == 3
        assert metrics[f"workqueue_queue_duration_seconds_count{{{LABEL}}}"] == 1
        assert metrics[f"workqueue_queue_duration_seconds_sum{{{LABEL}}}"] == 2

        # Added again while processed: an add, and waiting (depth) though not yet queued.
        queue.add("a")
        queue.add("a")
        metrics = scrape(queue.metrics)
        assert metrics[f"workqueue_adds_total{{{LABEL}}}"] == 3
        assert metrics[f"workqueue_depth{{{LABEL}}}"] == 2

        queue.done("a")  # back in the queue without counting a second add
        assert [await queue.get(), await queue.get()] == ["b", "a"]
        metrics = scrape(queue.metrics)
        assert metrics[f"workqueue_adds_total{{{LABEL}}}"] == 3
        assert metrics[f"workqueue_depth{{{LABEL}}}"] == 0
        assert metrics[f"workqueue_work_duration_seconds_count{{{LABEL}}}"] == 1
        assert metrics[f"workqueue_work_duration_seconds_sum{{{LABEL}}}"] == 3
        # b waited 5 s, the re-added a none: queued at the instant it was taken.
        assert metrics[f"workqueue_queue_duration_seconds_count{{{LABEL}}}"] == 3
        assert metrics[f"workqueue_queue_duration_seconds_sum{{{LABEL}}}"] == 7
        bucket = 'workqueue_queue_duration_seconds_bucket{{le="{}",' + LABEL + "}}"
        assert metrics[bucket.format("1e-06")] == 1
        assert metrics[bucket.format("1.0")] == 1
        assert metrics[bucket.format("10.0")] == 3
        assert metrics[bucket.format("+Inf")] == 3

        await clock.advance(1)
        metrics = scrape(queue.metrics)
        assert metrics[f"workqueue_unfinished_work_seconds{{{LABEL}}}"] == 2  # b 1 s, a 1 s
        assert metrics[f"workqueue_longest_running_processor_seconds{{{LABEL}}}"] == 1
        queue.done("a")
        queue.done("b")
        metrics = scrape(queue.metrics)
        assert metrics[f"workqueue_unfinished_work_seconds{{{LABEL}}}"] == 0
        assert metrics[f"workqueue_longest_running_processor_seconds{{{LABEL}}}"] == 0
        assert metrics[f"workqueue_work_duration_seconds_count{{{LABEL}}}"] == 3
        assert metrics[f"workqueue_work_duration_seconds_sum{{{LABEL}}}"] == 5

    asyncio.run(main())


def test_every_add_after_and_rate_limited_retry_counts_a_retry() -> None:
    async def main() -> None:
        clock = VirtualClock()
        queue = WorkQueue(clock, name=NAME)
        queue.retry("a")  # AddRateLimited: AddAfter(5 ms)
        queue.add_after("b", 10)
        queue.add_after("c", 0)  # added at once, still a retry as in client-go
        metrics = scrape(queue.metrics)
        assert metrics[f"workqueue_retries_total{{{LABEL}}}"] == 3
        assert metrics[f"workqueue_adds_total{{{LABEL}}}"] == 1
        await clock.advance(10)
        metrics = scrape(queue.metrics)
        assert metrics[f"workqueue_adds_total{{{LABEL}}}"] == 3
        assert metrics[f"workqueue_depth{{{LABEL}}}"] == 3
        for timer in list(queue._timers):
            timer.cancel()

    asyncio.run(main())


def test_a_failing_sync_is_timed_and_retried() -> None:
    async def main() -> None:
        clock = VirtualClock()
        queue = WorkQueue(clock, name=NAME)
        calls: list[float] = []

        async def sync(key: str) -> None:
            calls.append(clock.monotonic())
            await clock.sleep(4)
            if len(calls) == 1:
                raise RuntimeError("first attempt fails")

        queue.add("k")
        runner = asyncio.create_task(queue.run(sync))
        await clock.advance(0)
        await clock.advance(1)
        metrics = scrape(queue.metrics)
        assert metrics[f"workqueue_unfinished_work_seconds{{{LABEL}}}"] == 1
        await clock.advance(3)  # fails at 4 s; retried 5 ms later
        await clock.advance(10)
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
        assert calls == [0.0, 4.005]
        metrics = scrape(queue.metrics)
        assert metrics[f"workqueue_retries_total{{{LABEL}}}"] == 1
        assert metrics[f"workqueue_adds_total{{{LABEL}}}"] == 2
        assert metrics[f"workqueue_work_duration_seconds_count{{{LABEL}}}"] == 2
        # 4 s twice, up to the rounding of the clock's float seconds (4.005 + 4).
        assert metrics[f"workqueue_work_duration_seconds_sum{{{LABEL}}}"] == pytest.approx(8)
        assert metrics[f"workqueue_queue_duration_seconds_sum{{{LABEL}}}"] == 0

    asyncio.run(main())


def test_unnamed_queues_have_no_metrics_and_components_are_searched_for_queues() -> None:
    clock = VirtualClock()

    class Controller:
        def __init__(self) -> None:
            self.queue = WorkQueue(clock, name="replicaset")
            self.unnamed = WorkQueue(clock, name="")
            self.own_queue_metrics = QueueMetrics(clock, NAME)

    found = queue_metrics_of([Controller()])
    assert sorted(m.name for m in found) == [NAME, "replicaset"]
    assert scrape() == {}
