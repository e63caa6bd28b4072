"""Scheduler cycles while nodes change: the cost per pod against the number of nodes (issue 16).

    .venv/bin/python benchmarks/scheduler_churn.py label --nodes 1000 4000
    .venv/bin/python benchmarks/scheduler_churn.py daemon --nodes 1000 4000
    .venv/bin/python benchmarks/scheduler_churn.py taint --nodes 1000 4000
    .venv/bin/python benchmarks/scheduler_churn.py spread --nodes 1000 4000
    .venv/bin/python benchmarks/scheduler_churn.py parked --pending 1000 4000
    .venv/bin/python benchmarks/scheduler_churn.py affinity --pending 1000 4000
    .venv/bin/python benchmarks/scheduler_churn.py claims --pending 250 1000 --nodes 50

The scheduler alone, fed the events its informers would deliver (no API server, no binding
writes), so that what is measured is its own work: per pod, one Node event, the scheduling
cycle, and the pod's binding seen back (the pod counted on its node).

- ``label``: before each pod one node's labels change (a node change that moves no pod);
  the pods fit anywhere (the bulk path over the node table).
- ``daemon``: before each pod a node is added (its name among the others'); the pod is that
  node's DaemonSet pod (a required node affinity on ``metadata.name``: PreFilter names the one
  node).
- ``taint``: before each pod one more of zone a's nodes is tainted ``outage:NoExecute`` with
  its own ``timeAdded``, as a zone taint applied node by node (what-if; once all are, again
  with a new ``timeAdded``); the pods do not tolerate it.
- ``spread``: no node changes; every pod (those placed before too) is a ReplicaSet's, so
  PodTopologySpread scores it with the system defaults (hostname and zone) over the
  ReplicaSet's pods: the cost of a Deployment's pods against the nodes.

- ``parked``, ``affinity``, ``claims``: the cost of events against the pods waiting, not the
  nodes (``--pending`` P pods parked by TaintToleration, InterPodAffinity or DynamicResources,
  then ``--events`` events, 200 nodes unless ``--nodes`` says): see
  :mod:`taintplane.bench.scheduler_parked`.

Each size is a fresh scheduler with N nodes (4 CPU, 32 GiB, 110 pods, zones a/b/c) and ~5 pods
already on each. Measured: process CPU and wall for ``--pods`` pods, per pod, and the growth
cpu(N)/cpu(first N) against N/first N (1.0: the cost per pod does not grow with the nodes).
``--profile FILE`` writes a cProfile of the largest size. One JSON line on stdout.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time
from typing import Any

from taintplane.bench.scheduler_parked import KINDS, run_parked
from taintplane.clock import VirtualClock
from taintplane.scheduler.nodeinfo import PodInfo
from taintplane.scheduler.scheduler import Scheduler

MODES = ("label", "daemon", "taint", "spread", *KINDS)
REPLICA_SET = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "web", "namespace": "bench"},
    "spec": {"selector": {"matchLabels": {"app": "web"}}},
}


def make_node(i: int) -> dict[str, Any]:
    name = f"node-{i:05d}"
    allocatable = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": "abc"[i % 3]},
        },
        "spec": {},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def make_pod(name: str, node: str = "", on: str = "", owned: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "10m"}}}]
    }
    if node:
        spec["nodeName"] = node
    if on:
        field = {"key": "metadata.name", "operator": "In", "values": [on]}
        required = {"nodeSelectorTerms": [{"matchFields": [field]}]}
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
        }
    meta: dict[str, Any] = {"name": name, "namespace": "bench", "uid": name}
    if owned:
        meta["labels"] = {"app": "web"}
        owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "rs"}
        meta["ownerReferences"] = [{**owner, "controller": True}]
    return {"metadata": meta, "spec": spec}


def changed(node: dict[str, Any], k: int, mode: str) -> dict[str, Any]:
    meta, spec = node["metadata"], node["spec"]
    if mode == "label":
        return {**node, "metadata": {**meta, "labels": {**meta["labels"], "round": str(k)}}}
    added = f"2026-01-01T00:{k // 60 % 60:02d}:{k % 60:02d}Z"
    taints = [{"key": "outage", "effect": "NoExecute", "timeAdded": added}]
    return {**node, "spec": {**spec, "taints": taints}}


def run(mode: str, nodes: int, pods: int) -> dict[str, float]:
    scheduler = Scheduler(client=None, clock=VirtualClock(), seed=1)  # type: ignore[arg-type]
    objects = [make_node(i) for i in range(nodes)]
    for node in objects:
        scheduler._node_added(node)
    owned = mode == "spread"
    if owned:
        scheduler.spread_listers.replica_sets = {"bench/web": REPLICA_SET}
    for j in range(5 * nodes):
        on = objects[j % nodes]["metadata"]["name"]
        scheduler._pod_added(make_pod(f"placed-{j}", node=on, owned=owned))
    scheduler.decide(PodInfo.of(make_pod("warm-up")))
    step = 7919  # a prime: the changed nodes spread over the name order
    cpu, wall = time.process_time(), time.perf_counter()
    for k in range(pods):
        if mode == "daemon":
            new = make_node((k * step) % nodes)
            new["metadata"]["name"] += f"-{k}"  # lands among the others in name order
            scheduler._node_added(new)
            pod = make_pod(f"p-{k}", on=new["metadata"]["name"])
        elif owned:
            pod = make_pod(f"p-{k}", owned=True)
        else:
            # ``taint``: only zone a's nodes (every third), tainted again once all are.
            i = (k * step) % nodes if mode == "label" else 3 * ((k * step) % (nodes // 3))
            new = changed(objects[i], k, mode)
            scheduler._node_updated(objects[i], new)
            objects[i] = new
            pod = make_pod(f"p-{k}")
        decision = scheduler.decide(PodInfo.of(pod))
        if not decision.node:
            raise SystemExit(f"pod {k} did not fit: {decision.message}")
        scheduler._pod_added({**pod, "spec": {**pod["spec"], "nodeName": decision.node}})
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {
        "nodes": nodes,
        "cpu_s": round(cpu, 3),
        "wall_s": round(wall, 3),
        "cpu_per_pod_ms": round(1000 * cpu / pods, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="taintplane bench scheduler_churn", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 4000])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--profile", help="write a cProfile of the largest size here")
    parser.add_argument("--pending", type=int, nargs="+", default=[1000, 4000])
    parser.add_argument("--events", type=int, default=40, help="parked, affinity, claims: events")
    args = parser.parse_args(argv)
    if args.mode in KINDS:
        nodes = args.nodes[0] if args.nodes != [1000, 4000] else 200
        runs = [run_parked(nodes, p, args.events, args.mode) for p in sorted(args.pending)]
        base = runs[0]
        for r in runs:
            r["cpu_vs_first"] = round(r["cpu_s"] / base["cpu_s"], 2) if base["cpu_s"] else 0.0
            r["pending_vs_first"] = round(r["pending"] / base["pending"], 2)
        print(json.dumps({"mode": args.mode, "sizes": runs}))
        return 0
    sizes = sorted(args.nodes)
    results = []
    for nodes in sizes:
        if args.profile and nodes == sizes[-1]:
            profiler = cProfile.Profile()
            result = profiler.runcall(run, args.mode, nodes, args.pods)
            profiler.dump_stats(args.profile)
            pstats.Stats(args.profile).sort_stats("cumulative").print_stats(15)
        else:
            result = run(args.mode, nodes, args.pods)
        results.append(result)
    first = results[0]
    for result in results:
        result["cpu_per_pod_vs_first"] = round(
            result["cpu_per_pod_ms"] / first["cpu_per_pod_ms"], 2
        )
        result["nodes_vs_first"] = round(result["nodes"] / first["nodes"], 2)
    print(json.dumps({"mode": args.mode, "pods": args.pods, "sizes": results}))
    return 0
