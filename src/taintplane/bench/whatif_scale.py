"""`what-if taint nodes -l topology.kubernetes.io/zone=a outage:NoExecute --until 1h` against a
cluster of N nodes in 3 zones and P running pods: what the copy and the simulated hour cost.

    .venv/bin/python benchmarks/whatif_scale.py --nodes 1000 --pods 10000

Set-up: a cluster as ``taintplane up --clock virtual`` runs it (SQLite store, scheduler,
controller manager, N simulated kubelets, served over HTTP on 127.0.0.1), Deployments of
``--per-deployment`` replicas each until all P pods are Running, then a minute more so status
writes settle. The what-if then runs in a separate process, as the CLI would, against that
cluster's URL, through the CLI's own steps (``-o json``; a benchmark may not import the CLI, so
the text rendering is left out): the live cluster read over HTTP (``read_live``), the plan
resolved, ``run_what_if`` (restore into a scratch store, every component started, the taint
applied node by node, the window) and the report as JSON. Reported apart: set-up; the read of
the live cluster; the copy (restore and start, until ``run_what_if``'s first progress call);
the simulated window; the report; each with wall and process CPU time, and both processes' peak
RSS. The serving cluster's CPU during the what-if (answering the reads) is reported too.
``--profile PREFIX`` writes cProfiles of the what-if's copy (``PREFIX.copy``) and window
(``PREFIX.window``); ``--stops 100`` makes the copy's clock rest 100 times in the window, as
``what-if`` did before (every rest writes down each node's elided heartbeats).
Progress goes to stderr; the figures are one JSON line on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import logging
import resource
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from taintplane import runtime
from taintplane.agents.nodes import NodeShape
from taintplane.bench.deployment_scale import deployment, running_pods
from taintplane.client import resource as api_resource
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import Cluster, ClusterConfig

DEPLOYMENTS = api_resource("apps", "v1", "deployments")


def _peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


class _Phases:
    """Wall and CPU time of consecutive phases."""

    def __init__(self) -> None:
        self.figures: dict[str, dict[str, float]] = {}
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def mark(self, name: str) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        self.figures[name] = {
            "wall_s": round(wall - self._wall, 2),
            "cpu_s": round(cpu - self._cpu, 2),
        }
        print(f"  {name}: {self.figures[name]}", file=sys.stderr)
        self._wall, self._cpu = wall, cpu


# ---- the what-if process -------------------------------------------------------------------------


async def _read_live(url: str) -> tuple[list[dict[str, Any]], datetime]:
    """What ``what-if`` reads of a live taintplane cluster: the snapshot kinds over HTTP, and
    the cluster's own (virtual) clock."""
    from taintplane.client import Client, HTTPTransport
    from taintplane.sim.snapshot import read_live

    transport = HTTPTransport(url)
    try:
        client = Client(transport)
        objects = await read_live(client)
        answer = await client.get_path("/taintplane/v1/clock")
        return objects, datetime.fromisoformat(str(answer["now"]).replace("Z", "+00:00"))
    finally:
        await transport.close()


def what_if(
    url: str, selector: str, until: str, profile: str | None, stops: int = 1
) -> dict[str, Any]:
    """What ``what-if taint nodes -l SELECTOR outage:NoExecute --until UNTIL -o json`` does
    (the CLI's steps, which a benchmark may not import), timed phase by phase."""
    from taintplane.api.duration import parse_duration
    from taintplane.api.selectors import parse_label_selector
    from taintplane.api.taint_spec import parse_taint_command
    from taintplane.sim.whatif import run_what_if
    from taintplane.sim.whatif_plan import resolve_plan

    # As the CLI: the copy's components keep their logs to themselves.
    logging.getLogger("taintplane").setLevel(logging.CRITICAL)
    args = ("nodes", "outage:NoExecute")
    resources, changes = parse_taint_command(args)
    window = parse_duration(until)
    phases = _Phases()
    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    objects, start = asyncio.run(_read_live(url))
    plan = resolve_plan(objects, resources, changes, selector=parse_label_selector(selector))
    phases.mark("read_live")

    revisions: list[int] = []
    elided: list[int] = []

    async def progress(cluster: Any, done: float, total: float) -> None:
        nonlocal profiler
        if done in (0, total):
            revisions.append(await cluster.store.current_revision())
            elided.append(cluster.kubelets.elision.elided_ticks)
        if done == 0:
            phases.mark("copy")
            if profiler and profile:
                profiler.disable()
                profiler.dump_stats(f"{profile}.copy")
                profiler = cProfile.Profile()
                profiler.enable()
        elif done >= total:
            phases.mark("window")
            if profiler and profile:
                profiler.disable()
                profiler.dump_stats(f"{profile}.window")
                profiler = None

    with runtime.settled_heap():  # as the CLI runs it
        report = asyncio.run(
            run_what_if(objects, plan, start=start, window=window, progress=progress, stops=stops)
        )
    text = json.dumps(report.to_json(), indent=2)
    phases.mark("report")
    outcomes: dict[str, int] = {}
    for pod in report.affected:
        outcomes[pod.outcome] = outcomes.get(pod.outcome, 0) + 1
    return {
        "phases": phases.figures,
        "objects_read": len(objects),
        "tainted_nodes": len(plan.nodes),
        "pods_on_them": len(report.affected),
        "outcomes": outcomes,
        "replacements": len(report.replacements),
        # Store writes in the window (creations, updates, deletions; Events included).
        "window_writes": revisions[-1] - revisions[0],
        # Kubelet ticks (of every node at once) that heartbeat elision skipped in the window.
        "window_elided_ticks": elided[-1] - elided[0],
        "timeline": len(report.timeline),
        "report_json_bytes": len(text),
        "peak_rss_mb": _peak_rss_mb(),
    }


