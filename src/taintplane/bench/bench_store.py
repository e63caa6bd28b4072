"""Store benchmarks: the same operations on the SQLite backend and on etcd.

    .venv/bin/python benchmarks/bench_store.py --objects 10000 --etcd etcd://127.0.0.1:2379

Objects are ~1 KB JSON values (a pod-sized ConfigMap). Measured per backend: sequential
creates, 64 concurrent creates, sequential read-modify-write updates (get + update), point
gets, a LIST of every object (in pages of 500 at one revision, and in one call), and how long
a watcher takes to receive a burst of 64-way concurrent updates. Each etcd run uses a fresh
key prefix; SQLite a fresh file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from taintplane.store.etcd import EtcdStore
from taintplane.store.sqlite import SqliteStore

VALUE = json.dumps(
    {"kind": "ConfigMap", "metadata": {"namespace": "default"}, "data": {"k": "x" * 900}}
).encode()


async def _gather_limited(jobs: list[Any], width: int) -> None:
    queue: asyncio.Queue[Any] = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)

    async def worker() -> None:
        while not queue.empty():
            await queue.get_nowait()

    await asyncio.gather(*(worker() for _ in range(width)))


async def measure(store: Any, n: int) -> dict[str, float]:
    figures: dict[str, float] = {}
    half = n // 2

    start = time.perf_counter()
    for i in range(half):
        await store.create(f"/bench/seq/{i:07d}", VALUE)
    figures["sequential creates/s"] = half / (time.perf_counter() - start)

    start = time.perf_counter()
    await _gather_limited([store.create(f"/bench/par/{i:07d}", VALUE) for i in range(half)], 64)
    figures["64 concurrent creates/s"] = half / (time.perf_counter() - start)

    count = min(2000, half)
    start = time.perf_counter()
    for i in range(count):
        kv = await store.get(f"/bench/seq/{i:07d}")
        await store.update(kv.key, VALUE, kv.mod_revision)
    figures["sequential get+update/s"] = count / (time.perf_counter() - start)

    latencies = []
    for i in range(count):
        t = time.perf_counter()
        await store.get(f"/bench/par/{i:07d}")
        latencies.append(time.perf_counter() - t)
    figures["get p50 ms"] = statistics.median(latencies) * 1000

    start = time.perf_counter()
    page = await store.list("/bench/", limit=500)
    total = len(page.items)
    while page.continue_after is not None:
        page = await store.list(
            "/bench/", revision=page.revision, limit=500, continue_after=page.continue_after
        )
        total += len(page.items)
    figures[f"list {total} paged 500, ms"] = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    whole = await store.list("/bench/")
    figures[f"list {len(whole.items)} in one call, ms"] = (time.perf_counter() - start) * 1000

    base = await store.current_revision()
    watch = store.watch("/bench/par/", base)
    received = 0

    async def consume() -> None:
        nonlocal received
        async for _ in watch:
            received += 1
            if received == count:
                return

    consumer = asyncio.create_task(consume())
    start = time.perf_counter()
    kvs = [await store.get(f"/bench/par/{i:07d}") for i in range(count)]
    start = time.perf_counter()
    await _gather_limited([store.update(kv.key, VALUE, kv.mod_revision) for kv in kvs], 64)
    await consumer
    figures[f"watch: {count} concurrent updates delivered, ms"] = (
        time.perf_counter() - start
    ) * 1000
    watch.close()
    return figures


async def run(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = await SqliteStore(Path(tmp) / "state.db").open()
        try:
            results["sqlite"] = await measure(sqlite, args.objects)
        finally:
            await sqlite.close()
    if args.etcd:
        etcd = await EtcdStore(f"{args.etcd.rstrip('/')}/bench-{uuid.uuid4().hex[:8]}").open()
        try:
            results["etcd"] = await measure(etcd, args.objects)
        finally:
            await etcd.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--etcd", metavar="etcd://HOST:PORT", help="also measure this etcd")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = asyncio.run(run(args))
    backends = list(results)
    print(f"{'':48}" + "".join(f"{b:>12}" for b in backends))
    for name in results[backends[0]]:
        row = [results[b][name] for b in backends]
        print(f"{name:48}" + "".join(f"{v:>12.2f}" if v < 10 else f"{v:>12.0f}" for v in row))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
