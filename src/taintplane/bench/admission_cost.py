"""What admission adds to a pod create: registry creates per second with the default chain and
with none, in-process on a fresh SQLite store (no HTTP).

    .venv/bin/python benchmarks/admission_cost.py --pods 5000 --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from taintplane.api.scheme import SCHEME
from taintplane.apiserver.app import APIServer
from taintplane.clock import RealClock
from taintplane.store.sqlite import SqliteStore


async def _admit_nothing(*_: object) -> None:
    return None


def _pod(i: int) -> dict[str, Any]:
    return {"metadata": {"name": f"p{i}"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}


async def creates_per_second(pods: int, admission: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        store = await SqliteStore(Path(tmp) / "db.sqlite").open()
        try:
            api = APIServer(store, RealClock())
            await api.bootstrap()
            if not admission:
                api.registry.admit = _admit_nothing
            resource = SCHEME.by_kind("v1", "Pod")
            assert resource is not None
            await api.registry.create(resource, "default", _pod(-1))  # warm caches
            start = time.perf_counter()
            await asyncio.gather(
                *(api.registry.create(resource, "default", _pod(i)) for i in range(pods))
            )
            return pods / (time.perf_counter() - start)
        finally:
            await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    for _ in range(args.rounds):
        for admission in (False, True):
            rate = asyncio.run(creates_per_second(args.pods, admission))
            label = "with admission" if admission else "without admission"
            print(f"{label}: {rate:,.0f} pod creates/s")


if __name__ == "__main__":
    main()
