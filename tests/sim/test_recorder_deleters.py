"""The recorder names who deleted a pod from the controllers' ``SuccessfulDelete`` events,
keeping only those events and looking them up by pod, not walking them once per pod; on the
cluster's shared informers it keeps no second cache of pods and nodes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from taintplane.agents.nodes import NodeShape
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster
from taintplane.sim.recorder import EVENTS, Recorder
from tests.controllers.harness import START
from tests.sim.test_what_if import PODS, pinned_pod


def event(name: str, namespace: str, reason: str, message: str, owner: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {"kind": "ReplicaSet", "name": owner, "namespace": namespace},
        "reason": reason,
        "message": message,
        "type": "Normal",
        "source": {"component": "replicaset-controller"},
    }


def test_deleters_come_from_successful_delete_events_only(tmp_path: Path) -> None:
    async def main() -> None:
        clock = VirtualClock(START)
        async with in_process_cluster(tmp_path, clock, components=()) as cluster:
            client = cluster.client
            assert client is not None
            for obj in (
                event("e1", "default", "SuccessfulDelete", "Deleted pod: web-a", "web-1"),
                event("e2", "default", "Scheduled", "Deleted pod: web-b", "web-1"),
                event("e3", "kube-system", "SuccessfulDelete", "Deleted pod: web-c", "dns-1"),
                event("e4", "default", "SuccessfulCreate", "Created pod: web-d", "web-1"),
            ):
                namespace = obj["metadata"]["namespace"]
                await client.create(EVENTS, obj, namespace)
            recorder = Recorder(client, clock)
            await recorder.start()
            try:
                # Only the deletions are kept.
                assert sorted(e["metadata"]["name"] for e in recorder.events.cache.values()) == [
                    "e1",
                    "e3",
                ]
                assert recorder.deleted_by("default/web-a") == "ReplicaSet web-1"
                assert recorder.deleted_by("kube-system/web-c") == "ReplicaSet dns-1"
                assert recorder.deleted_by("default/web-b") == ""  # not a deletion event
                assert recorder.deleted_by("default/web-c") == ""  # another namespace's
                # An event arriving later is found too.
                await client.create(
                    EVENTS,
                    event("e5", "default", "SuccessfulDelete", "Deleted pod: web-e", "web-2"),
                    "default",
                )
                await clock.advance(1)
                assert recorder.deleted_by("default/web-e") == "ReplicaSet web-2"
            finally:
                await recorder.stop()

    asyncio.run(main())


def test_on_the_clusters_informers_it_records_without_caching_pods_again(tmp_path: Path) -> None:
    async def main() -> None:
        clock = VirtualClock(START)
        nodes = [NodeShape("node-1")]
        async with in_process_cluster(tmp_path, clock, nodes=nodes) as cluster:
            client, informers = cluster.client, cluster.informers
            assert client is not None
            assert informers is not None
            await client.create(PODS, pinned_pod("before", "node-1", []), "default")
            await clock.advance(5)
            recorder = Recorder(client, clock, informers)
            await recorder.start()
            try:
                assert recorder.pods is informers.pods
                assert recorder.nodes is informers.nodes
                assert "default/before" in recorder.pods.cache
                await client.create(PODS, pinned_pod("after", "node-1", []), "default")
                await clock.advance(5)
                events = [(h.event, h.name) for h in recorder.timeline]
                assert ("created", "after") in events
                assert ("running", "after") in events
                assert all(name != "before" for _, name in events)  # there before it started
            finally:
                await recorder.stop()

    asyncio.run(main())
