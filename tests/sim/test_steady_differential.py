"""Heartbeat elision (``taintplane.sim.steady``) against the full per-tick protocol: the same
faults on the same cluster give the same timeline — Node and Pod changes with their instants
(taints with timeAdded, conditions, evictions), Events, and every Lease and Node (renewTime
and lastHeartbeatTime included) read through the API whenever time stands still."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from taintplane.agents.nodes import NodeShape
from taintplane.client import resource
from taintplane.client.informer import Informer
from taintplane.clock import VirtualClock
from taintplane.controllers.manager import ControllerConfig
from taintplane.controllers.nodelifecycle import NodeLifecycleConfig
from taintplane.sim.cluster import Cluster, in_process_cluster

NODES = resource("", "v1", "nodes")
PODS = resource("", "v1", "pods")
LEASES = resource("coordination.k8s.io", "v1", "leases")
EVENTS = resource("", "v1", "events")
ZONES = "abc"
COUNT = 21  # 7 a zone: "large" for the test's threshold of 6, so rate limits apply


def _clean(obj: dict[str, Any]) -> dict[str, Any]:
    """What is the same in both runs: not resourceVersions (fewer writes happen with
    elision) nor uids (random)."""
    text = re.sub(
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "U", json.dumps(obj)
    )
    obj = json.loads(text)
    metadata = obj.get("metadata") or {}
    for key in ("resourceVersion", "uid"):
        metadata.pop(key, None)
    for owner in metadata.get("ownerReferences") or []:
        owner.pop("uid", None)
    return obj


def _essence(obj: dict[str, Any]) -> dict[str, Any]:
    obj = _clean(obj)
    obj["metadata"].pop("managedFields", None)
    for c in (obj.get("status") or {}).get("conditions") or []:
        c.pop("lastHeartbeatTime", None)
    return obj


class Recorder:
    def __init__(self, cluster: Cluster, clock: VirtualClock) -> None:
        self.cluster, self.clock = cluster, clock
        self.timeline: list[Any] = []
        self.changes: list[tuple[str, str, str, str]] = []
        assert cluster.kubelets is not None
        informers = cluster.kubelets.informers
        for kind, informer in (("node", informers.nodes), ("pod", informers.pods)):
            self._follow(kind, informer)

    def _follow(self, kind: str, informer: Informer) -> None:
        def added(obj: dict[str, Any]) -> None:
            self.note(kind, "added", None, obj)

        def updated(old: dict[str, Any], new: dict[str, Any]) -> None:
            self.note(kind, "updated", old, new)

        def deleted(obj: dict[str, Any]) -> None:
            self.note(kind, "deleted", None, obj)

        informer.add_handlers(added, updated, deleted)

    def note(self, kind: str, verb: str, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        if old is not None and _essence(old) == _essence(new):
            return  # a heartbeat, which elision does not write tick by tick
        change = json.dumps(_essence(new), sort_keys=True)
        self.changes.append((self.clock.now().isoformat(), kind, verb, change))

    async def sample(self, label: str) -> None:
        client = self.cluster.client
        assert client is not None
        # Changes at one instant in any order (concurrent writers order them at will, with
        # or without elision), instants in order.
        self.timeline.extend(sorted(self.changes))
        self.changes = []
        leases, _ = await client.list(LEASES, namespace="kube-node-lease")
        nodes, _ = await client.list(NODES)
        pods, _ = await client.list(PODS)
        events, _ = await client.list(EVENTS)
        self.timeline.append(
            (
                label,
                self.clock.now().isoformat(),
                sorted((_clean(x) for x in leases), key=str),
                sorted((_clean(x) for x in nodes), key=str),
                sorted((_clean(x) for x in pods), key=str),
                sorted(_event(e) for e in events),
            )
        )


def _event(event: dict[str, Any]) -> tuple[Any, ...]:
    what = (event.get("reason"), (event.get("involvedObject") or {}).get("name"))
    if what[0] == "RegisteredNode":
        # Whether the controller's first pass (instant 0) already sees the nodes registered
        # concurrently at start-up varies from run to run, with or without elision.
        return what
    return (
        *what,
        event.get("message"),
        event.get("count"),
        event.get("firstTimestamp"),
        event.get("lastTimestamp"),
        str(event.get("eventTime")),
    )


def _pod(name: str, node: str, toleration_seconds: int | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": node, "containers": [{"name": "c", "image": "nginx"}]}
    if toleration_seconds is not None:
        spec["tolerations"] = [
            {
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": toleration_seconds,
            }
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


async def _taint(cluster: Cluster, names: list[str], taints: list[dict[str, Any]]) -> None:
    client = cluster.client
    assert client is not None
    for name in names:
        await client.patch(NODES, name, {"spec": {"taints": taints or None}})


async def play(data_dir: Path, elide: bool) -> tuple[list[Any], int]:
    clock = VirtualClock()
    shapes = [NodeShape(f"node-{i}", zone=ZONES[i % 3]) for i in range(1, COUNT + 1)]
    config = ControllerConfig(node_lifecycle=NodeLifecycleConfig(large_cluster_size_threshold=6))
    async with in_process_cluster(
        data_dir, clock, controller_config=config, elide_heartbeats=elide
    ) as cluster:
        kubelets, client = cluster.kubelets, cluster.client
        assert kubelets is not None
        assert client is not None
        record = Recorder(cluster, clock)  # before any node: it sees every change
        # One by one: the order nodes reach the informers is the order the controller
        # queues them for tainting, under a rate limit.
        await kubelets.add(shapes, concurrency=1)
        for i in range(1, COUNT + 1, 2):
            await client.create(PODS, _pod(f"p{i}", f"node-{i}", None), namespace="default")
            await client.create(PODS, _pod(f"q{i}", f"node-{i}", 90), namespace="default")

        async def advance(seconds: float, label: str) -> None:
            await clock.advance(seconds)
            await record.sample(label)

        await advance(8 * 60 + 3, "steady")
        kubelets.stop("node-1")
        await advance(4 * 60, "node-1 silent")
        await advance(3 * 60 + 1, "node-1 evictions")
        await kubelets.start("node-1")
        await advance(97, "node-1 back")
        zone_b = kubelets.zone_nodes("b")
        for name in zone_b:
            kubelets.stop(name)
        await advance(9 * 60, "zone b outage")
        for name in zone_b:
            await kubelets.start(name)
        await advance(6 * 60 + 7, "zone b back")
        for name in kubelets.nodes:
            kubelets.stop(name)
        await advance(2 * 60, "full disruption")
        for name in kubelets.nodes:
            await kubelets.start(name)
        await advance(3 * 60, "all back")
        third = [f"node-{i}" for i in range(2, COUNT + 1, 3)]
        await _taint(cluster, third, [{"key": "maint", "value": "x", "effect": "NoExecute"}])
        await advance(65, "NoExecute wave")
        await _taint(cluster, third, [])
        await kubelets.set_condition("node-4", "MemoryPressure", "True")
        await advance(6 * 60 + 3, "memory pressure, steady again")
        elided = getattr(kubelets.elision, "elided_ticks", 0)
    return record.timeline, elided


def test_elided_heartbeats_give_the_full_protocols_timeline(tmp_path: Path) -> None:
    full, none = asyncio.run(play(tmp_path / "full", elide=False))
    fast, elided = asyncio.run(play(tmp_path / "fast", elide=True))
    assert none == 0
    assert elided > 60  # the steady stretches were elided
    assert len(fast) == len(full)
    for a, b in zip(full, fast, strict=True):
        assert a == b, a[:2]
