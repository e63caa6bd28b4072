"""Watch bookmarks and timeouts on virtual time: exact instants, no sleeping."""

import asyncio
import json
import queue
import threading
from typing import Any

import httpx
import pytest

from taintplane.clock import VirtualClock
from taintplane.sim.cluster import running_cluster


@pytest.fixture(scope="module")
def virtual(tmp_path_factory):
    clock = VirtualClock()
    with running_cluster(tmp_path_factory.mktemp("virtual"), clock=clock, components=()) as cluster:
        yield cluster, clock


def advance(cluster, clock, seconds):
    asyncio.run_coroutine_threadsafe(clock.advance(seconds), cluster.loop).result(10)


def open_watch(cluster, params):
    """Start a watch; returns a queue of decoded events (None when the stream ends)."""
    events: queue.Queue[dict[str, Any] | None] = queue.Queue()
    started = threading.Event()

    def run():
        with (
            httpx.Client(base_url=cluster.url, timeout=30) as client,
            client.stream("GET", "/api/v1/nodes", params={**params, "watch": "true"}) as response,
        ):
            started.set()
            for line in response.iter_lines():
                if line:
                    events.put(json.loads(line))
        events.put(None)

    threading.Thread(target=run, daemon=True).start()
    started.wait(10)
    return events


def wait_for_sleepers(cluster, clock, count):
    """The watch's timers are registered once its handler runs; wait for them, not for time."""
    for _ in range(1000):
        if asyncio.run_coroutine_threadsafe(_pending(clock), cluster.loop).result(10) >= count:
            return
    raise AssertionError("the watch never started its timers")


async def _pending(clock):
    return clock.pending()


def test_bookmarks_arrive_on_the_interval_only_when_asked(virtual):
    cluster, clock = virtual
    with httpx.Client(base_url=cluster.url) as client:
        rv = client.get("/api/v1/nodes").json()["metadata"]["resourceVersion"]
    asked = open_watch(
        cluster, {"resourceVersion": rv, "allowWatchBookmarks": "true", "timeoutSeconds": "150"}
    )
    not_asked = open_watch(cluster, {"resourceVersion": rv, "timeoutSeconds": "150"})
    wait_for_sleepers(cluster, clock, 3)
    advance(cluster, clock, 60)
    bookmark = asked.get(timeout=10)
    assert bookmark == {
        "type": "BOOKMARK",
        "object": {"kind": "Node", "apiVersion": "v1", "metadata": {"resourceVersion": rv}},
    }
    advance(cluster, clock, 90)  # t=150: both streams end at their timeout
    assert asked.get(timeout=10)["type"] == "BOOKMARK"  # t=120
    assert asked.get(timeout=10) is None
    assert not_asked.get(timeout=10) is None


def test_history_is_compacted_every_five_minutes(virtual):
    cluster, clock = virtual
    with httpx.Client(base_url=cluster.url) as client:
        client.post("/api/v1/nodes", json={"metadata": {"name": "old-news"}})
        old = client.get("/api/v1/nodes").json()["metadata"]["resourceVersion"]
        client.post("/api/v1/nodes", json={"metadata": {"name": "newer"}})
        advance(cluster, clock, 300)  # compacts to the revision seen at start-up
        advance(cluster, clock, 300)  # compacts to the revision seen at t=300, after "old"
        response = client.get("/api/v1/nodes", params={"watch": "true", "resourceVersion": old})
        event = json.loads(response.text.splitlines()[0])
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410
