"""The event recorder: never waits for the API, writes in order, drops beyond its queue limit
as client-go's recorder does."""

import asyncio
import logging
from datetime import UTC, datetime

from taintplane.apiserver.app import APIServer
from taintplane.apiserver.table_workloads import EVENT_COLUMNS
from taintplane.client import Client, InProcessTransport, resource
from taintplane.client.event_correlator import LRU_CACHE_ENTRIES, Correlated, EventCorrelator
from taintplane.client.events import (
    MAX_QUEUED_EVENTS,
    EventRecorder,
    event_name,
    object_reference,
)
from taintplane.clock import VirtualClock
from taintplane.store.sqlite import SqliteStore

EVENTS = resource("", "v1", "events")
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "namespace": "default", "uid": "u-1", "resourceVersion": "7"},
}


async def _client(tmp_path, clock):
    store = await SqliteStore(tmp_path / "s.db").open()
    server = APIServer(store, clock)
    await server.bootstrap()
    return store, server, Client(InProcessTransport(server.app))


def test_events_are_queued_without_waiting_and_written_in_order(tmp_path):
    async def scenario():
        clock = VirtualClock(datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC))
        store, server, client = await _client(tmp_path, clock)
        recorder = EventRecorder(client, clock, "taint-eviction-controller", writers=1)
        assert MAX_QUEUED_EVENTS == recorder.max_queued == 1000
        for n in range(3):
            recorder.event(POD, "Normal", "TaintManagerEviction", f"message {n}")
        # Recording returned at once: all three still wait for the writer.
        assert recorder.queued == 3
        await recorder.flush()
        assert recorder.queued == 0
        items, _ = await client.list(EVENTS, namespace="default")
        items.sort(key=lambda e: e["metadata"]["creationTimestamp"] + e["metadata"]["name"])
        assert sorted(e["message"] for e in items) == ["message 0", "message 1", "message 2"]
        event = items[0]
        assert event["involvedObject"] == {
            "kind": "Pod",
            "namespace": "default",
            "name": "web",
            "uid": "u-1",
            "apiVersion": "v1",
            "resourceVersion": "7",
        }
        assert event["source"] == {"component": "taint-eviction-controller"}
        assert event["firstTimestamp"] == event["lastTimestamp"] == "2026-11-21T12:00:00Z"
        assert (event["count"], event["type"]) == (1, "Normal")
        assert event["metadata"]["name"].startswith("web.")
        await server.close()
        await store.close()

    asyncio.run(scenario())


def test_a_full_queue_drops_events_with_upstreams_error(tmp_path, caplog):
    async def scenario():
        clock = VirtualClock(datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC))
        store, server, client = await _client(tmp_path, clock)
        recorder = EventRecorder(client, clock, "kubelet", "node-1", max_queued=3, writers=1)
        with caplog.at_level(logging.ERROR, logger="taintplane.client.events"):
            for n in range(10):
                recorder.event(POD, "Warning", "Failed", f"message {n}")
        assert recorder.dropped == 7
        assert [r.getMessage() for r in caplog.records] == [
            "Unable to record event: too many queued events, dropped event Failed web "
            "(1 dropped so far)"
        ]
        await recorder.flush()
        items, _ = await client.list(EVENTS, namespace="default")
        assert sorted(e["message"] for e in items) == ["message 0", "message 1", "message 2"]
        assert items[0]["source"] == {"component": "kubelet", "host": "node-1"}
        assert items[0]["reportingInstance"] == "node-1"
        # Room again once written.
        recorder.event(POD, "Warning", "Failed", "message 10")
        await recorder.flush()
        assert len((await client.list(EVENTS, namespace="default"))[0]) == 4
        await server.close()
        await store.close()

    asyncio.run(scenario())


