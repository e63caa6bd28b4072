"""NoExecute eviction throughput: how fast the taint eviction controller deletes pods once
their tolerations run out.

    .venv/bin/python benchmarks/eviction_throughput.py --nodes 1000 --pods 100000

Pods are bound to the nodes (spec.nodeName) and tolerate ``maintenance:NoExecute`` for 60 s.
Every node is then tainted; on virtual time the clock is advanced by 60 s, so every eviction
falls due at the same instant. Measured: wall time from the advance until every pod has its
DisruptionTarget condition and its deletion (graceful: ``deletionTimestamp`` set), persisted;
``TaintManagerEviction`` events are queued without waiting, as client-go's recorder does, and
written in the background (dropped when 1000 are queued: ``events_dropped``); advance()
returns only once they are written too, so they are inside the time. No kubelets run, so pods
stay Terminating, which keeps the measurement to the controller and the API. ``--profile FILE``
writes a cProfile. ``--floor`` then runs ``eviction_layers``' store-only layer (the same
three writes per pod straight through the ``Store``, one by one) on as many pods in the same
run, and reports the evictions as a fraction of it.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import tempfile
import time
from pathlib import Path
from typing import Any

from taintplane import runtime
from taintplane.bench.eviction_layers import store_layer
from taintplane.client import resource
from taintplane.clock import VirtualClock
from taintplane.controllers.tainteviction import TaintEvictionController
from taintplane.sim.cluster import in_process_cluster

NODES = resource("", "v1", "nodes")
PODS = resource("", "v1", "pods")


def pod(i: int, nodes: int) -> dict[str, Any]:
    return {
        "metadata": {"name": f"p-{i:06d}", "namespace": "default"},
        "spec": {
            "nodeName": f"node-{i % nodes:05d}",
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
            "tolerations": [
                {
                    "key": "maintenance",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 60,
                }
            ],
        },
    }


async def gather_limited(jobs: list[Any], limit: int = 64) -> None:
    slots = asyncio.Semaphore(limit)

    async def one(job: Any) -> None:
        async with slots:
            await job

    await asyncio.gather(*(one(job) for job in jobs))


async def run(nodes: int, pods: int, profile: str | None) -> dict[str, Any]:
    clock = VirtualClock()
    with tempfile.TemporaryDirectory() as data:
        async with in_process_cluster(
            Path(data),
            clock,
            components=("controller-manager",),
            controllers=("taint-eviction-controller",),
        ) as cluster:
            client = cluster.client
            assert client is not None
            assert cluster.controller_manager is not None
            controller = cluster.controller_manager.controllers["taint-eviction-controller"]
            assert isinstance(controller, TaintEvictionController)
            started = time.perf_counter()
            await gather_limited(
                [
                    client.create(NODES, {"metadata": {"name": f"node-{i:05d}"}})
                    for i in range(nodes)
                ]
            )
            await gather_limited(
                [client.create(PODS, pod(i, nodes), namespace="default") for i in range(pods)]
            )
            await clock.advance(0)
            runtime.settle_heap()  # as `taintplane up` does once started
            setup = time.perf_counter() - started
            taint = {"spec": {"taints": [{"key": "maintenance", "effect": "NoExecute"}]}}
            await gather_limited(
                [client.patch(NODES, f"node-{i:05d}", taint) for i in range(nodes)]
            )
            await clock.advance(0)
            scheduled = len([w for w in controller.workers.values() if w is not None])
            profiler = cProfile.Profile() if profile else None
            if profiler:
                profiler.enable()
            began, cpu = time.perf_counter(), time.process_time()
            await clock.advance(60)
            elapsed = time.perf_counter() - began
            cpu = time.process_time() - cpu
            if profiler and profile is not None:
                profiler.disable()
                profiler.dump_stats(profile)
                pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
            deleted = int(controller.metrics.deletions._value.get())
            # advance() returns once everything due has run: every eviction is done.
            assert deleted == scheduled, f"{deleted} of {scheduled} evicted"
            return {
                "nodes": nodes,
                "pods": pods,
                "setup_seconds": round(setup, 1),
                "scheduled_evictions": scheduled,
                "evicted": deleted,
                "eviction_seconds": round(elapsed, 2),
                "pods_per_second": round(deleted / elapsed, 1) if elapsed else None,
                # The process's CPU time (both threads): steadier than the wall on a shared host.
                "eviction_cpu_seconds": round(cpu, 2),
                # Events are best effort, as in client-go: a full queue (1000) drops them.
                "events_dropped": controller.recorder.dropped,
            }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--profile")
    parser.add_argument(
        "--floor",
        action="store_true",
        help="then run eviction_layers' store-only layer on as many pods, in the same run, "
        "and report the evictions as a fraction of that floor",
    )
    args = parser.parse_args()
    # As `taintplane up` runs (runtime.run: its interpreter switch interval included; the
    # virtual clock's asyncio loop).
    result = runtime.run(run(args.nodes, args.pods, args.profile), virtual_time=True)
    if args.floor:
        floor_seconds = runtime.run(store_layer(args.pods), virtual_time=True)
        floor = args.pods / floor_seconds
        result["store_floor_pods_per_second"] = round(floor, 1)
        result["fraction_of_store_floor"] = round(result["pods_per_second"] / floor, 3)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
