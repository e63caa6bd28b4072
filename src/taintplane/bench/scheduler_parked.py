"""The ``parked`` family of :mod:`taintplane.bench.scheduler_churn`: the cost of cluster events
against the pods waiting, not the nodes (queueing hints, issue 16).

P pods are parked unschedulable by one plugin (their first attempts are not measured); then
``--events`` events arrive, and after each every pod the queue releases is tried again (a cycle
that fails, as the scheduler would). The clock stands still (the five-minute flush, which
retries every parked pod whatever happens, is the same with hints or without). Measured per
event; the growth is cpu(P)/cpu(first P) against P/first P (0: events cost nothing per pod).

- ``parked``: every node is tainted ``dedicated``, which no pod tolerates (TaintToleration).
  Events alternate a status report (a condition's heartbeat moves: no scheduling property
  changes) and another taint none of them tolerates, added to or removed from a node.
- ``affinity``: every pod requires pod affinity, by zone, to ``app=db`` pods that no zone has
  (InterPodAffinity). Events alternate a status report and a label (not the zone) changed on
  a node, as labelling controllers and ``kubectl label`` do.
- ``claims``: every node's one device is held by an allocated claim; every pod has a claim of
  its own for one (DynamicResources: cannot allocate). Events alternate another pod's claim
  created and a holder claim updated with the same status (a finalizer added, as the
  scheduler's PreBind does for other pods' claims).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from taintplane.clock import VirtualClock
from taintplane.scheduler.scheduler import RESOURCE_CLAIMS, Scheduler

KINDS = ("parked", "affinity", "claims")
DRIVER = "gpu.example.com"
#: One event, given its number: applied through the scheduler's handlers.
Event = Callable[[int], None]


def _node(i: int, taints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    name = f"node-{i:05d}"
    allocatable = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": "abc"[i % 3]}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints} if taints else {},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "10m"}}}
    meta = {"name": name, "namespace": "bench", "uid": name}
    return {"metadata": meta, "spec": {"containers": [container], **spec}}


def _claim(name: str, node: int | None = None) -> dict[str, Any]:
    exactly = {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}
    claim: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "bench", "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
        "status": {},
    }
    if node is not None:
        pool = f"node-{node:05d}"
        result = {"request": "gpu", "driver": DRIVER, "pool": pool, "device": "gpu-0"}
        claim["status"] = {"allocation": {"devices": {"results": [result]}}}
    return claim


def _status_reports(scheduler: Scheduler, objects: list[dict[str, Any]]) -> Event:
    """An event that is a status report of one node: its Ready condition's heartbeat moves."""

    def beat(k: int) -> None:
        i = (k * 7919) % len(objects)
        old = objects[i]
        stamp = f"2026-01-01T00:{k // 60 % 60:02d}:{k % 60:02d}Z"
        condition = {"type": "Ready", "status": "True", "lastHeartbeatTime": stamp}
        objects[i] = {**old, "status": {**old["status"], "conditions": [condition]}}
        scheduler._node_updated(old, objects[i])

    return beat


def _taint_setup(scheduler: Scheduler, nodes: int, pending: int) -> Event:
    dedicated = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    objects = [_node(i, dedicated) for i in range(nodes)]
    for node in objects:
        scheduler._node_added(node)
    for j in range(pending):
        scheduler._pod_added(_pod(f"pending-{j}"))
    beat = _status_reports(scheduler, objects)

    def event(k: int) -> None:
        if k % 2 == 0:
            beat(k)
            return
        i = (k * 7919) % nodes
        old = objects[i]
        taints = list(old["spec"]["taints"])
        other = {"key": f"maintenance-{k}", "effect": "NoSchedule"}
        taints = taints[:1] if len(taints) > 1 else [*taints, other]
        objects[i] = {**old, "spec": {**old["spec"], "taints": taints}}
        scheduler._node_updated(old, objects[i])

    return event