class _ClosedTransport:
    """A transport whose connection is gone, as when a component stops under its writers."""

    async def request(self, *args, **kwargs):
        raise RuntimeError("Cannot send a request, as the client has been closed.")

    def stream(self, path, params):
        raise RuntimeError("Cannot send a request, as the client has been closed.")

    async def close(self):
        return None


def test_a_lost_connection_is_reported_once_and_the_queue_discarded(caplog):
    async def scenario():
        clock = VirtualClock(datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC))
        recorder = EventRecorder(Client(_ClosedTransport()), clock, "default-scheduler", writers=1)
        for n in range(5):
            recorder.event(POD, "Normal", "Scheduled", f"message {n}")
        with caplog.at_level(logging.WARNING, logger="taintplane.client.events"):
            await recorder.flush()
        assert recorder.queued == 0
        assert [r.getMessage() for r in caplog.records] == [
            "event Scheduled not recorded (RuntimeError: Cannot send a request, as the client "
            "has been closed.); 4 queued events discarded"
        ]

    asyncio.run(scenario())


def test_event_names_are_client_gos_and_strictly_increase_within_an_instant(monkeypatch):
    monkeypatch.setattr("taintplane.client.events._last_stamp", 0)  # a fresh process
    moment = datetime(2026, 1, 1, 0, 0, 1, 500, tzinfo=UTC)
    nanos = 1767225601_000_500_000  # 2026-01-01T00:00:01.0005Z in Unix nanoseconds
    later = datetime(2026, 1, 1, 0, 0, 2, tzinfo=UTC)
    first = event_name("web", later)
    assert first == f"web.{1767225602_000_000_000:x}"  # the clock's nanoseconds, as client-go
    names = [event_name("web", later) for _ in range(3)]
    stamps = [int(n.split(".")[1], 16) for n in [first, *names]]
    assert stamps == sorted(set(stamps))  # unique, and in the order they were made
    # An earlier instant never goes back below what was handed out.
    assert int(event_name("web", moment).split(".")[1], 16) > stamps[-1] > nanos


# Correlation, as client-go's EventCorrelator (tools/record/events_cache.go).

START = datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)


async def _events(client):
    items, _ = await client.list(EVENTS, namespace="default")
    return sorted(items, key=lambda e: e["metadata"]["name"])


def test_a_repeated_event_patches_the_first_with_its_count_and_last_timestamp(tmp_path):
    async def scenario():
        clock = VirtualClock(START)
        store, server, client = await _client(tmp_path, clock)
        recorder = EventRecorder(client, clock, "kubelet", "node-1")
        recorder.event(POD, "Warning", "BackOff", "Back-off restarting failed container")
        await recorder.flush()
        [first] = await _events(client)
        await clock.advance(30)
        recorder.event(POD, "Warning", "BackOff", "Back-off restarting failed container")
        await recorder.flush()
        [event] = await _events(client)
        assert event["metadata"]["name"] == first["metadata"]["name"]
        assert event["metadata"]["resourceVersion"] != first["metadata"]["resourceVersion"]
        assert event["count"] == 2
        assert event["firstTimestamp"] == "2026-11-21T12:00:00Z"
        assert event["lastTimestamp"] == "2026-11-21T12:00:30Z"
        # kubectl get events -o wide (and describe) read the count from the Event's count.
        columns = {c.name: c.cell(event, clock.now()) for c in EVENT_COLUMNS}
        assert (columns["Count"], columns["First Seen"], columns["Last Seen"]) == (2, "30s", "0s")
        # Another message, type, reason or container is another Event.
        await clock.advance(30)
        recorder.event(POD, "Warning", "BackOff", "Back-off pulling image")
        recorder.event(POD, "Normal", "BackOff", "Back-off restarting failed container")
        recorder.event(POD, "Warning", "Failed", "Back-off restarting failed container")
        container = {**object_reference(POD), "fieldPath": "spec.containers{web}"}
        recorder.event(
            POD, "Warning", "BackOff", "Back-off restarting failed container", reference=container
        )
        await recorder.flush()
        events = await _events(client)
        assert [e["count"] for e in events] == [2, 1, 1, 1, 1]
        await server.close()
        await store.close()

    asyncio.run(scenario())


