"""Recording core/v1 Events as Kubernetes components do (client-go's ``record.EventRecorder``).

Recording never blocks the component: as in client-go, an event joins a queue of at most
1000 (``maxQueuedEvents``) and one writer sends the queue to the API server in order. When the
queue is full the event is dropped and an error is logged (client-go's "Unable to record
event: too many queued events, dropped event"); events are best effort there too. We log the
first drop and then every thousandth, with the count, rather than one line per event.

Events recorded with :meth:`EventRecorder.event` go through client-go's EventCorrelator
(``event_correlator``): a repeat patches the Event recorded first (``count`` up,
``lastTimestamp`` moved), similar events are combined, and a source's spam about one object is
dropped. Client-go correlates in its one writer, just before writing; we correlate when the
event is recorded, in recording order, and keep the writes of one Event in that order too: a
repeat recorded while its Event still waits to be written replaces that write, and one recorded
while it is being written follows it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from taintplane.api.decoding import format_time
from taintplane.api.scheme import ResourceType
from taintplane.client.client import ApiError, Client, Op, resource
from taintplane.client.event_correlator import EventCorrelator
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


@dataclass
class _Write:
    """One write of an Event: a create, or (``patch`` set) a patch of the Event of that name."""

    namespace: str
    event: dict[str, Any]
    patch: dict[str, Any] | None = None

    @property
    def key(self) -> tuple[str, str]:
        return self.namespace, self.event["metadata"]["name"]

    def supersede(self, later: _Write) -> None:
        """Take a later write of the same Event: it carries the whole of its new state, and a
        create not yet sent simply creates that."""
        self.event = later.event
        if self.patch is not None:
            self.patch = later.patch


class EventRecorder:
    """Queues Events named ``<object>.<hex nanoseconds>`` like client-go, correlated as its
    EventCorrelator does, and writes the queue in the background."""

    def __init__(
        self,
        client: Client,
        clock: Clock,
        component: str,
        host: str = "",
        *,
        max_queued: int = MAX_QUEUED_EVENTS,
        writers: int = WRITERS,
        events: ResourceType = EVENTS,
    ) -> None:
        self.client = client
        #: Where Events are written: core/v1, or events.k8s.io/v1 for the events library.
        self.events = events
        self.clock = clock
        self.source = {"component": component, **({"host": host} if host else {})}
        self.max_queued = max_queued
        self.writers = writers
        #: How many queued events one writer sends together (``Client.batch``).
        self.batch_size = 64
        self.correlator = EventCorrelator(clock, event_name)
        #: Events dropped because the queue was full.
        self.dropped = 0
        self._queue: deque[_Write] = deque()
        #: The queued writes by Event, and the Events being written with the write to follow.
        self._queued: dict[tuple[str, str], _Write] = {}
        self._writing: dict[tuple[str, str], _Write | None] = {}
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
        event = {
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
        }
        # The queue limit comes first: client-go drops before its correlator sees the event.
        if self._full(event):
            return
        correlated = self.correlator.correlate(event)
        if correlated is not None:
            self._enqueue(_Write(namespace, correlated.event, correlated.patch))

    def emit(
        self, namespace: str, event: dict[str, Any], patch: dict[str, Any] | None = None
    ) -> None:
        """Queue a prepared Event for ``namespace`` (or drop it when the queue is full), as it
        is: not correlated. With ``patch``, a patch of the Event of that name (created whole
        when it is gone), as the events library writes a series."""
        if not self._full(event):
            self._enqueue(_Write(namespace, event, patch))

    def _full(self, event: dict[str, Any]) -> bool:
        if len(self._queue) < self.max_queued:
            return False
        self.dropped += 1
        if self.dropped == 1 or self.dropped % 1000 == 0:
            log.error(
                "Unable to record event: too many queued events, dropped event "
                "%s %s (%d dropped so far)",
                event.get("reason"),
                (event.get("involvedObject") or event.get("regarding") or {}).get("name"),
                self.dropped,
            )
        return True

    def _enqueue(self, write: _Write) -> None:
        key = write.key
        if (queued := self._queued.get(key)) is not None:
            queued.supersede(write)
            return
        if key in self._writing:
            following = self._writing[key]
            if following is None:
                self._writing[key] = write
            else:
                following.supersede(write)
            return
        self._queue.append(write)
        self._queued[key] = write
        if len(self._writers) < self.writers:
            writer = asyncio.get_running_loop().create_task(self._write())
            self._writers.add(writer)
            writer.add_done_callback(self._writers.discard)

    async def _write(self) -> None:
        while self._queue:
            # What is queued goes out together, up to a batch (one store transaction in
            # process: ``Client.batch``); each event still is its own request and fails alone.
            batch: list[_Write] = []
            while self._queue and len(batch) < self.batch_size:
                write = self._queue.popleft()
                del self._queued[write.key]
                self._writing[write.key] = None
                batch.append(write)
            try:
                sent = await (self._send_many(batch) if len(batch) > 1 else self._send(batch[0]))
                for write in batch:
                    key = write.key
                    while sent and (following := self._writing[key]) is not None:
                        self._writing[key] = None
                        sent = await self._send(following)
            finally:
                for write in batch:
                    del self._writing[write.key]
            if not sent:
                return

    async def _send_many(self, batch: list[_Write]) -> bool:
        """Write several events as :meth:`_send` writes each: the patches of series first,
        those whose Event is gone created anew with the others."""
        try:
            creates = [w for w in batch if w.patch is None]
            patches = [w for w in batch if w.patch is not None]
            answers = await self.client.batch(
                [
                    Op.patch(
                        self.events,
                        w.event["metadata"]["name"],
                        w.patch,
                        namespace=w.namespace,
                        patch_type="strategic",
                    )
                    for w in patches
                ]
            )
            for write, answer in zip(patches, answers, strict=True):
                if isinstance(answer, ApiError) and answer.code == 404:
                    creates.append(write)
                elif isinstance(answer, ApiError):
                    log.debug("event %s not recorded: %s", write.event.get("reason"), answer)
            answers = await self.client.batch(
                [Op.create(self.events, w.event, namespace=w.namespace) for w in creates]
            )
            for write, answer in zip(creates, answers, strict=True):
                if isinstance(answer, ApiError):
                    log.debug("event %s not recorded: %s", write.event.get("reason"), answer)
        except Exception as error:  # the connection or the client is gone
            log.warning(
                "event %s not recorded (%s: %s); %d queued events discarded",
                batch[0].event.get("reason"),
                type(error).__name__,
                error,
                # The batch's others were not written either: discarded with the queue.
                len(self._queue) + len(batch) - 1,
            )
            self._queue.clear()
            self._queued.clear()
            return False
        return True

    async def _send(self, write: _Write) -> bool:
        """Write one event as client-go's recordEvent does; False when the connection is gone
        (the queue is then discarded)."""
        event = write.event
        try:
            if write.patch is not None:
                try:
                    await self.client.patch(
                        self.events,
                        event["metadata"]["name"],
                        write.patch,
                        namespace=write.namespace,
                        patch_type="strategic",
                    )
                    return True
                except ApiError as error:
                    if error.code != 404:
                        raise
                    # The Event expired or was deleted: create it anew, under the same name.
            await self.client.create(self.events, event, namespace=write.namespace)
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
            self._queued.clear()
            return False
        return True

    async def flush(self) -> None:
        """Wait until every queued event has been written (or has failed)."""
        while self._writers:
            await asyncio.gather(*[asyncio.shield(w) for w in self._writers])

    @property
    def queued(self) -> int:
        return len(self._queue)
