"""A zone's nodes silent for twenty minutes, the rest healthy: what an outage costs per node.

    .venv/bin/python benchmarks/zone_outage.py --sizes 300,1200 [--minutes 20] [--profile FILE]

For each size, an in-process cluster on a virtual clock (no pods) with nodes in three zones;
after start-up, zone c's kubelets stop, the clock is advanced ``--minutes`` (the node lifecycle
controller's passes, the rate-limited NoExecute tainting of the zone's nodes, the healthy
nodes' lease renewals and status reports: heartbeats cannot be elided while a node is
down), then the zone starts again and the clock is advanced five more minutes (the taints
lifted). Measured: wall and process CPU time of the outage and the recovery, and per node
per simulated minute. One JSON line per size on stdout.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import tempfile
import time
from pathlib import Path

from taintplane import runtime
from taintplane.agents.nodes import NodeShape
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster


async def outage(nodes: int, minutes: float, profile: str | None) -> dict[str, object]:
    clock = VirtualClock()
    shapes = [NodeShape(f"node-{i}", zone="abc"[i % 3]) for i in range(1, nodes + 1)]
    silent = [s.name for s in shapes if s.zone == "c"]
    with tempfile.TemporaryDirectory() as data:
        async with in_process_cluster(Path(data), clock, nodes=shapes) as cluster:
            kubelets = cluster.kubelets
            assert kubelets is not None
            await clock.advance(60)  # past start-up: every zone Normal
            with runtime.settled_heap():
                profiler = cProfile.Profile() if profile else None
                if profiler is not None:
                    profiler.enable()
                started, cpu = time.perf_counter(), time.process_time()
                for name in silent:
                    kubelets.stop(name)
                await clock.advance(minutes * 60)
                for name in silent:
                    await kubelets.start(name)
                await clock.advance(300)
                wall = time.perf_counter() - started
                cpu = time.process_time() - cpu
                if profiler is not None and profile:
                    profiler.disable()
                    profiler.dump_stats(profile)
    return {
        "nodes": nodes,
        "silent": len(silent),
        "outage_minutes": minutes,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "cpu_ms_per_node_minute": round(1000 * cpu / nodes / (minutes + 5), 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="300,1200")
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--profile", help="cProfile of the last size's outage")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    for at, size in enumerate(sizes):
        profile = args.profile if at == len(sizes) - 1 else None
        result = runtime.run(outage(size, args.minutes, profile), virtual_time=True)
        print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