def test_repeats_recorded_at_once_count_in_order_on_one_event(tmp_path):
    async def scenario():
        clock = VirtualClock(START)
        store, server, client = await _client(tmp_path, clock)
        recorder = EventRecorder(client, clock, "kubelet", "node-1")
        # Five repeats queued before any is written, across 64 writers: one Event, counted 5.
        for _ in range(5):
            recorder.event(POD, "Normal", "Pulling", 'Pulling image "nginx"')
        assert recorder.queued == 1
        await recorder.flush()
        [event] = await _events(client)
        assert event["count"] == 5
        # Repeats recorded while the Event is being written follow that write.
        recorder.event(POD, "Normal", "Pulling", 'Pulling image "nginx"')
        await asyncio.sleep(0)  # the writer has taken it
        assert recorder.queued == 0
        await clock.advance(5)
        recorder.event(POD, "Normal", "Pulling", 'Pulling image "nginx"')
        recorder.event(POD, "Normal", "Pulling", 'Pulling image "nginx"')
        await recorder.flush()
        [event] = await _events(client)
        assert (event["count"], event["lastTimestamp"]) == (8, "2026-11-21T12:00:05Z")
        await server.close()
        await store.close()

    asyncio.run(scenario())


def test_a_repeat_of_an_event_deleted_meanwhile_creates_it_anew(tmp_path):
    async def scenario():
        clock = VirtualClock(START)
        store, server, client = await _client(tmp_path, clock)
        recorder = EventRecorder(client, clock, "kubelet", "node-1")
        recorder.event(POD, "Normal", "Killing", "Stopping container web")
        await recorder.flush()
        [first] = await _events(client)
        await client.delete(EVENTS, first["metadata"]["name"], namespace="default")
        await clock.advance(3600)
        recorder.event(POD, "Normal", "Killing", "Stopping container web")
        await recorder.flush()
        [event] = await _events(client)
        assert event["metadata"]["name"] == first["metadata"]["name"]
        assert event["count"] == 2
        assert event["firstTimestamp"] == "2026-11-21T12:00:00Z"
        assert event["lastTimestamp"] == "2026-11-21T13:00:00Z"
        assert event["message"] == "Stopping container web"
        await server.close()
        await store.close()

    asyncio.run(scenario())


def test_ten_similar_events_are_combined(tmp_path):
    async def scenario():
        clock = VirtualClock(START)
        store, server, client = await _client(tmp_path, clock)
        recorder = EventRecorder(client, clock, "replicaset-controller")
        for n in range(9):
            recorder.event(POD, "Normal", "SuccessfulCreate", f"Created pod: web-{n}")
            await clock.advance(60)
        # The tenth distinct message within 10 minutes of the previous one is combined.
        recorder.event(POD, "Normal", "SuccessfulCreate", "Created pod: web-9")
        await recorder.flush()
        events = await _events(client)
        assert len(events) == 10
        combined = events[-1]
        assert combined["message"] == "(combined from similar events): Created pod: web-9"
        assert (combined["count"], combined["type"]) == (1, "Normal")
        assert combined["source"] == {"component": "replicaset-controller"}
        assert combined["involvedObject"] == object_reference(POD)
        await clock.advance(60)
        recorder.event(POD, "Normal", "SuccessfulCreate", "Created pod: web-10")
        await recorder.flush()
        events = await _events(client)
        assert len(events) == 10
        assert events[-1]["metadata"]["name"] == combined["metadata"]["name"]
        assert events[-1]["message"] == "(combined from similar events): Created pod: web-10"
        assert (events[-1]["count"], events[-1]["lastTimestamp"]) == (2, "2026-11-21T12:10:00Z")
        # More than 10 minutes after the last similar one, a message stands alone again.
        await clock.advance(601)
        recorder.event(POD, "Normal", "SuccessfulCreate", "Created pod: web-11")
        await recorder.flush()
        events = await _events(client)
        assert events[-1]["message"] == "Created pod: web-11"
        await server.close()
        await store.close()

    asyncio.run(scenario())


