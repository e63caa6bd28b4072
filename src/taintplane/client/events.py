"""Recording core/v1 Events as Kubernetes components do (client-go's ``record.EventRecorder``).

Recording never blocks the component: as in client-go, an event joins a queue of at most
1000 (``maxQueuedEvents``) and one writer sends the queue to the API server in order. When the
queue is full the event is dropped and an error is logged (client-go's "Unable to record
event: too many queued events, dropped event"); events are best effort there too. We log the
first drop and then every thousandth, with the count, rather than one line per event.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from datetime import UTC, datetime, timedelta
from typing import Any

from taintplane.api.decoding import format_time
from taintplane.client.client import ApiError, Client, resource
from taintplane.clock import Clock

__all__ = ["MAX_QUEUED_EVENTS", "EventRecorder", "event_name", "object_reference"]

log = logging.getLogger(__name__)

EVENTS = resource("", "v1", "events")

#: client-go's maxQueuedEvents.
MAX_QUEUED_EVENTS = 1000
#: Events written at once. client-go writes one at a time from its own goroutine, which gets
#: its share of the CPU whatever the component does; on one event loop a single writer would
#: get one turn per round of the component's own requests and drop most events under load.
WRITERS = 64


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_last_stamp = 0


def event_name(object_name: str, now: datetime) -> str:
    """``<object>.<hex nanoseconds>``, as client-go names events. The stamp is the clock's
    nanoseconds, nudged up by one where needed so that it strictly increases across every
    recorder of the process: names are unique, and events of one instant (always so on
    virtual time) list in the order they were recorded, as they would on a moving clock."""
    global _last_stamp
    stamp = max((now - _EPOCH) // timedelta(microseconds=1) * 1000, _last_stamp + 1)
    _last_stamp = stamp
    return f"{object_name}.{stamp:x}"


def object_reference(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    ref = {
        "kind": obj.get("kind", ""),
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "apiVersion": obj.get("apiVersion", ""),
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    return {k: v for k, v in ref.items() if v}


class EventRecorder:
    """Queues one Event per call, named ``<object>.<hex nanoseconds>`` like client-go, and
    writes the queue in the background."""

    def __init__(
        self,
        client: Client,
        clock: Clock,
        component: str,
        host: str = "",
        *,
        max_queued: int = MAX_QUEUED_EVENTS,
        writers: int = WRITERS,
    ) -> None:
        self.client = client
        self.clock = clock
        self.source = {"component": component, **({"host": host} if host else {})}
        self.max_queued = max_queued
        self.writers = writers
        #: Events dropped because the queue was full.
        self.dropped = 0
        self._queue: deque[tuple[str, dict[str, Any]]] = deque()
        self._writers: set[asyncio.Task[None]] = set()

    def event(
        self,
        obj: dict[str, Any],
        type_: str,
        reason: str,
        message: str,
        *,
        reference: dict[str, Any] | None = None,
    ) -> None:
        ref = reference if reference is not None else object_reference(obj)
        # Cluster-scoped objects' events go to "default", as client-go does.
        namespace = ref.get("namespace") or "default"
        now = self.clock.now()
        self.emit(
            namespace,
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": event_name(ref.get("name", ""), now), "namespace": namespace},
                "involvedObject": ref,
                "reason": reason,
                "message": message,
                "source": self.source,
                "firstTimestamp": format_time(now),
                "lastTimestamp": format_time(now),
                "count": 1,
                "type": type_,
                "reportingComponent": self.source["component"],
                "reportingInstance": self.source.get("host", ""),
            },
        )

    def emit(self, namespace: str, event: dict[str, Any]) -> None:
        """Queue a prepared Event for ``namespace`` (or drop it when the queue is full)."""
        if len(self._queue) >= self.max_queued:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.error(
                    "Unable to record event: too many queued events, dropped event "
                    "%s %s (%d dropped so far)",
                    event.get("reason"),
                    (event.get("involvedObject") or {}).get("name"),
                    self.dropped,
                )
            return
        self._queue.append((namespace, event))
        if len(self._writers) < self.writers:
            writer = asyncio.get_running_loop().create_task(self._write())
            self._writers.add(writer)
            writer.add_done_callback(self._writers.discard)

    async def _write(self) -> None:
        while self._queue:
            namespace, event = self._queue.popleft()
            try:
                await self.client.create(EVENTS, event, namespace=namespace)
            except ApiError as error:
                log.debug("event %s not recorded: %s", event.get("reason"), error)
            except Exception as error:  # the connection or the client is gone
                # Typically the component is stopping: say so once, not once per event.
                log.warning(
                    "event %s not recorded (%s: %s); %d queued events discarded",
                    event.get("reason"),
                    type(error).__name__,
                    error,
                    len(self._queue),
                )
                self._queue.clear()
                return

    async def flush(self) -> None:
        """Wait until every queued event has been written (or has failed)."""
        while self._writers:
            await asyncio.gather(*[asyncio.shield(w) for w in self._writers])

    @property
    def queued(self) -> int:
        return len(self._queue)
