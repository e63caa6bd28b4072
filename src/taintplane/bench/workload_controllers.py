"""How three workload controllers' cost grows with the size of their work (issue 16).

    .venv/bin/python benchmarks/workload_controllers.py daemonset --sizes 250 1000
    .venv/bin/python benchmarks/workload_controllers.py gc --sizes 1000 4000
    .venv/bin/python benchmarks/workload_controllers.py pdb --sizes 1000 4000

Each size runs in a fresh in-process cluster (SQLite store, as ``taintplane up``) on a
virtual clock, the clock advanced a second at a time:

- ``daemonset``: N simulated nodes (scheduler, kubelets, every controller); a DaemonSet is
  created and measured until its N pods report Running.
- ``gc``: no nodes, only the ReplicaSet controller and the garbage collector; a ReplicaSet of N
  pods, each held by a finalizer, is made (not measured), then deleted with
  ``propagationPolicy=Foreground`` and measured until it is gone: once the collector has
  deleted every pod, the finalizers are removed one pod at a time, the event loop settled
  after each (as kubelets finish terminating pods one by one, each a dependent gone).
- ``pdb``: no nodes, only the ReplicaSet and disruption controllers; a PodDisruptionBudget
  selecting the pods exists, a ReplicaSet of N replicas is created (a burst of N pod creations)
  and measured until the budget's ``expectedPods`` is N.

Measured: wall and process CPU (the store's writer thread included) from the action to the
end, per unit, and the growth t(N)/t(first N) against N/first N (``cpu_per_unit_vs_first``
1.0 is linear). The CPU includes the API writes every pod costs anyway; a controller whose
sync grows with N shows as a per-unit cost that grows with N. ``--profile FILE`` writes a
cProfile of the largest size. Progress goes to stderr; the figures are one JSON line on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from taintplane import runtime
from taintplane.agents.nodes import NodeShape
from taintplane.client import ApiError, resource
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import Cluster, in_process_cluster

DAEMONSETS = resource("apps", "v1", "daemonsets")
REPLICASETS = resource("apps", "v1", "replicasets")
PODS = resource("", "v1", "pods")
PDBS = resource("policy", "v1", "poddisruptionbudgets")
LABELS = {"app": "bench"}
TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": LABELS},
    "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
}
LIMIT_S = 3600


HOLD = "example.com/hold"


def _workload(
    kind: str, replicas: int | None = None, finalizers: list[str] | None = None
) -> dict[str, Any]:
    template: dict[str, Any] = dict(TEMPLATE)
    if finalizers:
        template["metadata"] = {**TEMPLATE["metadata"], "finalizers": finalizers}
    spec: dict[str, Any] = {"selector": {"matchLabels": LABELS}, "template": template}
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": "bench", "namespace": "default"},
        "spec": spec,
    }


async def _until(clock: VirtualClock, done: Callable[[], bool], what: str) -> int:
    seconds = 0
    while not done():
        await clock.advance(1)
        seconds += 1
        if seconds % 30 == 0:
            print(f"    {what}: {seconds} s simulated", file=sys.stderr)
        if seconds > LIMIT_S:
            raise RuntimeError(f"{what}: not done after {LIMIT_S} s simulated")
    return seconds


Scenario = Callable[[Cluster, VirtualClock, int], Awaitable[Callable[[], Awaitable[int]]]]


async def _daemonset(cluster: Cluster, clock: VirtualClock, size: int) -> Any:
    assert cluster.client is not None
    assert cluster.controller_manager is not None
    client = cluster.client
    running: set[str] = set()

    def seen(pod: dict[str, Any]) -> None:
        if (pod.get("status") or {}).get("phase") == "Running":
            running.add(pod["metadata"]["name"])

    cluster.controller_manager.informers.pods.add_handlers(seen, lambda old, new: seen(new))

    async def measured() -> int:
        await client.create(DAEMONSETS, _workload("DaemonSet"), namespace="default")
        return await _until(clock, lambda: len(running) >= size, "daemon pods Running")

    return measured


async def _gc(cluster: Cluster, clock: VirtualClock, size: int) -> Any:
    assert cluster.client is not None
    assert cluster.controller_manager is not None
    client = cluster.client
    pods = cluster.controller_manager.informers.pods
    await client.create(REPLICASETS, _workload("ReplicaSet", size, [HOLD]), namespace="default")
    await _until(clock, lambda: len(pods.cache) >= size, "pods created")
    replicasets = cluster.controller_manager.informers.of(REPLICASETS)

    def all_deleting() -> bool:
        return all(p["metadata"].get("deletionTimestamp") for p in pods.cache.values())

    async def measured() -> int:
        await client.delete(REPLICASETS, "bench", "default", propagation="Foreground")
        seconds = await _until(clock, all_deleting, "every pod deleted")
        for name in [p["metadata"]["name"] for p in pods.cache.values()]:
            await client.patch(PODS, name, {"metadata": {"finalizers": None}}, namespace="default")
            await clock.advance(0)
        seconds += await _until(
            clock, lambda: replicasets.get("default/bench") is None, "ReplicaSet gone"
        )
        try:
            await client.get(REPLICASETS, "bench", "default")
        except ApiError as error:
            if error.code != 404:
                raise
        else:
            raise RuntimeError("the ReplicaSet is still stored")
        if pods.cache:
            raise RuntimeError(f"{len(pods.cache)} pods left")
        return seconds

    return measured


async def _pdb(cluster: Cluster, clock: VirtualClock, size: int) -> Any:
    assert cluster.client is not None
    assert cluster.controller_manager is not None
    client = cluster.client
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "bench", "namespace": "default"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": LABELS}},
    }
    await client.create(PDBS, pdb, namespace="default")
    budgets = cluster.controller_manager.informers.of(PDBS)

    def counted() -> bool:
        found = budgets.get("default/bench")
        return bool(found and (found.get("status") or {}).get("expectedPods") == size)

    async def measured() -> int:
        await client.create(REPLICASETS, _workload("ReplicaSet", size), namespace="default")
        return await _until(clock, counted, "budget counts every pod")

    return measured


SCENARIOS: dict[str, tuple[Scenario, tuple[str, ...] | None, bool]] = {
    # name: (set-up returning the measured part, controllers (None: all), nodes = size)
    "daemonset": (_daemonset, None, True),
    "gc": (_gc, ("replicaset-controller", "garbage-collector-controller"), False),
    "pdb": (_pdb, ("replicaset-controller", "disruption-controller"), False),
}


async def run_one(scenario: str, size: int, profile: str | None) -> dict[str, Any]:
    setup, controllers, with_nodes = SCENARIOS[scenario]
    clock = VirtualClock()
    shapes = [NodeShape(f"node-{i}", zone="abc"[i % 3]) for i in range(1, size + 1)]
    options: dict[str, Any] = {"nodes": shapes if with_nodes else []}
    if controllers is not None:
        options["controllers"] = controllers
    with tempfile.TemporaryDirectory(prefix=f"tp-{scenario}-") as data:
        async with in_process_cluster(Path(data), clock, **options) as cluster:
            measured = await setup(cluster, clock, size)
            runtime.settle_heap()
            profiler = cProfile.Profile() if profile else None
            if profiler:
                profiler.enable()
            began, cpu = time.perf_counter(), time.process_time()
            seconds = await measured()
            wall, cpu = time.perf_counter() - began, time.process_time() - cpu
            if profiler and profile is not None:
                profiler.disable()
                profiler.dump_stats(profile)
                pstats.Stats(profile, stream=sys.stderr).sort_stats("tottime").print_stats(25)
    return {
        "size": size,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "cpu_per_unit_ms": round(cpu / size * 1000, 3),
        "simulated_s": seconds,
    }


async def run(scenario: str, sizes: list[int], profile: str | None) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    for at, size in enumerate(sizes):
        result = await run_one(scenario, size, profile if at == len(sizes) - 1 else None)
        if results:
            first = results[0]
            result["size_ratio"] = round(size / first["size"], 2)
            result["cpu_growth"] = round(result["cpu_s"] / first["cpu_s"], 1)
            result["cpu_per_unit_vs_first"] = round(
                result["cpu_per_unit_ms"] / first["cpu_per_unit_ms"], 2
            )
        print(f"  {scenario}: {json.dumps(result)}", file=sys.stderr)
        results.append(result)
    return {"scenario": scenario, "runs": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 1000])
    parser.add_argument("--profile")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.scenario, args.sizes, args.profile))))


if __name__ == "__main__":
    main()
