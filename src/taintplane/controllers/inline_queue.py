"""Metrics for work upstream queues and we do in the informer callback.

Where a controller handles at once what upstream's puts on a work queue for a worker, the
queue's ``workqueue_*`` series are still kept (``/metrics`` shows upstream's names): the item
is added and taken in the same instant, and done when its handling is.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from taintplane.client.queue_metrics import QueueMetrics

__all__ = ["handled_at_once"]


@contextmanager
def handled_at_once(metrics: QueueMetrics, key: str) -> Iterator[None]:
    metrics.add(key)
    metrics.get(key)
    try:
        yield
    finally:
        metrics.done(key)
