"""API latency under hostile load: a canary GET of one pod every 50 ms while 8 clients send
malformed and expensive requests as fast as the server answers them (DESIGN.md: canary p99 <
100 ms).

    .venv/bin/python benchmarks/hostile_load.py --pods 3000 --clients 8 --seconds 30

Pods are loaded through the registry in-process (as ``bench_api`` does), with one pod of 200
containers to patch, then a fresh ``taintplane serve`` is started on that data on a free
loopback port. Each hostile client is its own process, one request at a time on one
connection, cycling through: bad JSON, wrong types, nesting 100 deep, a 1.5 MiB pod, a YAML
pod and a YAML body with aliases (creates as ``dryRun=All``, so the store does not grow
from run to run), LISTs of every pod without a limit (JSON and as a Table), set-based label
and field selector LISTs, strategic merge patches of the 200-container pod, and watches of
every pod opened and closed after the first event. The canary is a process of its own too.
Figures: canary p50/p95/p99/max, hostile requests per second, and each kind's status codes.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson

from taintplane.bench.bench_api import percentile, pod

NAMESPACES = 10
BIG_POD = "big-pod"
CANARY = "/api/v1/namespaces/ns-0/pods/pod-000000"


def big_pod() -> dict[str, Any]:
    env = [{"name": f"VAR_{j}", "value": "v" * 40} for j in range(20)]
    containers = [{"name": f"c-{i:04d}", "image": "img:1", "env": env} for i in range(200)]
    return {"metadata": {"name": BIG_POD}, "spec": {"containers": containers}}


async def load(data_dir: Path, count: int) -> None:
    # Imported here: the client processes import this module and need none of it.
    from taintplane.apiserver.app import APIServer
    from taintplane.clock import RealClock
    from taintplane.store.sqlite import SqliteStore

    store = await SqliteStore(data_dir / "state.db").open()
    server = APIServer(store, RealClock())
    await server.bootstrap()
    ns_type = server.scheme.lookup("", "v1", "namespaces")
    pods = server.scheme.lookup("", "v1", "pods")
    assert ns_type is not None
    assert pods is not None
    for n in range(NAMESPACES):
        await server.registry.create(ns_type, "", {"metadata": {"name": f"ns-{n}"}})
    for first in range(0, count, 256):
        await asyncio.gather(
            *(
                server.registry.create(pods, f"ns-{i % NAMESPACES}", pod(i))
                for i in range(first, min(first + 256, count))
            )
        )
    await server.registry.create(pods, "ns-1", big_pod())
    await store.close()


# ---- the hostile requests ----------------------------------------------------------------

PODS = "/api/v1/namespaces/ns-2/pods"
DRY = {"dryRun": "All"}
JSON = {"Content-Type": "application/json"}
YAML = {"Content-Type": "application/yaml"}
TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def _bodies() -> dict[str, bytes]:
    small = pod(999_999)
    deep = {**small, "spec": {**small["spec"], "extra": _nested(100)}}  # type: ignore[dict-item]
    big_env = [{"name": f"VAR_{j}", "value": "x" * 60} for j in range(16_000)]
    big = {**small, "spec": {"containers": [{"name": "c", "image": "i", "env": big_env}]}}
    yaml_env = "".join(f"    - name: V{j}\n      value: '{'y' * 40}'\n" for j in range(1500))
    yaml_pod = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: yaml-pod\nspec:\n  containers:\n"
        "  - name: c\n    image: i\n    env:\n" + yaml_env
    )
    # Aliases within any sane limit: 9^4 leaves in a field the pod does not have.
    aliases = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 5):
        aliases.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]")
    alias_pod = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: alias-pod\n"
        "spec:\n  containers: [{name: c, image: i}]\n  extra:\n"
        + "".join(f"    {line}\n" for line in aliases)
    )
    return {
        "bad_json": b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x", "labels": {',
        "wrong_types": b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":5},"spec":"x"}',
        "deep": orjson.dumps(deep),
        "big_body": orjson.dumps(big),
        "yaml": yaml_pod.encode(),
        "yaml_aliases": alias_pod.encode(),
    }


SELECTOR = {
    "labelSelector": "app in (" + ",".join(f"app-{i}" for i in range(0, 100, 2)) + "),tier=web",
    "fieldSelector": "spec.nodeName!=node-0001,metadata.namespace!=ns-3,status.phase!=Failed",
}


def _watch(client: httpx.Client, params: dict[str, str]) -> int:
    with client.stream("GET", "/api/v1/pods", params={"watch": "1", **params}) as response:
        for _ in response.iter_raw():
            break  # the first chunk is enough: close, as a client that gives up would
        return response.status_code


def requests(bodies: dict[str, bytes], seed: int) -> list[tuple[str, Callable[..., int]]]:
    counter = itertools.count(seed * 1_000_000)

    def post(body: str, headers: dict[str, str]) -> Callable[[httpx.Client], int]:
        return lambda c: c.post(PODS, content=bodies[body], headers=headers, params=DRY).status_code

    def smp(c: httpx.Client) -> int:
        n = next(counter)
        patch = {
            "metadata": {"labels": {"touched": str(n)}},
            "spec": {"containers": [{"name": f"c-{n % 200:04d}", "image": f"img:{n}"}]},
        }
        return c.patch(
            f"/api/v1/namespaces/ns-1/pods/{BIG_POD}",
            content=orjson.dumps(patch),
            headers={"Content-Type": "application/strategic-merge-patch+json"},
        ).status_code

    return [
        ("bad_json", post("bad_json", JSON)),
        ("list_all", lambda c: c.get("/api/v1/pods").status_code),
        ("wrong_types", post("wrong_types", JSON)),
        ("deep", post("deep", JSON)),
        ("list_table", lambda c: c.get("/api/v1/pods", headers=TABLE).status_code),
        ("big_body", post("big_body", JSON)),
        ("selectors", lambda c: c.get("/api/v1/pods", params=SELECTOR).status_code),
        ("smp_big", smp),
        ("watch_all", lambda c: _watch(c, {})),
        ("yaml", post("yaml", YAML)),
        ("yaml_aliases", post("yaml_aliases", YAML)),
        ("watch_rv0", lambda c: _watch(c, {"resourceVersion": "0"})),
    ]


def hostile(base: str, seed: int, go: Any, seconds: float, results: Any) -> None:
    kinds = requests(_bodies(), seed)
    codes: Counter[str] = Counter()
    offset = seed % len(kinds)  # the clients start at different kinds
    with httpx.Client(base_url=base, timeout=120) as client:
        client.get("/version")
        results.put(("ready", None))
        go.wait()
        until = time.monotonic() + seconds
        for name, send in itertools.islice(itertools.cycle(kinds), offset, None):
            if time.monotonic() >= until:
                break
            try:
                codes[f"{name} {send(client)}"] += 1
            except httpx.HTTPError as error:
                codes[f"{name} {type(error).__name__}"] += 1
    results.put(("hostile", dict(codes)))


def canary(base: str, go: Any, seconds: float, results: Any) -> None:
    latencies: list[float] = []
    failures = 0
    with httpx.Client(base_url=base, timeout=120) as client:
        client.get(CANARY)  # connect before the clock starts
        results.put(("ready", None))
        go.wait()
        time.sleep(0.5)  # let the hostile clients get going first
        slot = time.monotonic()
        until = slot + seconds - 0.5
        while slot < until:
            began = time.monotonic()
            if client.get(CANARY).status_code != 200:
                failures += 1
            latencies.append(time.monotonic() - began)
            slot += 0.05
            time.sleep(max(0.0, slot - time.monotonic()))  # next slot (missed ones skipped)
            slot = max(slot, time.monotonic())
    results.put(("canary", {"latencies": latencies, "failures": failures}))


# ---- the run -----------------------------------------------------------------------------


def start_server(data_dir: Path) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "taintplane", "serve", "--data-dir", str(data_dir)]
    process = subprocess.Popen(
        [*command, "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert process.stdout is not None
    for line in process.stdout:
        found = re.search(r"serving (http\S+)", line)
        if found:
            return process, found.group(1)
    raise SystemExit(f"server exited without serving (exit {process.wait()})")


def run(base: str, clients: int, seconds: float) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    go = context.Event()
    workers = [context.Process(target=canary, args=(base, go, seconds, results))]
    for seed in range(clients):
        workers.append(context.Process(target=hostile, args=(base, seed, go, seconds, results)))
    for worker in workers:
        worker.start()
    for _ in workers:
        results.get(timeout=120)  # every process imported and connected
    go.set()
    gathered = [results.get(timeout=seconds + 600) for _ in workers]
    for worker in workers:
        worker.join()
    codes: Counter[str] = Counter()
    latencies: list[float] = []
    failures = 0
    for kind, value in gathered:
        if kind == "hostile":
            codes.update(value)
        else:
            latencies, failures = value["latencies"], value["failures"]
    hostile_total = sum(codes.values())
    ms = 1000.0
    return {
        "canary_requests": len(latencies),
        "canary_failures": failures,
        "canary_p50_ms": percentile(latencies, 50) * ms,
        "canary_p95_ms": percentile(latencies, 95) * ms,
        "canary_p99_ms": percentile(latencies, 99) * ms,
        "canary_max_ms": max(latencies) * ms,
        "hostile_requests": hostile_total,
        "hostile_per_s": hostile_total / seconds,
        "hostile_5xx": sum(n for key, n in codes.items() if key.split()[1].startswith("5")),
        "codes": dict(sorted(codes.items())),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pods", type=int, default=3000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="tp-hostile-") as tmp:
        data = Path(tmp)
        asyncio.run(load(data, args.pods))
        process, base = start_server(data)
        try:
            results = run(base, args.clients, args.seconds)
        finally:
            process.terminate()
            output = process.communicate()[0]
    print(f"pods={args.pods} clients={args.clients} seconds={args.seconds} cpus={os.cpu_count()}")
    for key, value in results.items():
        if key != "codes":
            print(f"{key:20} {value:10.1f}")
    for key, count in results["codes"].items():
        print(f"  {key:28} {count:6d}")
    errors = [line for line in output.splitlines() if "Traceback" in line or "ERROR" in line]
    if errors:
        print(f"server logged {len(errors)} error lines, e.g. {errors[0]}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