def test_a_source_spamming_an_object_is_throttled_but_counted(tmp_path):
    async def scenario():
        clock = VirtualClock(START)
        store, server, client = await _client(tmp_path, clock)
        recorder = EventRecorder(client, clock, "kubelet", "node-1")
        for _ in range(30):
            recorder.event(POD, "Warning", "Unhealthy", "Readiness probe failed")
        other = {"kind": "Pod", "metadata": {"name": "db", "namespace": "default", "uid": "u-2"}}
        recorder.event(other, "Warning", "Unhealthy", "Readiness probe failed")
        await recorder.flush()
        counts = {e["involvedObject"]["name"]: e["count"] for e in await _events(client)}
        # A burst of 25 per source and object; the other object has its own.
        assert counts == {"web": 25, "db": 1}
        # One more every 5 minutes; the dropped ones were counted all the same.
        await clock.advance(299)
        recorder.event(POD, "Warning", "Unhealthy", "Readiness probe failed")
        await clock.advance(1)
        recorder.event(POD, "Warning", "Unhealthy", "Readiness probe failed")
        recorder.event(POD, "Warning", "Unhealthy", "Readiness probe failed")
        await recorder.flush()
        [web] = [e for e in await _events(client) if e["involvedObject"]["name"] == "web"]
        assert (web["count"], web["lastTimestamp"]) == (32, "2026-11-21T12:05:00Z")
        await server.close()
        await store.close()

    asyncio.run(scenario())


def test_prepared_events_are_written_as_they_are(tmp_path):
    async def scenario():
        clock = VirtualClock(START)
        store, server, client = await _client(tmp_path, clock)
        recorder = EventRecorder(client, clock, "default-scheduler")
        for _ in range(2):
            recorder.emit(
                "default",
                {
                    "apiVersion": "v1",
                    "kind": "Event",
                    "metadata": {"name": event_name("web", clock.now()), "namespace": "default"},
                    "involvedObject": object_reference(POD),
                    "reason": "FailedScheduling",
                    "message": "0/1 nodes are available",
                    "source": {"component": "default-scheduler"},
                    "type": "Warning",
                    "count": 1,
                },
            )
        await recorder.flush()
        assert [e["count"] for e in await _events(client)] == [1, 1]
        await server.close()
        await store.close()

    asyncio.run(scenario())


def test_the_correlators_caches_keep_upstreams_4096_most_recent_keys():
    clock = VirtualClock(START)
    correlator = EventCorrelator(clock, event_name)

    def record(n: int) -> Correlated | None:
        pod = {"kind": "Pod", "metadata": {"name": f"p-{n}", "namespace": "default"}}
        event = {
            "metadata": {"name": event_name(f"p-{n}", clock.now()), "namespace": "default"},
            "involvedObject": object_reference(pod),
            "source": {"component": "kubelet", "host": "node-1"},
            "reason": "Started",
            "message": "Container started",
            "type": "Normal",
            "count": 1,
        }
        return correlator.correlate(event)

    for n in range(LRU_CACHE_ENTRIES + 10):
        record(n)
    assert (
        len(correlator._spam)
        == len(correlator._similar)
        == len(correlator._observed)
        == LRU_CACHE_ENTRIES
    )
    # The most recent repeat is a patch of its first Event; the oldest was forgotten, as
    # upstream's LRU forgets it, and is a new Event again.
    recent = record(LRU_CACHE_ENTRIES + 9)
    assert recent is not None
    assert recent.patch is not None
    oldest = record(0)
    assert oldest is not None
    assert oldest.patch is None
