"""The cost of a cluster where nothing happens: heartbeats only.

    .venv/bin/python benchmarks/idle_cost.py --sizes 250,1000 --hours 1 [--pods 0,2000]
        [--real 5000 --seconds 60]

Virtual clock (in process): for each size, nodes registered and, with ``--pods N``, a
Deployment of N pods brought to Running and left to settle for ten simulated minutes; then
`advance` by ``--hours`` of simulated time in one call, with heartbeat elision (the default)
and, with ``--full``, without it; reported as wall seconds and seconds per node per simulated
hour; ``--profile FILE`` writes a cProfile of the last size's advance. (DESIGN.md's steady
day is the simulated day's cluster, 5000 nodes and 100 000 pods, with no steps: ``--pods``
measures what running pods add to it.)
Real clock (``--real N``): `taintplane up --nodes N --port 0` as a user starts it, left idle
for ``--seconds`` after ``--settle`` seconds past start-up; reported as the process's CPU
time over that window in % of one core, and its RSS. Wall and CPU seconds both: on a loaded
machine CPU is steadier. One JSON line per measurement on stdout.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from taintplane import runtime
from taintplane.agents.nodes import NodeShape
from taintplane.bench.deployment_scale import DEPLOYMENTS, deployment, running_pods
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import Cluster, in_process_cluster


async def _running(cluster: Cluster, clock: VirtualClock, pods: int) -> None:
    """A Deployment of ``pods`` pods created and the clock advanced until all are Running,
    then ten more simulated minutes for what follows (statuses, progress, events)."""
    client = cluster.client
    assert client is not None
    running = running_pods(cluster)
    await client.create(DEPLOYMENTS, deployment(pods), namespace="default")
    waited = 0
    while len(running) < pods:
        await clock.advance(5)
        waited += 5
        if waited > 3600:
            raise RuntimeError(f"only {len(running)} of {pods} Running after 1 h")
    await clock.advance(600)


async def virtual(
    nodes: int, hours: float, elide: bool, pods: int = 0, profile: str | None = None
) -> dict[str, object]:
    clock = VirtualClock()
    shapes = [NodeShape(f"node-{i}", zone="abc"[i % 3]) for i in range(1, nodes + 1)]
    with tempfile.TemporaryDirectory() as data:
        started = time.perf_counter()
        async with in_process_cluster(
            Path(data), clock, nodes=shapes, elide_heartbeats=elide
        ) as cluster:
            await clock.advance(60)  # past start-up: every zone Normal
            if pods:
                await _running(cluster, clock, pods)
            setup = time.perf_counter() - started
            # As `taintplane up` runs once started (the collector's settings for a long run).
            with runtime.settled_heap():
                profiler = cProfile.Profile() if profile else None
                if profiler is not None:
                    profiler.enable()
                started, cpu = time.perf_counter(), time.process_time()
                await clock.advance(hours * 3600)
                wall = time.perf_counter() - started
                cpu = time.process_time() - cpu
                if profiler is not None and profile:
                    profiler.disable()
                    profiler.dump_stats(profile)
            assert cluster.kubelets is not None
    return {
        "clock": "virtual",
        "nodes": nodes,
        "pods": pods,
        "simulated_hours": hours,
        "elide_heartbeats": elide,
        "setup_s": round(setup, 2),
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "s_per_node_hour": round(wall / nodes / hours, 6),
    }


def real(nodes: int, seconds: float, settle: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as data:
        process = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("taintplane")),
                "up",
                "--nodes",
                str(nodes),
                "--port",
                "0",
                "--data-dir",
                data,
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            for line in process.stdout:
                if line.startswith("export KUBECONFIG="):
                    break
            # Start-up's tail settles first: the node lifecycle controller lifting the
            # not-ready taints of thousands of new nodes goes on for a while after "up".
            time.sleep(settle)
            before = _cpu_seconds(process.pid)
            time.sleep(seconds)
            used = _cpu_seconds(process.pid) - before
            rss = _rss_mb(process.pid)
        finally:
            process.terminate()
            process.wait(30)
    return {
        "clock": "real",
        "nodes": nodes,
        "settle_seconds": settle,
        "idle_seconds": seconds,
        "cpu_percent_of_one_core": round(100 * used / seconds, 1),
        "rss_mb": rss,
    }


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime + stime
    return ticks / 100.0


def _rss_mb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="250,1000")
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--pods", default="0", help="running pods, one count per size")
    parser.add_argument("--full", action="store_true", help="also without elision")
    parser.add_argument("--profile", help="cProfile of the last size's steady advance")
    parser.add_argument("--real", type=int, default=0, help="nodes of a real-clock `up`")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--settle", type=float, default=90.0, help="wait after up, seconds")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    pods = [int(p) for p in args.pods.split(",")]
    pods += [pods[-1]] * (len(sizes) - len(pods))
    for at, (size, running) in enumerate(zip(sizes, pods, strict=False)):
        profile = args.profile if at == len(sizes) - 1 else None
        for elide in (True, False) if args.full else (True,):
            work = virtual(size, args.hours, elide, running, profile if elide else None)
            result = runtime.run(work, virtual_time=True)
            print(json.dumps(result), flush=True)
    if args.real:
        print(json.dumps(real(args.real, args.seconds, args.settle)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
