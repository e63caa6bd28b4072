"""API server benchmarks: start-up, GET/PATCH latency under 50 concurrent
clients with N pods stored, LIST of all pods, resident memory.

    .venv/bin/python benchmarks/bench_api.py --pods 150000 --clients 50 --requests 4000

Pods are loaded through the registry in-process (same defaulting, validation and storage as
an HTTP create), then a fresh ``taintplane serve`` process is started on that data and measured
over HTTP from this process. Figures go to stdout as a table and as JSON (``--json FILE``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from taintplane.apiserver.app import APIServer
from taintplane.clock import RealClock
from taintplane.store.sqlite import SqliteStore


def pod(i: int) -> dict[str, object]:
    return {
        "metadata": {"name": f"pod-{i:06d}", "labels": {"app": f"app-{i % 100}", "tier": "web"}},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "registry.example/app:1.2.3",
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                }
            ],
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}
            ],
            "nodeName": f"node-{i % 5000:04d}",
        },
    }


async def load(data_dir: Path, count: int, namespaces: int) -> float:
    store = await SqliteStore(data_dir / "state.db").open()
    server = APIServer(store, RealClock())
    await server.bootstrap()
    ns_type = server.scheme.lookup("", "v1", "namespaces")
    pods = server.scheme.lookup("", "v1", "pods")
    assert ns_type is not None
    assert pods is not None
    for n in range(namespaces):
        await server.registry.create(ns_type, "", {"metadata": {"name": f"ns-{n}"}})
    started = time.perf_counter()
    batch = 256
    for first in range(0, count, batch):
        await asyncio.gather(
            *(
                server.registry.create(pods, f"ns-{i % namespaces}", pod(i))
                for i in range(first, min(first + batch, count))
            )
        )
    elapsed = time.perf_counter() - started
    await store.close()
    return elapsed


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start_server(data_dir: Path, port: int) -> tuple[subprocess.Popen[str], float]:
    started = time.perf_counter()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "taintplane",
            "serve",
            "--data-dir",
            str(data_dir),
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    with httpx.Client(timeout=2) as client:
        while True:
            try:
                if client.get(f"http://127.0.0.1:{port}/api/v1/nodes").status_code == 200:
                    return process, time.perf_counter() - started
            except httpx.TransportError:
                pass
            if process.poll() is not None:
                raise SystemExit(
                    f"server exited: {process.stdout.read() if process.stdout else ''}"
                )
            time.sleep(0.01)  # benchmark polling, not a test


def kubectl_startup(data_dir: Path, port: int) -> float:
    """Seconds from spawning ``taintplane up`` until ``kubectl get nodes`` succeeds (each
    kubectl run costs ~0.1 s itself; the figure includes the last one)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "taintplane",
            "up",
            "--data-dir",
            str(data_dir),
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    env = {**os.environ, "KUBECONFIG": str(data_dir / "kubeconfig"), "HOME": str(data_dir)}
    try:
        while True:
            if (data_dir / "kubeconfig").exists():
                done = subprocess.run(
                    ["kubectl", "get", "nodes"], env=env, capture_output=True, check=False
                )
                if done.returncode == 0:
                    return time.perf_counter() - started
            time.sleep(0.01)  # benchmark polling, not a test
    finally:
        process.terminate()
        process.wait()


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def latency(
    base: str, count: int, namespaces: int, clients: int, requests: int
) -> dict[str, float]:
    gets: list[float] = []
    patches: list[float] = []
    per_client = max(1, requests // clients)

    async def client_loop(seed: int) -> None:
        rng = random.Random(seed)
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            for _ in range(per_client):
                i = rng.randrange(count)
                path = f"/api/v1/namespaces/ns-{i % namespaces}/pods/pod-{i:06d}"
                t = time.perf_counter()
                response = await client.get(path)
                gets.append(time.perf_counter() - t)
                assert response.status_code == 200, response.text
                t = time.perf_counter()
                response = await client.patch(
                    path,
                    json={"metadata": {"labels": {"touched": str(seed)}}},
                    headers={"Content-Type": "application/merge-patch+json"},
                )
                patches.append(time.perf_counter() - t)
                assert response.status_code == 200, response.text

    started = time.perf_counter()
    await asyncio.gather(*(client_loop(s) for s in range(clients)))
    wall = time.perf_counter() - started
    ms = 1000.0
    return {
        "get_p50_ms": statistics.median(gets) * ms,
        "get_p99_ms": percentile(gets, 99) * ms,
        "patch_p50_ms": statistics.median(patches) * ms,
        "patch_p99_ms": percentile(patches, 99) * ms,
        "requests_per_s": (len(gets) + len(patches)) / wall,
    }


def wrk_latency(
    base: str, count: int, namespaces: int, clients: int, seconds: int
) -> dict[str, float]:
    """GET, then PATCH, of random pods from ``clients`` connections, measured by wrk (a C load
    generator, so the client's own cost does not land in the figures)."""
    script = Path(__file__).with_name("wrk_pods.lua")
    results: dict[str, float] = {}
    for mode in ("get", "patch"):
        env = {
            **os.environ,
            "WRK_PODS": str(count),
            "WRK_NAMESPACES": str(namespaces),
            "WRK_MODE": mode,
        }
        out = subprocess.run(
            ["wrk", "-t2", f"-c{clients}", f"-d{seconds}s", "-s", str(script), base],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        ).stdout
        line = next(line for line in out.splitlines() if line.startswith("WRK "))
        fields = dict(part.split("=") for part in line.split()[1:])
        results[f"{mode}_p50_ms"] = float(fields["p50_ms"])
        results[f"{mode}_p99_ms"] = float(fields["p99_ms"])
        results[f"{mode}_per_s"] = float(fields["rps"])
        results[f"{mode}_errors"] = float(fields["errors"])
    return results


def list_all(base: str) -> dict[str, float]:
    with httpx.Client(base_url=base, timeout=600) as client:
        t = time.perf_counter()
        response = client.get("/api/v1/pods")
        whole = time.perf_counter() - t
        items = len(response.json()["items"])
        t = time.perf_counter()
        token, paged = None, 0
        while True:
            params = {"limit": "500", **({"continue": token} if token else {})}
            page = client.get("/api/v1/pods", params=params).json()
            paged += len(page["items"])
            token = page["metadata"].get("continue")
            if not token:
                break
        pages = time.perf_counter() - t
    return {
        "list_all_s": whole,
        "list_items": items,
        "list_paged_500_s": pages,
        "list_paged_items": paged,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--namespaces", type=int, default=10)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=4000, help="GET+PATCH pairs in all")
    parser.add_argument("--seconds", type=int, default=20, help="wrk duration per mode")
    parser.add_argument("--port", type=int, default=18443)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="tp-bench-") as tmp:
        empty = Path(tmp) / "empty"
        process, startup = start_server(empty, args.port)
        results["startup_empty_s"] = startup
        results["rss_empty_mib"] = rss_mib(process.pid)
        process.terminate()
        process.wait()
        if shutil.which("kubectl"):
            results["startup_until_kubectl_get_nodes_s"] = kubectl_startup(
                Path(tmp) / "kubectl", args.port
            )

        data = Path(tmp) / "loaded"
        data.mkdir()
        load_s = asyncio.run(load(data, args.pods, args.namespaces))
        results["load_pods_per_s"] = args.pods / load_s
        process, startup = start_server(data, args.port)
        results["startup_loaded_s"] = startup
        base = f"http://127.0.0.1:{args.port}"
        try:
            if shutil.which("wrk"):
                results.update(
                    wrk_latency(base, args.pods, args.namespaces, args.clients, args.seconds)
                )
            else:  # a Python client on the same cores measures itself as much as the server
                print("wrk not found (apt-get install wrk): measuring with httpx", file=sys.stderr)
                results.update(
                    asyncio.run(
                        latency(base, args.pods, args.namespaces, args.clients, args.requests)
                    )
                )
            results["rss_after_requests_mib"] = rss_mib(process.pid)
            results.update(list_all(base))
            results["rss_after_list_mib"] = rss_mib(process.pid)
        finally:
            process.terminate()
            process.wait()
        results["db_size_mib"] = (data / "state.db").stat().st_size / 2**20

    print(f"pods={args.pods} clients={args.clients} requests={args.requests} cpus={os.cpu_count()}")
    for key, value in results.items():
        print(f"{key:24} {value:12.2f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
