"""The ``taintplane_cluster`` fixture's cost per test: ``local_cluster()`` until it answers,
and until it has stopped again.

    .venv/bin/python benchmarks/fixture_startup.py --nodes 3 --runs 10

Each run starts a whole cluster (API server on 127.0.0.1, scheduler, controller manager,
simulated kubelets on a virtual clock) in a fresh temporary directory, lists its nodes with
the official Python client, and stops it. Importing taintplane is measured once, apart: a
test session pays it once. Figures are one JSON line on stdout.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()

    began = time.perf_counter()
    from kubernetes import client

    from taintplane.testing import local_cluster

    imported = time.perf_counter() - began
    ready: list[float] = []
    total: list[float] = []
    for _ in range(args.runs):
        began = time.perf_counter()
        with local_cluster(nodes=args.nodes) as cluster:
            nodes = client.CoreV1Api(cluster.kubernetes_client()).list_node().items
            assert len(nodes) == args.nodes
            ready.append(time.perf_counter() - began)
        total.append(time.perf_counter() - began)
    print(
        json.dumps(
            {
                "nodes": args.nodes,
                "runs": args.runs,
                "import_s": round(imported, 3),
                "ready_median_s": round(statistics.median(ready), 3),
                "ready_max_s": round(max(ready), 3),
                "start_stop_median_s": round(statistics.median(total), 3),
                "start_stop_max_s": round(max(total), 3),
            }
        )
    )


if __name__ == "__main__":
    main()
