"""An in-process component's watch gets no bookmark that would repeat the last one with
nothing in between (it would move its informer nowhere); one after a change carries the new
revision, on the same one-minute heartbeat. Over HTTP every heartbeat is sent
(``test_watch_bookmarks.py``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from taintplane.client import resource
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster

NODES = resource("", "v1", "nodes")


def test_a_bookmark_repeating_the_last_is_left_out(tmp_path: Path) -> None:
    async def main() -> None:
        clock = VirtualClock()
        async with in_process_cluster(tmp_path, clock, components=()) as cluster:
            client = cluster.client
            assert client is not None
            _, version = await client.list(NODES)
            seen: list[tuple[float, str, str]] = []

            async def watch() -> None:
                async for kind, obj in client.watch(NODES, resource_version=version):
                    seen.append((clock.monotonic(), kind, obj["metadata"]["resourceVersion"]))

            watcher = asyncio.create_task(watch())
            start = clock.monotonic()
            await clock.advance(300)  # five heartbeats, nothing changed
            created = await client.create(NODES, {"metadata": {"name": "n1"}})
            changed = created["metadata"]["resourceVersion"]
            await clock.advance(300)
            watcher.cancel()
            assert [(t - start, kind, rv) for t, kind, rv in seen] == [
                (60.0, "BOOKMARK", version),
                (300.0, "ADDED", changed),
                (360.0, "BOOKMARK", changed),
            ]

    asyncio.run(main())
