"""Concurrent merge patches of one object without a resourceVersion: how many the server
answers with anything but 200 (kube-apiserver retries such a patch whenever another write
overtakes it, so the answer is 0), and the patch rate.

    .venv/bin/python benchmarks/patch_contention.py --clients 16 --patches 1000

A cluster with the API server alone (no scheduler, controllers or kubelets) serves
127.0.0.1 from a temporary directory; each client is a thread with its own HTTP connection
that patches a label of the same node in turn. Figures are one JSON line on stdout.
"""

from __future__ import annotations

import argparse
import collections
import json
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

MERGE = {"Content-Type": "application/merge-patch+json"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--patches", type=int, default=1000, help="per client")
    args = parser.parse_args()

    import httpx

    from taintplane.sim.cluster import running_cluster

    with (
        tempfile.TemporaryDirectory(prefix="taintplane-bench-") as data,
        running_cluster(Path(data), components=()) as cluster,
    ):
        with httpx.Client(base_url=cluster.url) as api:
            api.post("/api/v1/nodes", json={"metadata": {"name": "contended"}})

        def client(index: int) -> collections.Counter[int]:
            codes: collections.Counter[int] = collections.Counter()
            with httpx.Client(base_url=cluster.url, timeout=120) as api:
                for i in range(args.patches):
                    body = {"metadata": {"labels": {f"client-{index}": str(i)}}}
                    codes[
                        api.patch("/api/v1/nodes/contended", json=body, headers=MERGE).status_code
                    ] += 1
            return codes

        began = time.perf_counter()
        with ThreadPoolExecutor(args.clients) as pool:
            codes = sum(pool.map(client, range(args.clients)), collections.Counter[int]())
        elapsed = time.perf_counter() - began
    total = args.clients * args.patches
    print(
        json.dumps(
            {
                "clients": args.clients,
                "patches": total,
                "answers": {str(code): n for code, n in sorted(codes.items())},
                "not_ok": total - codes[200],
                "patches_per_s": round(total / elapsed),
            }
        )
    )


if __name__ == "__main__":
    main()
