"""Watch bookmarks on virtual time (exact instants, no sleeping); watch timeouts on the wall
clock, since they bound the HTTP request."""

import asyncio
import json
import queue
import threading
import time
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch

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
        try:
            with (
                httpx.Client(base_url=cluster.url, timeout=30) as client,
                client.stream("GET", "/api/v1/nodes", params={**params, "watch": "true"}) as resp,
            ):
                started.set()
                for line in resp.iter_lines():
                    if line:
                        events.put(json.loads(line))
        except httpx.RemoteProtocolError:
            pass  # a watch without a timeout is cut when the cluster stops
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
    asked = open_watch(cluster, {"resourceVersion": rv, "allowWatchBookmarks": "true"})
    # timeoutSeconds counts the wall clock: this one ends a real second from now, after the
    # virtual minutes below have been advanced through (without a bookmark).
    not_asked = open_watch(cluster, {"resourceVersion": rv, "timeoutSeconds": "1"})
    wait_for_sleepers(cluster, clock, 1)
    advance(cluster, clock, 60)
    bookmark = asked.get(timeout=10)
    assert bookmark == {
        "type": "BOOKMARK",
        "object": {"kind": "Node", "apiVersion": "v1", "metadata": {"resourceVersion": rv}},
    }
    advance(cluster, clock, 60)
    assert asked.get(timeout=10)["type"] == "BOOKMARK"  # t=120
    assert not_asked.get(timeout=10) is None


def test_watch_timeout_counts_the_wall_clock_not_virtual_time(virtual):
    """A request timeout is the HTTP request's: the watch ends after timeoutSeconds of real
    time with the virtual clock standing still. This waits one real second, the smallest
    timeout there is: the wall clock is what is tested."""
    cluster, clock = virtual
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        rv = client.get("/api/v1/nodes").json()["metadata"]["resourceVersion"]
        virtual_start = clock.monotonic()
        started = time.monotonic()
        params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "1"}
        response = client.get("/api/v1/nodes", params=params)
        elapsed = time.monotonic() - started
    assert response.status_code == 200
    assert response.text == ""
    assert 0.9 <= elapsed < 5
    assert clock.monotonic() == virtual_start  # no virtual time passed


def test_official_client_watch_timeout_returns_on_virtual_time(virtual):
    cluster, _ = virtual
    api_client = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig_path))
    try:
        core = k8s.CoreV1Api(api_client)
        rv = core.list_node().metadata.resource_version
        started = time.monotonic()
        events = list(
            k8s_watch.Watch().stream(
                core.list_node, resource_version=rv, timeout_seconds=1, _request_timeout=10
            )
        )
        elapsed = time.monotonic() - started
    finally:
        api_client.close()
    assert events == []
    assert 0.9 <= elapsed < 5


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
