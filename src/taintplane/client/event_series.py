"""Recording events.k8s.io/v1 Events as client-go's events library does (``tools/events``).

The scheduler records through this library, not through the core/v1 ``record`` package: an
Event carries ``eventTime``, ``reportingController``, ``reportingInstance``, ``action``,
``regarding``, ``related`` and ``note``, and none of the deprecated core/v1 fields (no source,
no first or last timestamp, no count).

Repeats are not correlated; they become a series. Events with the same type, action, reason,
reporting controller and instance, regarding and related object (the note does not count) are
isomorphic: the first is created, the second patches ``series: {count: 2,
lastObservedTime}`` onto it, and later ones only count in memory. The API sees the count again
when the broadcaster's two loops run: every 30 minutes each open series is written again
(``refreshExistingEventSeries``), and every 6 minutes a series not observed for 6 minutes is
written a last time and forgotten, as is a singleton older than 6 minutes (``finishSeries``).
Both loops run once at start, then each period after the last run.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from taintplane.api.decoding import format_micro_time, parse_timestamp
from taintplane.client.client import Client, resource
from taintplane.client.events import EventRecorder, event_name
from taintplane.clock import Clock

__all__ = ["FINISH_TIME", "NOTE_LENGTH_LIMIT", "REFRESH_TIME", "SeriesEventRecorder"]

EVENTS_V1 = resource("events.k8s.io", "v1", "events")

#: client-go tools/events finishTime and refreshTime.
FINISH_TIME = timedelta(minutes=6)
REFRESH_TIME = timedelta(minutes=30)
#: The events.k8s.io validation's NoteLengthLimit.
NOTE_LENGTH_LIMIT = 1024

_Key = tuple[str, str, str, str, str, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]


def _reference_key(reference: dict[str, Any] | None) -> tuple[tuple[str, str], ...]:
    # The whole ObjectReference, resourceVersion included, as getKey compares the struct.
    return tuple(sorted((k, str(v)) for k, v in (reference or {}).items() if v))


class SeriesEventRecorder:
    """``events.NewBroadcaster(...).NewRecorder(scheme, reportingController)``: records
    Events, counts isomorphic repeats as a series and writes through a queue that never
    blocks the caller (the core recorder's writer, pointed at events.k8s.io/v1)."""

    def __init__(
        self, client: Client, clock: Clock, reporting_controller: str, reporting_instance: str
    ) -> None:
        self.clock = clock
        self.reporting_controller = reporting_controller
        self.reporting_instance = reporting_instance
        self.writer = EventRecorder(client, clock, reporting_controller, events=EVENTS_V1)
        #: The broadcaster's eventCache: the first Event of each isomorphic kind, by key.
        self.cache: dict[_Key, dict[str, Any]] = {}

    @property
    def dropped(self) -> int:
        """Events dropped because the writer's queue was full."""
        return self.writer.dropped

    def eventf(
        self,
        regarding: dict[str, Any],
        related: dict[str, Any] | None,
        type_: str,
        reason: str,
        action: str,
        note: str,
    ) -> None:
        """``recorder.Eventf(regarding, related, eventtype, reason, action, note)``."""
        now = self.clock.now()
        event: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "name": event_name(regarding.get("name", ""), now),
                # Cluster-scoped objects' events go to "default", as makeEvent does.
                "namespace": regarding.get("namespace") or "default",
            },
            "eventTime": format_micro_time(now),
            "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
            "action": action,
            "reason": reason,
            "regarding": regarding,
            **({"related": related} if related else {}),
            "note": note,
            "type": type_,
        }
        self._record(event)

    def _record(self, event: dict[str, Any]) -> None:
        """recordToSink: a new kind is cached and created; its first repeat opens the series
        and patches it; later repeats only count until a loop writes the series."""
        key: _Key = (
            event["type"],
            event["action"],
            event["reason"],
            event["reportingController"],
            event["reportingInstance"],
            _reference_key(event["regarding"]),
            _reference_key(event.get("related")),
        )
        cached = self.cache.get(key)
        if cached is None:
            self.cache[key] = event
            self._write(event)
            return
        observed = format_micro_time(self.clock.now())
        series = cached.get("series")
        if series is not None:
            series["count"] += 1
            series["lastObservedTime"] = observed
            return
        cached["series"] = {"count": 2, "lastObservedTime": observed}
        self._write(cached)

    def _write(self, event: dict[str, Any]) -> None:
        # A copy: the cache keeps counting while the write waits in the queue.
        written = copy.deepcopy(event)
        namespace = written["metadata"]["namespace"]
        series = written.get("series")
        # The two-way strategic merge patch of the Event without and with its series.
        patch = {"series": series} if series is not None else None
        self.writer.emit(namespace, written, patch)

    def finish_series(self) -> None:
        """Write the last count of each series not observed for 6 minutes and forget it;
        forget singletons older than 6 minutes."""
        horizon = self.clock.now() - FINISH_TIME
        for key, event in list(self.cache.items()):
            series = event.get("series")
            if series is not None:
                if _before(series["lastObservedTime"], horizon):
                    self._write(event)
                    del self.cache[key]
            elif _before(event["eventTime"], horizon):
                del self.cache[key]

    def refresh_existing_series(self) -> None:
        """Write the current count of every open series (keeps it from expiring)."""
        for event in self.cache.values():
            if event.get("series") is not None:
                self._write(event)

    async def run(self) -> None:
        """StartRecordingToSink's two loops, until cancelled."""
        await asyncio.gather(
            self._every(REFRESH_TIME, self.refresh_existing_series),
            self._every(FINISH_TIME, self.finish_series),
        )

    async def _every(self, period: timedelta, step: Callable[[], None]) -> None:
        while True:
            step()
            await self.clock.sleep(period.total_seconds())

    async def flush(self) -> None:
        await self.writer.flush()


def _before(stamp: str, horizon: datetime) -> bool:
    moment = parse_timestamp(stamp)
    return moment is not None and moment < horizon
