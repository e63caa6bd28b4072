"""The what-if copy takes over the nodes restored from the snapshot as the cluster's own
kubelets and node lifecycle controller left them: nothing is registered again (no Node or Lease
written at start, no Starting or RegisteredNode event, no condition taint lifted: the copy is
no restart), and from the snapshot's instant on heartbeats and taints are the cluster's."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from taintplane.agents.nodes import NodeShape
from taintplane.client import Client, resource
from taintplane.client.transport import InProcessTransport, RawRequest, RawResponse
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import Cluster, in_process_cluster
from taintplane.sim.snapshot import read_live
from taintplane.sim.whatif import run_what_if
from taintplane.sim.whatif_plan import apply_plan
from tests.controllers.harness import START
from tests.sim.test_what_if import plan

NODES = resource("", "v1", "nodes")
LEASES = resource("coordination.k8s.io", "v1", "leases")
EVENTS = resource("", "v1", "events")
#: The snapshot is read here; the window runs past the nodes' next status report (+300 s).
TAKEN, WINDOW = 130.0, 200.0


async def _heartbeats(client: Client) -> dict[str, Any]:
    """Each node's conditions, taints and Lease spec, and the node events."""
    nodes, _ = await client.list(NODES)
    leases, _ = await client.list(LEASES, "kube-node-lease")
    events, _ = await client.list(EVENTS)
    return {
        "conditions": {n["metadata"]["name"]: n["status"]["conditions"] for n in nodes},
        "taints": {n["metadata"]["name"]: n["spec"].get("taints") for n in nodes},
        "leases": {lease["metadata"]["name"]: lease["spec"] for lease in leases},
        "node_events": sorted(
            (e["involvedObject"]["name"], e["reason"])
            for e in events
            if e["involvedObject"].get("kind") == "Node"
        ),
    }


def reality(tmp_path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Three nodes, node-3 cordoned, node-2's kubelet stopped (Unknown and tainted
    unreachable within a minute), read at +130 s (the others' last status report at +0 s,
    their last renewal at +130 s); then node-1 tainted ``maintenance=true:NoSchedule`` as
    ``kubectl taint`` does and +200 s more. The snapshot, and the heartbeats and taints at the
    end (node events only of the window)."""

    async def main() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        clock = VirtualClock(START)
        nodes = [NodeShape(f"node-{i}") for i in (1, 2, 3)]
        async with in_process_cluster(tmp_path / "source", clock, nodes=nodes) as cluster:
            client = cluster.client
            assert client is not None
            await client.patch(NODES, "node-3", {"spec": {"unschedulable": True}})
            assert cluster.kubelets is not None
            cluster.kubelets.stop("node-2")
            await clock.advance(TAKEN)
            snapshot = await read_live(client)
            before = (await _heartbeats(client))["node_events"]
            question = plan(snapshot, "node-1", "maintenance=true:NoSchedule")
            await apply_plan(client, question, between=lambda: clock.advance(0))
            await clock.advance(WINDOW)
            after = await _heartbeats(client)
            window_events = list(after["node_events"])
            for event in before:
                window_events.remove(event)
            after["node_events"] = window_events
            return snapshot, after

    return asyncio.run(main())


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], Any]:
    return reality(tmp_path_factory.mktemp("source"))


def copy(snapshot: list[dict[str, Any]], window: float) -> dict[str, Any]:
    """The what-if of the same taint: the copy's heartbeats at the end of the window."""
    seen: dict[str, Any] = {}

    async def progress(cluster: Cluster, done: float, total: float) -> None:
        assert cluster.client is not None
        if done == total:
            seen["end"] = await _heartbeats(cluster.client)

    question = plan(snapshot, "node-1", "maintenance=true:NoSchedule")
    start = START + timedelta(seconds=TAKEN)
    asyncio.run(run_what_if(snapshot, question, start=start, window=window, progress=progress))
    return dict(seen["end"])


def test_the_copy_writes_nothing_to_its_nodes_when_it_starts(
    source: tuple[list[dict[str, Any]], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    snapshot, _ = source
    writes: list[tuple[str, str]] = []
    request, batch = InProcessTransport.request, InProcessTransport.batch

    async def counted(self: InProcessTransport, method: str, path: str, **kw: Any) -> RawResponse:
        if method != "GET":
            writes.append((method, path))
        return await request(self, method, path, **kw)

    async def counted_batch(
        self: InProcessTransport, requests: list[RawRequest]
    ) -> list[RawResponse]:
        writes.extend((r.method, r.path) for r in requests if r.method != "GET")
        return await batch(self, requests)

    monkeypatch.setattr(InProcessTransport, "request", counted)
    monkeypatch.setattr(InProcessTransport, "batch", counted_batch)
    seen: dict[str, Any] = {}
    started: list[int] = []

    async def progress(cluster: Cluster, done: float, total: float) -> None:
        if not started:
            started.append(len(writes))
            assert cluster.client is not None
            seen["start"] = await _heartbeats(cluster.client)

    question = plan(snapshot, "node-1", "maintenance=true:NoSchedule")
    start = START + timedelta(seconds=TAKEN)
    asyncio.run(run_what_if(snapshot, question, start=start, window=0, progress=progress))
    mine = [
        (method, path)
        for method, path in writes[: started[0]]
        if "/nodes" in path or "/leases" in path or "/events" in path
    ]
    assert mine == []
    assert seen["start"]["node_events"] == []
    # The Nodes and Leases are the snapshot's, heartbeats included.
    assert seen["start"]["conditions"] == {
        o["metadata"]["name"]: o["status"]["conditions"] for o in snapshot if o["kind"] == "Node"
    }
    assert seen["start"]["leases"] == {
        o["metadata"]["name"]: o["spec"]
        for o in snapshot
        if o["kind"] == "Lease" and o["metadata"]["namespace"] == "kube-node-lease"
    }


def test_the_copys_heartbeats_and_kubelet_events_are_the_clusters(
    source: tuple[list[dict[str, Any]], Any],
) -> None:
    """The status reports due at +300 s, the renewals every 10 s, node-2's unreachable
    taints as they were added, and no node event (no Starting or RegisteredNode, no
    NodeNotSchedulable for the cordon the kubelet of node-3 had told)."""
    snapshot, real = source
    heartbeat = {
        c["lastHeartbeatTime"] for name in ("node-1", "node-3") for c in real["conditions"][name]
    }
    assert heartbeat == {"2026-01-01T00:05:00Z"}
    assert [t["key"] for t in real["taints"]["node-2"]] == [
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/unreachable",
    ]
    assert copy(snapshot, WINDOW) == real
