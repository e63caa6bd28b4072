"""One informer per kind for every component of `taintplane up` (one cache of each object),
and handlers added to a running informer told of what it already holds, as client-go's."""

from __future__ import annotations

import asyncio
from pathlib import Path

from taintplane.agents.nodes import NodeShape
from taintplane.client import resource
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster

PODS = resource("", "v1", "pods")


def test_up_keeps_one_cache_per_kind_for_all_its_components(tmp_path: Path) -> None:
    async def scenario() -> None:
        clock = VirtualClock()
        async with in_process_cluster(tmp_path, clock, nodes=[NodeShape("node-1")]) as cluster:
            assert cluster.scheduler is not None
            assert cluster.controller_manager is not None
            assert cluster.kubelets is not None
            shared = cluster.controller_manager.informers
            assert cluster.scheduler.informers is shared
            assert cluster.kubelets.informers is shared
            assert cluster.scheduler.pod_informer is shared.pods
            assert cluster.scheduler.node_informer is shared.nodes

    asyncio.run(scenario())


def test_a_handler_added_late_is_told_of_every_cached_object(tmp_path: Path) -> None:
    async def scenario() -> None:
        clock = VirtualClock()
        async with in_process_cluster(tmp_path, clock, nodes=[NodeShape("node-1")]) as cluster:
            assert cluster.client is not None
            assert cluster.controller_manager is not None
            for name in ("a", "b"):
                pod = {
                    "metadata": {"name": name},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                }
                await cluster.client.create(PODS, pod, namespace="default")
            await clock.advance(1)
            informer = cluster.controller_manager.informers.pods
            seen: list[str] = []
            informer.add_handlers(lambda obj: seen.append(obj["metadata"]["name"]))
            assert sorted(seen) == ["a", "b"]

    asyncio.run(scenario())
