"""When an idle watch that allows bookmarks gets them, as kube-apiserver's cacheWatcher
(nextBookmarkTime): every minute, and once 2 s before the watch's deadline, so the client
that reconnects after the timeout resumes from a recent revision. All on a virtual clock:
the instants are exact and nothing sleeps."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taintplane.api.scheme import SCHEME, ResourceType
from taintplane.apiserver.registry import WatchProgress
from taintplane.apiserver.watch_stream import watch_lines
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import running_cluster
from tests.apiserver.test_watch_bookmarks import advance, open_watch, wait_for_sleepers


def _nodes() -> ResourceType:
    found = SCHEME.lookup("", "v1", "nodes")
    assert found is not None
    return found


NODES = _nodes()


async def _idle() -> AsyncIterator[Any]:
    await asyncio.Event().wait()  # no change ever arrives
    yield None


def bookmark_instants(timeout: int | None, until: float) -> tuple[list[float], float | None]:
    """Run one idle watch for ``until`` virtual seconds; the instants its bookmarks came at,
    and the instant it ended (None if it did not)."""

    async def main() -> tuple[list[float], float | None]:
        clock = VirtualClock()
        progress = WatchProgress(revision=7)
        seen: list[float] = []
        ended: list[float] = []

        async def consume() -> None:
            lines = watch_lines(
                NODES,
                _idle(),
                progress,
                clock,
                request_clock=clock,
                table=False,
                bookmark_interval=60.0,
                timeout=timeout,
                include="Metadata",
            )
            async for line in lines:
                event = json.loads(line)
                assert event["type"] == "BOOKMARK"
                assert event["object"]["metadata"] == {"resourceVersion": "7"}
                seen.append(clock.monotonic())
            ended.append(clock.monotonic())

        task = asyncio.create_task(consume())
        await clock.advance(until)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return seen, (ended[0] if ended else None)

    return asyncio.run(main())


def test_a_seventy_second_watch_gets_one_at_a_minute_and_one_before_its_end():
    """The issue's row: timeoutSeconds=70 had one bookmark, at 60 s."""
    assert bookmark_instants(70, 100) == ([60.0, 68.0], 70.0)


@pytest.mark.parametrize(
    ("timeout", "instants"),
    [
        (30, [28.0]),  # the deadline comes before the first minute
        (200, [60.0, 120.0, 180.0, 198.0]),
        (62, [60.0]),  # heartbeat and pre-timeout coincide: one bookmark, the last
        (2, [0.0]),  # the pre-timeout instant is now
        (1, []),  # already past: none at all
    ],
)
def test_bookmarks_follow_next_bookmark_time(timeout, instants):
    assert bookmark_instants(timeout, 300) == (instants, float(timeout))


def test_a_watch_without_a_deadline_gets_one_a_minute():
    assert bookmark_instants(None, 185) == ([60.0, 120.0, 180.0], None)


def test_over_http_with_the_official_watch_parameters(tmp_path):
    """The same through the server: allowWatchBookmarks and timeoutSeconds=70, with the
    request clock made the cluster's virtual one so the deadline is exact too."""
    clock = VirtualClock()
    with running_cluster(tmp_path, clock=clock, components=()) as cluster:
        assert cluster.apiserver is not None
        cluster.apiserver.handlers.request_clock = clock
        with httpx.Client(base_url=cluster.url) as client:
            rv = client.get("/api/v1/nodes").json()["metadata"]["resourceVersion"]
        events = open_watch(
            cluster, {"resourceVersion": rv, "allowWatchBookmarks": "true", "timeoutSeconds": "70"}
        )
        wait_for_sleepers(cluster, clock, 2)  # the end and the bookmark
        advance(cluster, clock, 60)
        assert events.get(timeout=10)["type"] == "BOOKMARK"
        advance(cluster, clock, 8)
        last = events.get(timeout=10)
        assert last == {
            "type": "BOOKMARK",
            "object": {"kind": "Node", "apiVersion": "v1", "metadata": {"resourceVersion": rv}},
        }
        advance(cluster, clock, 2)
        assert events.get(timeout=10) is None  # the watch ended at 70 s


@settings(max_examples=40, deadline=None)
@given(timeout=st.integers(min_value=-5, max_value=400))
def test_bookmarks_are_every_minute_then_two_seconds_before_the_end(timeout):
    """The rule for any timeoutSeconds: a heartbeat each minute while the pre-timeout
    instant is more than a minute away, then that instant; none for a watch under 2 s."""
    instants, ended = bookmark_instants(timeout, 500)
    if timeout == 0:
        assert ended is None  # no timeout: only heartbeats, until the test stops it
        assert instants == [60.0 * i for i in range(1, 9)]
        return
    assert ended == float(max(timeout, 0))
    if timeout < 2:
        assert instants == []
        return
    last = float(timeout - 2)
    heartbeats = [60.0 * i for i in range(1, 9) if 60.0 * i < last]
    assert instants == [*heartbeats, last]
