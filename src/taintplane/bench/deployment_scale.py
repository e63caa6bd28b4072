"""One Deployment of N replicas until every pod is Running: how the workload controllers'
cost grows with N.

    .venv/bin/python benchmarks/deployment_scale.py --nodes 1000 --replicas 1000 10000 100000

For each N a fresh in-process cluster (SQLite store, scheduler, controller manager and
simulated kubelets, as ``taintplane up``) on a virtual clock with ``--nodes`` nodes; a
Deployment of N replicas is created and the clock advanced a second at a time until all N
pods report phase Running. Measured: wall and CPU time from the create to the last Running
pod (cluster start-up apart), per pod, and the growth ratio t(N)/t(first N) against
N/first N (``per_pod_vs_first`` 1.0 is linear). On a shared machine the CPU time is the
steadier figure. ``--profile FILE`` writes a cProfile of the largest N. ``--census`` counts
every API request from the create to the last Running pod by verb, resource, subresource,
field manager and component (:mod:`taintplane.bench.census`), per pod: a table on stderr and
``census`` rows in the JSON (the CPU figures then include the counting).
Progress goes to stderr; the figures are one JSON line on stdout.
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
from pathlib import Path
from typing import Any

from taintplane import runtime
from taintplane.agents.nodes import NodeShape
from taintplane.bench.census import Census
from taintplane.client import resource
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import Cluster, in_process_cluster

DEPLOYMENTS = resource("apps", "v1", "deployments")


def deployment(replicas: int, name: str = "web") -> dict[str, Any]:
    """A Deployment of ``replicas`` pause pods, labelled ``app: NAME``."""
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }


def running_pods(cluster: Cluster) -> set[str]:
    """The names of the pods the controller manager's informer has seen Running, kept
    current from now on (the set returned grows as pods start)."""
    assert cluster.controller_manager is not None
    running: set[str] = set()

    def seen(pod: dict[str, Any]) -> None:
        if (pod.get("status") or {}).get("phase") == "Running":
            running.add(pod["metadata"]["name"])

    cluster.controller_manager.informers.pods.add_handlers(seen, lambda old, new: seen(new))
    return running


async def run_one(
    nodes: int, replicas: int, profile: str | None, census: Census | None = None
) -> dict[str, Any]:
    clock = VirtualClock()
    shapes = [NodeShape(f"node-{i}", zone="abc"[i % 3]) for i in range(1, nodes + 1)]
    with tempfile.TemporaryDirectory(prefix="tp-deploy-") as data:
        async with in_process_cluster(Path(data), clock, nodes=shapes) as cluster:
            client = cluster.client
            assert client is not None
            running = running_pods(cluster)
            if census is not None:
                assert cluster.apiserver is not None
                # Every in-process request (each of a batch too) passes the server's entry.
                api = cluster.apiserver
                setattr(api, "_asgi", census.wrap(api._asgi))  # noqa: B010
            runtime.settle_heap()  # as `taintplane up` does once started
            profiler = cProfile.Profile() if profile else None
            if profiler:
                profiler.enable()
            began, cpu = time.perf_counter(), time.process_time()
            await client.create(DEPLOYMENTS, deployment(replicas), namespace="default")
            seconds = 0
            while len(running) < replicas:
                await clock.advance(1)
                seconds += 1
                if seconds % 10 == 0:
                    print(
                        f"  N={replicas}: {len(running)} Running after {seconds} s simulated, "
                        f"{time.perf_counter() - began:.1f} s wall",
                        file=sys.stderr,
                    )
                if seconds > 3600:
                    raise RuntimeError(f"only {len(running)} of {replicas} Running after 1 h")
            wall = time.perf_counter() - began
            cpu = time.process_time() - cpu
            if profiler and profile is not None:
                profiler.disable()
                profiler.dump_stats(profile)
                pstats.Stats(profile, stream=sys.stderr).sort_stats("tottime").print_stats(25)
            result: dict[str, Any] = {
                "replicas": replicas,
                "wall_s": round(wall, 2),
                "per_pod_ms": round(wall / replicas * 1000, 3),
                # CPU of the whole process (the store's writer thread included): what the
                # machine's other load does not change.
                "cpu_s": round(cpu, 2),
                "cpu_per_pod_ms": round(cpu / replicas * 1000, 3),
                "simulated_s": seconds,
            }
            if census is not None:
                rows = census.table(replicas)
                print(f"  census, N={replicas}:\n{Census.format(rows)}", file=sys.stderr)
                result["census"] = rows
            return result


async def run(
    nodes: int, sizes: list[int], profile: str | None, census: bool = False
) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    for at, replicas in enumerate(sizes):
        result = await run_one(
            nodes,
            replicas,
            profile if at == len(sizes) - 1 else None,
            Census() if census else None,
        )
        if results:
            first = results[0]
            result["growth"] = round(result["wall_s"] / first["wall_s"], 1)
            result["size_ratio"] = replicas // first["replicas"]
            # 1.0: the cost per pod stays what it was at the first size (linear in N).
            result["per_pod_vs_first"] = round(result["per_pod_ms"] / first["per_pod_ms"], 2)
            result["cpu_growth"] = round(result["cpu_s"] / first["cpu_s"], 1)
        print(
            f"  {json.dumps({k: v for k, v in result.items() if k != 'census'})}", file=sys.stderr
        )
        results.append(result)
    return {"nodes": nodes, "runs": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--replicas", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--profile")
    parser.add_argument("--census", action="store_true", help="count the API requests per pod")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.nodes, args.replicas, args.profile, args.census))))


if __name__ == "__main__":
    main()
