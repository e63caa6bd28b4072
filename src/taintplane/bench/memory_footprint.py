"""Memory: resident set of a whole `taintplane up` holding N nodes and M running pods.

    .venv/bin/python benchmarks/memory_footprint.py --nodes 5000 --pods 150000

Starts `taintplane up --nodes N` (real clock: kubelets heartbeat, every component runs),
creates M pods bound to the nodes round-robin over HTTP (64 at a time), waits until the
simulated kubelets report every one Running, and reads the server process's VmRSS and VmHWM
from /proc at a few points. Progress goes to stderr; the figures are one JSON line on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml


def memory_mib(pid: int) -> dict[str, float]:
    """VmRSS (now) and VmHWM (peak) of ``pid``, in MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = round(int(value.split()[0]) / 1024, 1)
    return fields


def pod(i: int, nodes: int) -> dict[str, Any]:
    return {
        "metadata": {"name": f"p-{i:06d}", "namespace": "default", "labels": {"app": "bench"}},
        "spec": {
            "nodeName": f"node-{i % nodes + 1}",
            "containers": [
                {
                    "name": "app",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                }
            ],
        },
    }


async def create_pods(url: str, nodes: int, pods: int) -> None:
    slots = asyncio.Semaphore(64)
    done = 0
    began = time.perf_counter()
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:

        async def one(i: int) -> None:
            nonlocal done
            async with slots:
                response = await client.post("/api/v1/namespaces/default/pods", json=pod(i, nodes))
                response.raise_for_status()
            done += 1
            if done % 10_000 == 0:
                rate = done / (time.perf_counter() - began)
                print(f"created {done} pods ({rate:.0f}/s)", file=sys.stderr, flush=True)

        await asyncio.gather(*(one(i) for i in range(pods)))


async def running_pods(url: str) -> int:
    async with httpx.AsyncClient(base_url=url, timeout=300) as client:
        response = await client.get(
            "/api/v1/namespaces/default/pods", params={"fieldSelector": "status.phase=Running"}
        )
        response.raise_for_status()
        return len(response.json()["items"])


#: What a simulated node holds (its allocatable pods).
NODE_PODS = 110


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000)
    args = parser.parse_args()
    if args.pods > args.nodes * NODE_PODS:
        # The kubelets would refuse the rest (OutOfpods) and they would never run.
        parser.error(
            f"--pods {args.pods} is more than {args.nodes} nodes hold "
            f"({NODE_PODS} pods each): use at least {-(-args.pods // NODE_PODS)} nodes"
        )
    with tempfile.TemporaryDirectory() as data:
        process = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("taintplane")),
                "up",
                *("--nodes", str(args.nodes), "--port", "0", "--data-dir", data),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            for line in process.stdout:
                if line.startswith("export KUBECONFIG="):
                    kubeconfig = line.strip().split("=", 1)[1]
                    break
            config = yaml.safe_load(Path(kubeconfig).read_text())
            url = config["clusters"][0]["cluster"]["server"]
            figures: dict[str, Any] = {"nodes": args.nodes, "pods": args.pods}
            figures["after_start"] = memory_mib(process.pid)
            began = time.perf_counter()
            asyncio.run(create_pods(url, args.nodes, args.pods))
            figures["create_seconds"] = round(time.perf_counter() - began, 1)
            figures["after_create"] = memory_mib(process.pid)
            while True:
                running = asyncio.run(running_pods(url))
                print(f"{running} pods Running", file=sys.stderr, flush=True)
                if running >= args.pods:
                    break
                time.sleep(10)  # a benchmark polling a real server, not a test
            figures["all_running_seconds"] = round(time.perf_counter() - began, 1)
            figures["all_running"] = memory_mib(process.pid)
            print(json.dumps(figures))
        finally:
            process.terminate()
            process.wait(60)


if __name__ == "__main__":
    main()