def _affinity_setup(scheduler: Scheduler, nodes: int, pending: int) -> Event:
    objects = [_node(i) for i in range(nodes)]
    for node in objects:
        scheduler._node_added(node)
    term = {
        "labelSelector": {"matchLabels": {"app": "db"}},
        "topologyKey": "topology.kubernetes.io/zone",
    }
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    for j in range(pending):
        scheduler._pod_added(_pod(f"pending-{j}", affinity=affinity))
    beat = _status_reports(scheduler, objects)

    def event(k: int) -> None:
        if k % 2 == 0:
            beat(k)
            return
        i = (k * 7919) % nodes
        old = objects[i]
        labels = {**old["metadata"]["labels"], "round": str(k)}
        objects[i] = {**old, "metadata": {**old["metadata"], "labels": labels}}
        scheduler._node_updated(old, objects[i])

    return event


def _claims_setup(scheduler: Scheduler, nodes: int, pending: int) -> Event:
    caches = scheduler.dra_caches
    caches.classes["gpu"] = {  # type: ignore[index]
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }
    informer = scheduler.informers.of(RESOURCE_CLAIMS)
    holders = []
    for i in range(nodes):
        name = f"node-{i:05d}"
        scheduler._node_added(_node(i))
        caches.slices[name] = {  # type: ignore[index]
            "metadata": {"name": name},
            "spec": {
                "driver": DRIVER,
                "nodeName": name,
                "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0"}],
            },
        }
        holders.append(_claim(f"held-{i}", i))
        informer._store(f"bench/held-{i}", holders[-1])
    for j in range(pending):
        informer._store(f"bench/claim-{j}", _claim(f"claim-{j}"))
        claims = [{"name": "gpu", "resourceClaimName": f"claim-{j}"}]
        scheduler._pod_added(_pod(f"pending-{j}", resourceClaims=claims))

    def event(k: int) -> None:
        if k % 2 == 0:
            created = _claim(f"other-{k}")
            informer._store(f"bench/other-{k}", created)
            informer._added(created)
            return
        i = (k * 7919) % nodes
        old = holders[i]
        meta = {**old["metadata"], "finalizers": ["resource.kubernetes.io/delete-protection"]}
        holders[i] = {**old, "metadata": {**meta, "resourceVersion": str(k)}}
        informer._store(f"bench/held-{i}", holders[i])
        informer._updated(old, holders[i])

    return event


SETUPS = {"parked": _taint_setup, "affinity": _affinity_setup, "claims": _claims_setup}


def run_parked(nodes: int, pending: int, events: int, kind: str = "parked") -> dict[str, Any]:
    """See the module docstring."""
    scheduler = Scheduler(client=None, clock=VirtualClock(), seed=1)  # type: ignore[arg-type]
    queue = scheduler.queue

    async def drain() -> int:
        """Try every pod the queue holds ready (each fails and is parked again)."""
        tried = 0
        # Not queue.pending(): it counts every pod, which would make each try cost O(P).
        while queue._active or queue._backoff:
            popping = asyncio.ensure_future(queue.pop())
            await asyncio.sleep(0)
            if not popping.done():  # only stale entries were left
                popping.cancel()
                break
            pod = popping.result()
            decision = scheduler.decide(pod)
            if decision.node:
                raise SystemExit(f"{pod.key} fit on {decision.node}")
            rejected = decision.diagnosis.unschedulable_plugins if decision.diagnosis else set()
            queue.unschedulable(pod, rejected)
            tried += 1
        return tried

    async def scenario() -> tuple[float, float, int]:
        event = SETUPS[kind](scheduler, nodes, pending)
        await drain()
        assert queue.pending() == {"unschedulable": pending}, queue.pending()
        cpu, wall = time.process_time(), time.perf_counter()
        tried = 0
        for k in range(events):
            event(k)
            tried += await drain()
        return time.process_time() - cpu, time.perf_counter() - wall, tried

    cpu, wall, tried = asyncio.run(scenario())
    return {
        "nodes": nodes,
        "pending": pending,
        "events": events,
        "cycles": tried,
        "cpu_s": round(cpu, 3),
        "wall_s": round(wall, 3),
        "cpu_per_event_ms": round(1000 * cpu / events, 3),
    }
