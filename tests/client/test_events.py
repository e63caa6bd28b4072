"""The event recorder: never waits for the API, writes in order, drops beyond its queue limit
as client-go's recorder does."""

import asyncio
import logging
from datetime import UTC, datetime

from taintplane.apiserver.app import APIServer
from taintplane.client import Client, InProcessTransport, resource
from taintplane.client.events import MAX_QUEUED_EVENTS, EventRecorder, event_name
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
