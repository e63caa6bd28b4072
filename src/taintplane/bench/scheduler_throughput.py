"""Scheduler throughput, after upstream's scheduler_perf SchedulingBasic.

    .venv/bin/python benchmarks/scheduler_throughput.py --nodes 5000 --pods 10000 [--taints]

5000 nodes (4 CPU, 32 GiB, 110 pods), 1000 pods already placed, then 10 000 pods measured:
the time from the first measured pod being created until every one is bound in the store
(bindings persisted through the pods/binding subresource). ``--taints`` is the taint-heavy
variant: 20 % of nodes tainted NoSchedule, 30 % PreferNoSchedule, half the pods tolerating.
The scheduler runs in-process (in-process transport) with the API server, as in ``up``.
Use ``--profile FILE`` to write a cProfile of the backlog run (scheduling alone).
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
from taintplane.apiserver.app import APIServer
from taintplane.client import Client, HTTPTransport, InProcessTransport, resource
from taintplane.clock import RealClock
from taintplane.scheduler.scheduler import Scheduler
from taintplane.store.sqlite import SqliteStore

NODES = resource("", "v1", "nodes")
PODS = resource("", "v1", "pods")


def node(i: int, taints: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if taints and i % 10 < 2:
        spec["taints"] = [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]
    elif taints and i % 10 < 5:
        spec["taints"] = [{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}]
    allocatable = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    return {
        "metadata": {
            "name": f"node-{i:05d}",
            "labels": {
                "kubernetes.io/hostname": f"node-{i:05d}",
                "topology.kubernetes.io/zone": f"zone-{i % 3}",
            },
        },
        "spec": spec,
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def pod(i: int, taints: bool, prefix: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
            }
        ]
    }
    if taints and i % 2 == 0:
        spec["tolerations"] = [
            {"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}
        ]
    return {"metadata": {"name": f"{prefix}-{i:05d}"}, "spec": spec}


async def add_node(server: APIServer, i: int, taints: bool) -> None:
    """Create a node, then give it back its own taints: TaintNodesByCondition added
    not-ready:NoSchedule, which the node lifecycle controller (not run here) lifts."""
    wanted = node(i, taints)
    created = await server.registry.create(NODES, "", wanted)
    created["spec"]["taints"] = wanted["spec"].get("taints")
    await server.registry.update(NODES, "", created["metadata"]["name"], created)


async def run(
    nodes: int, placed: int, pods: int, taints: bool, profile: Path | None
) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="tp-sched-") as tmp:
        store = await SqliteStore(Path(tmp) / "state.db").open()
        server = APIServer(store, RealClock())
        await server.bootstrap()
        pod_type = PODS
        for first in range(0, nodes, 500):
            await asyncio.gather(
                *(add_node(server, i, taints) for i in range(first, min(first + 500, nodes)))
            )
        runtime.settle_heap()  # as `taintplane up` does once started
        client = Client(InProcessTransport(server.app))
        scheduler = Scheduler(client, RealClock(), seed=1)
        task = asyncio.create_task(scheduler.run())
        await scheduler.pod_informer.synced.wait()

        async def create_and_wait(prefix: str, count: int) -> float:
            bound = asyncio.Event()
            done: set[str] = set()

            def on_update(old: dict[str, Any], new: dict[str, Any]) -> None:
                name = new["metadata"]["name"]
                if name.startswith(prefix) and new["spec"].get("nodeName"):
                    done.add(name)
                    if len(done) == count:
                        bound.set()

            scheduler.pod_informer.add_handlers(on_update=on_update)
            started = time.perf_counter()
            for first in range(0, count, 500):
                await asyncio.gather(
                    *(
                        server.registry.create(pod_type, "default", pod(i, taints, prefix))
                        for i in range(first, min(first + 500, count))
                    )
                )
            await bound.wait()
            # Events are written in the background: count the time to write them too.
            await scheduler.recorder.flush()
            return time.perf_counter() - started

        await create_and_wait("placed", placed)
        elapsed = await create_and_wait("measured", pods)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

        # Backlog: the same number of pods created while no scheduler runs, then a fresh
        # scheduler starts and is timed until every one is bound (scheduling alone).
        for first in range(0, pods, 500):
            await asyncio.gather(
                *(
                    server.registry.create(pod_type, "default", pod(i, taints, "backlog"))
                    for i in range(first, min(first + 500, pods))
                )
            )
        fresh = Scheduler(client, RealClock(), seed=1)
        bound = asyncio.Event()
        done: set[str] = set()

        def on_update(old: dict[str, Any], new: dict[str, Any]) -> None:
            if new["metadata"]["name"].startswith("backlog") and new["spec"].get("nodeName"):
                done.add(new["metadata"]["name"])
                if len(done) == pods:
                    bound.set()

        fresh.pod_informer.add_handlers(on_update=on_update)
        launched = time.perf_counter()
        task = asyncio.create_task(fresh.run())
        await fresh.node_informer.synced.wait()
        await fresh.pod_informer.synced.wait()
        started = time.perf_counter()  # the cold start (listing 5000 nodes, 21000 pods) is apart
        profiler = cProfile.Profile() if profile else None
        if profiler:
            profiler.enable()
        await bound.wait()
        await fresh.recorder.flush()
        backlog = time.perf_counter() - started
        if profiler and profile is not None:
            profiler.disable()
            profiler.dump_stats(profile)
        sync = started - launched
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await server.close()
        await store.close()
        return {
            "nodes": nodes,
            "pods": pods,
            "seconds": elapsed,
            "pods_per_s": pods / elapsed,
            "backlog_seconds": backlog,
            "backlog_pods_per_s": pods / backlog,
            "informer_sync_seconds": sync,
            # Events are best effort, as in client-go: a full queue (1000) drops them.
            "events_dropped": scheduler.recorder.dropped + fresh.recorder.dropped,
        }


async def run_remote(nodes: int, pods: int, taints: bool, port: int) -> dict[str, float]:
    """The backlog against a separate ``taintplane serve`` process, over HTTP."""
    import subprocess
    import sys

    with tempfile.TemporaryDirectory(prefix="tp-sched-remote-") as tmp:
        store = await SqliteStore(Path(tmp) / "state.db").open()
        server = APIServer(store, RealClock())
        await server.bootstrap()
        for first in range(0, nodes, 500):
            await asyncio.gather(
                *(add_node(server, i, taints) for i in range(first, min(first + 500, nodes)))
            )
        for first in range(0, pods, 500):
            await asyncio.gather(
                *(
                    server.registry.create(PODS, "default", pod(i, taints, "remote"))
                    for i in range(first, min(first + 500, pods))
                )
            )
        await server.close()
        await store.close()
        process = subprocess.Popen(
            [sys.executable, "-m", "taintplane", "serve", "--data-dir", tmp, "--port", str(port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert process.stdout is not None
        process.stdout.readline()
        runtime.settle_heap()
        transport = HTTPTransport(f"http://127.0.0.1:{port}")
        try:
            scheduler = Scheduler(Client(transport), RealClock(), seed=1)
            bound = asyncio.Event()
            done: set[str] = set()

            def on_update(old: dict[str, Any], new: dict[str, Any]) -> None:
                if new["spec"].get("nodeName"):
                    done.add(new["metadata"]["name"])
                    if len(done) == pods:
                        bound.set()

            scheduler.pod_informer.add_handlers(on_update=on_update)
            task = asyncio.create_task(scheduler.run())
            await scheduler.node_informer.synced.wait()
            await scheduler.pod_informer.synced.wait()
            started = time.perf_counter()
            await bound.wait()
            await scheduler.recorder.flush()  # the events are part of the work
            elapsed = time.perf_counter() - started
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        finally:
            await transport.close()
            process.terminate()
            process.wait()
        return {"remote_seconds": elapsed, "remote_pods_per_s": pods / elapsed}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--placed", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--taints", action="store_true")
    parser.add_argument("--profile", type=Path)
    parser.add_argument(
        "--remote",
        action="store_true",
        help="only the backlog against a separate `taintplane serve` over HTTP",
    )
    parser.add_argument("--port", type=int, default=18777)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    variant = "taint-heavy" if args.taints else "basic"
    if args.remote:
        remote = runtime.run(run_remote(args.nodes, args.pods, args.taints, args.port))
        print(
            f"{variant}, separate API server process: {args.pods} pods on {args.nodes} nodes "
            f"scheduled in {remote['remote_seconds']:.2f} s = "
            f"{remote['remote_pods_per_s']:.0f} pods/s"
        )
        return 0
    result = runtime.run(run(args.nodes, args.placed, args.pods, args.taints, args.profile))
    print(
        f"{variant}: {args.nodes} nodes: {args.pods} pods created and scheduled in "
        f"{result['seconds']:.2f} s = {result['pods_per_s']:.0f} pods/s; a backlog of "
        f"{args.pods} pods scheduled in {result['backlog_seconds']:.2f} s = "
        f"{result['backlog_pods_per_s']:.0f} pods/s (after {result['informer_sync_seconds']:.2f} s "
        f"of informer sync; {result['events_dropped']} events dropped)"
    )
    if args.profile:
        pstats.Stats(str(args.profile)).sort_stats("tottime").print_stats(15)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