# ---- the cluster it asks about ---------------------------------------------------------------


async def run(args: argparse.Namespace) -> dict[str, Any]:
    clock = VirtualClock()
    shapes = [NodeShape(f"node-{i}", zone="abc"[i % 3]) for i in range(1, args.nodes + 1)]
    phases = _Phases()
    with tempfile.TemporaryDirectory(prefix="tp-whatif-scale-") as data:
        cluster = Cluster(ClusterConfig(data_dir=Path(data), port=0, nodes=shapes), clock)
        cluster.bind()
        await cluster.start()
        serving = asyncio.create_task(cluster.serve())
        try:
            await clock.advance(0)
            phases.mark("setup_nodes")
            result = await _populate_and_ask(args, cluster, clock, phases)
        finally:
            cluster.stop()
            await serving
            await cluster.close()
    return result


async def _populate_and_ask(
    args: argparse.Namespace, cluster: Cluster, clock: VirtualClock, phases: _Phases
) -> dict[str, Any]:
    client = cluster.client
    assert client is not None
    running = running_pods(cluster)
    runtime.settle_heap()
    left, index = args.pods, 0
    while left > 0:
        replicas = min(left, args.per_deployment)
        index += 1
        await client.create(DEPLOYMENTS, deployment(replicas, f"web-{index}"), "default")
        left -= replicas
    seconds = 0
    while len(running) < args.pods:
        await clock.advance(1)
        seconds += 1
        if seconds % 10 == 0:
            print(f"  {len(running)} of {args.pods} Running after {seconds} s", file=sys.stderr)
        if seconds > 3600:
            raise RuntimeError(f"only {len(running)} of {args.pods} Running after 1 h")
    await clock.advance(60)
    phases.mark("setup_pods")
    setup_rss = _peak_rss_mb()

    command = [
        sys.executable,
        "-m",
        "taintplane.bench.whatif_scale",
        "--child",
        cluster.url,
        "--zone",
        args.zone,
        "--until",
        args.until,
    ]
    if args.profile:
        command += ["--profile", args.profile]
    command += ["--stops", str(args.stops)]
    serving_cpu = time.process_time()
    child = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE)
    out, _ = await child.communicate()
    if child.returncode != 0:
        raise RuntimeError(f"the what-if process failed ({child.returncode})")
    asked = json.loads(out)
    phases.mark("what_if")
    asked["serving_cluster_cpu_s"] = round(time.process_time() - serving_cpu, 2)
    figures = asked["phases"]
    asked["total_wall_s"] = round(sum(p["wall_s"] for p in figures.values()), 2)
    asked["total_cpu_s"] = round(sum(p["cpu_s"] for p in figures.values()), 2)
    return {
        "nodes": args.nodes,
        "pods": args.pods,
        "until": args.until,
        "stops": args.stops,
        "setup": {k: v for k, v in phases.figures.items() if k.startswith("setup")},
        "setup_peak_rss_mb": setup_rss,
        "setup_simulated_s": seconds + 60,
        "what_if": asked,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--per-deployment", type=int, default=1000)
    parser.add_argument("--zone", default="a")
    parser.add_argument("--until", default="1h")
    parser.add_argument("--profile")
    parser.add_argument(
        "--stops",
        type=int,
        default=1,
        help="rests of the copy's clock in the window (100: as before)",
    )
    parser.add_argument("--child", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        selector = f"topology.kubernetes.io/zone={args.zone}"
        print(json.dumps(what_if(args.child, selector, args.until, args.profile, args.stops)))
        return
    print(json.dumps(asyncio.run(run(args))))


if __name__ == "__main__":
    main()
