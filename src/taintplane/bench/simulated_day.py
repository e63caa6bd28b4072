"""A simulated day: `taintplane simulate` of N nodes in 3 zones, a Deployment of M pods, a
DaemonSet, and failures and taint waves through the day; wall time for the whole run.

    .venv/bin/python benchmarks/simulated_day.py --nodes 100 --pods 2000 --hours 24

The scenario: at 1h a NoExecute maintenance taint on a tenth of the nodes (removed at 2h), at
6h zone c goes silent for 20 minutes, at 12h a NoSchedule wave on a third of the nodes, at 18h
MemoryPressure on a few nodes; the DESIGN.md target is 5000 nodes, 100 000 pods, < 60 s wall.
Progress goes to stderr; the figures are one JSON line on stdout: wall time, how much of it
starting the cluster took (nodes registered, before the Deployment), process CPU time and peak
RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import resource
import sys
import time
from typing import TYPE_CHECKING, Any

from taintplane import runtime
from taintplane.api.duration import parse_duration
from taintplane.sim.scenario import parse_scenario
from taintplane.sim.simulate import run_scenario

if TYPE_CHECKING:
    from taintplane.sim.cluster import Cluster


def scenario(nodes: int, pods: int, hours: float) -> dict[str, Any]:
    """The day's scenario, cut to ``hours`` (steps after the end are left out)."""
    tenth = [f"node-{i}" for i in range(1, nodes + 1, 10)]
    third = [f"node-{i}" for i in range(1, nodes + 1, 3)]
    labels = {"app": "web"}
    return {
        "name": f"a day of {nodes} nodes",
        "cluster": {"pools": [{"name": "node", "count": nodes, "zones": ["a", "b", "c"]}]},
        "objects": [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web"},
                "spec": {
                    "replicas": pods,
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                    },
                },
            },
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": "agent"},
                "spec": {
                    "selector": {"matchLabels": {"app": "agent"}},
                    "template": {
                        "metadata": {"labels": {"app": "agent"}},
                        "spec": {"containers": [{"name": "c", "image": "agent"}]},
                    },
                },
            },
        ],
        "steps": [
            {"at": "1h", "taint": {"nodes": tenth, "taints": ["maintenance=true:NoExecute"]}},
            {"at": "2h", "taint": {"nodes": tenth, "taints": ["maintenance:NoExecute-"]}},
            {"at": "6h", "stop": {"zone": "c"}},
            {"at": "6h20m", "start": {"zone": "c"}},
            {"at": "12h", "taint": {"nodes": third, "taints": ["wave=1:NoSchedule"]}},
            {
                "at": "18h",
                "condition": {"node": "node-2", "type": "MemoryPressure", "status": "True"},
            },
        ],
        "until": f"{hours}h",
    }


def _within(day: dict[str, Any], hours: float) -> dict[str, Any]:
    day["steps"] = [s for s in day["steps"] if parse_duration(s["at"]) <= hours * 3600]
    return day


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--hours", type=float, default=24)
    parser.add_argument("--profile", help="write a cProfile of the run to this file")
    parser.add_argument(
        "--rest-at-samples",
        action="store_true",
        help="stop the clock at each of the 200 chart samples, as simulate did before",
    )
    args = parser.parse_args()
    played = parse_scenario(_within(scenario(args.nodes, args.pods, args.hours), args.hours))
    began, cpu = time.perf_counter(), time.process_time()
    last = [0.0]
    started: list[float] = []

    async def progress(cluster: Cluster, done: float, total: float) -> None:
        if not started:
            # The cluster is up (nodes registered); the Deployment is created at 0 s next.
            started.append(time.perf_counter() - began)
        if done - last[0] >= 3600 or done >= total:
            last[0] = done
            print(
                f"  {done / 3600:5.1f} h simulated, {time.perf_counter() - began:7.1f} s wall",
                file=sys.stderr,
            )

    profiler = cProfile.Profile() if args.profile else None
    if profiler is not None:
        profiler.enable()
    with runtime.settled_heap():  # as `taintplane simulate` runs
        report = asyncio.run(
            run_scenario(played, progress=progress, rest_at_samples=args.rest_at_samples)
        )
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(args.profile)
    wall = time.perf_counter() - began
    cpu = time.process_time() - cpu
    counts = report.counts()
    print(
        json.dumps(
            {
                "nodes": args.nodes,
                "pods": args.pods,
                "simulated_hours": args.hours,
                "wall_s": round(wall, 1),
                "cluster_start_s": round(started[0], 1) if started else None,
                # The whole process (the store's writer thread included).
                "cpu_s": round(cpu, 1),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                "simulated_s_per_wall_s": round(args.hours * 3600 / wall, 1),
                "evicting": counts.get("evicting", 0),
                "created": counts.get("created", 0),
                "timeline": len(report.timeline),
            }
        )
    )


if __name__ == "__main__":
    main()
