"""client-go's work queue metrics, as kube-controller-manager's ``/metrics`` shows them.

client-go's ``util/workqueue/metrics.go`` keeps them per named queue; component-base's
``metrics/prometheus/workqueue`` names them ``workqueue_*`` with the label ``name`` (all BETA).
A queue without a name has none, as upstream's. The depth counts the keys waiting for a worker,
including one added again while it is being processed (upstream's ``dirty`` set).

Durations are read on the queue's clock, so under virtual time they are exact.
``workqueue_unfinished_work_seconds`` and ``workqueue_longest_running_processor_seconds`` are
set upstream by a loop every 500 ms of the queue's clock (``updateUnfinishedWorkLoop``); here
they are computed when scraped, the value that loop would set were it to tick at that instant:
no task runs per queue, and under virtual time a scrape reads the work's exact age rather than
its age at an earlier tick.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from taintplane.clock import Clock

__all__ = ["DURATION_BUCKETS", "QueueMetrics", "WorkQueueCollector", "queue_metrics_of"]


def _exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """component-base's ``ExponentialBuckets``: each bound the previous one times ``factor``,
    so the bounds carry float64's rounding as Go's do (the second is 9.999999999999999e-06)."""
    bounds = [start]
    for _ in range(count - 1):
        bounds.append(bounds[-1] * factor)
    return tuple(bounds)


#: ``ExponentialBuckets(10e-7, 10, 10)``: 1 µs to 1000 s.
DURATION_BUCKETS = _exponential_buckets(1e-6, 10, 10)

# component-base prefixes a BETA metric's help text so.
_BETA = "[BETA] "
_HELP = {
    "depth": "Current depth of workqueue",
    "adds": "Total number of adds handled by workqueue",
    "queue_duration": "How long in seconds an item stays in workqueue before being requested.",
    "work_duration": "How long in seconds processing an item from workqueue takes.",
    "unfinished": "How many seconds of work has done that is in progress and hasn't been "
    "observed by work_duration. Large values indicate stuck threads. One can deduce the number "
    "of stuck threads by observing the rate at which this increases.",
    "longest": "How many seconds has the longest running processor for workqueue been running.",
    "retries": "Total number of retries handled by workqueue",
}


@dataclass
class _Histogram:
    counts: list[int] = field(default_factory=lambda: [0] * len(DURATION_BUCKETS))
    total: float = 0.0
    observations: int = 0

    def observe(self, seconds: float) -> None:
        for index, bound in enumerate(DURATION_BUCKETS):
            if seconds <= bound:
                self.counts[index] += 1
                break
        self.total += seconds
        self.observations += 1

    def merge(self, other: _Histogram) -> None:
        self.counts = [a + b for a, b in zip(self.counts, other.counts, strict=True)]
        self.total += other.total
        self.observations += other.observations

    def buckets(self) -> list[tuple[str, float]]:
        cumulative, rows = 0, []
        for bound, count in zip(DURATION_BUCKETS, self.counts, strict=True):
            cumulative += count
            # Written as prometheus_client writes its own histograms' bounds (these are all
            # under 1e6, where its floatToGoString is repr), like the page's other families.
            rows.append((repr(bound), float(cumulative)))
        rows.append(("+Inf", float(self.observations)))
        return rows


class QueueMetrics:
    """One queue's metrics: the queue calls :meth:`add`, :meth:`get`, :meth:`done` and
    :meth:`retry` where client-go's queue calls them."""

    def __init__(self, clock: Clock, name: str) -> None:
        self.clock = clock
        self.name = name
        self.adds = 0
        self.depth = 0
        self.retries = 0
        self.queue_duration = _Histogram()
        self.work_duration = _Histogram()
        self._added_at: dict[str, float] = {}
        self._started_at: dict[str, float] = {}

    def add(self, key: str) -> None:
        """A key not already waiting was added (counted once until a worker takes it)."""
        self.adds += 1
        self.depth += 1
        self._added_at.setdefault(key, self.clock.monotonic())

    def get(self, key: str) -> None:
        now = self.clock.monotonic()
        self.depth -= 1
        self._started_at[key] = now
        added = self._added_at.pop(key, None)
        if added is not None:
            self.queue_duration.observe(now - added)

    def done(self, key: str) -> None:
        started = self._started_at.pop(key, None)
        if started is not None:
            self.work_duration.observe(self.clock.monotonic() - started)

    def retry(self) -> None:
        """Every ``AddAfter`` (so every rate-limited add) counts, as in client-go."""
        self.retries += 1

    def unfinished_work(self) -> tuple[float, float]:
        """Seconds of work in progress in total, and of the longest running key."""
        now = self.clock.monotonic()
        ages = [now - started for started in self._started_at.values()]
        return sum(ages), max(ages, default=0.0)


def queue_metrics_of(owners: Iterable[object]) -> list[QueueMetrics]:
    """The metrics of the named queues the given components (controllers) hold as attributes:
    a queue with ``metrics``, or the metrics themselves for a component with its own queue."""
    found: list[QueueMetrics] = []
    for owner in owners:
        for value in vars(owner).values():
            metrics = value if isinstance(value, QueueMetrics) else getattr(value, "metrics", None)
            if isinstance(metrics, QueueMetrics) and metrics.name:
                found.append(metrics)
    return found


class WorkQueueCollector(Collector):
    """The ``workqueue_*`` families of some queues; queues sharing a name share their series,
    as upstream's share one child of each vector."""

    def __init__(self, queues: Sequence[QueueMetrics]) -> None:
        self.queues = queues

    def collect(self) -> Iterator[Metric]:
        by_name: dict[str, list[QueueMetrics]] = defaultdict(list)
        for queue in self.queues:
            by_name[queue.name].append(queue)
        if not by_name:
            return
        names = sorted(by_name)
        labels = ["name"]
        adds = CounterMetricFamily("workqueue_adds", _BETA + _HELP["adds"], labels=labels)
        depth = GaugeMetricFamily("workqueue_depth", _BETA + _HELP["depth"], labels=labels)
        longest = GaugeMetricFamily(
            "workqueue_longest_running_processor_seconds", _BETA + _HELP["longest"], labels=labels
        )
        queue_duration = HistogramMetricFamily(
            "workqueue_queue_duration_seconds", _BETA + _HELP["queue_duration"], labels=labels
        )
        retries = CounterMetricFamily("workqueue_retries", _BETA + _HELP["retries"], labels=labels)
        unfinished = GaugeMetricFamily(
            "workqueue_unfinished_work_seconds", _BETA + _HELP["unfinished"], labels=labels
        )
        work_duration = HistogramMetricFamily(
            "workqueue_work_duration_seconds", _BETA + _HELP["work_duration"], labels=labels
        )
        for name in names:
            queues = by_name[name]
            adds.add_metric([name], sum(q.adds for q in queues))
            depth.add_metric([name], sum(q.depth for q in queues))
            retries.add_metric([name], sum(q.retries for q in queues))
            unfinished_work = [q.unfinished_work() for q in queues]
            unfinished.add_metric([name], sum(total for total, _ in unfinished_work))
            longest.add_metric([name], max(age for _, age in unfinished_work))
            for family, histograms in (
                (queue_duration, [q.queue_duration for q in queues]),
                (work_duration, [q.work_duration for q in queues]),
            ):
                merged = _Histogram()
                for histogram in histograms:
                    merged.merge(histogram)
                family.add_metric([name], merged.buckets(), merged.total)
        yield from (adds, depth, longest, queue_duration, retries, unfinished, work_duration)
