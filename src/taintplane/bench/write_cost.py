"""The cost of one in-process API write: process CPU per request, by kind of write.

    .venv/bin/python benchmarks/write_cost.py --requests 4000

An in-process cluster with no components (SQLite store, API server, the in-process client
components use); the writes a pod's life and its eviction cause, each ``--requests`` times
with 256 in flight, as components send them (``Client`` over the in-process transport, so
routing, admission, the type check, validation, field management, JSON, the SQLite row and
the watch fan-out are all in): pod creates, Event creates, pod status patches (a
strategic merge of one condition, as the taint eviction controller's DisruptionTarget),
ReplicaSet status updates (the whole object sent back, as the ReplicaSet controller's),
GETs and graceful deletes. Measured: process CPU (every thread) per request in µs, the
figure to compare on a shared machine; ``--profile FILE`` writes a cProfile of the kind
named by ``--profile-kind``.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from taintplane import runtime
from taintplane.bench.eviction_layers import CONDITION, event, in_flight, pod
from taintplane.client import Client, resource
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster

PODS = resource("", "v1", "pods")
EVENTS = resource("", "v1", "events")
REPLICASETS = resource("apps", "v1", "replicasets")
KINDS = ("pod_create", "event_create", "status_patch", "rs_status_update", "get", "delete")


def replicaset(i: int) -> dict[str, Any]:
    labels = {"app": f"web-{i}"}
    return {
        "metadata": {"name": f"rs-{i:06d}", "namespace": "default", "labels": labels},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }


def writes(client: Client, replicasets: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Each kind of request, for request number ``i``."""

    async def pod_create(i: int) -> None:
        await client.create(PODS, pod(i), namespace="default")

    async def event_create(i: int) -> None:
        await client.create(EVENTS, event(i), namespace="default")

    async def status_patch(i: int) -> None:
        await client.patch(
            PODS,
            f"p-{i:06d}",
            {"status": {"conditions": [CONDITION]}},
            namespace="default",
            patch_type="strategic",
            subresource="status",
        )

    async def rs_status_update(i: int) -> None:
        body = replicasets[i]
        body["status"] = {"replicas": 3, "readyReplicas": 2, "observedGeneration": 1}
        await client.update(REPLICASETS, body, subresource="status")

    async def get(i: int) -> None:
        await client.get(PODS, f"p-{i:06d}", namespace="default")

    async def delete(i: int) -> None:
        await client.delete(PODS, f"p-{i:06d}", "default")

    return {
        "pod_create": pod_create,
        "event_create": event_create,
        "status_patch": status_patch,
        "rs_status_update": rs_status_update,
        "get": get,
        "delete": delete,
    }


async def run(requests: int, profile: str | None, profile_kind: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as data:
        async with in_process_cluster(Path(data), VirtualClock(), components=()) as cluster:
            client = cluster.client
            assert client is not None
            replicasets: dict[int, dict[str, Any]] = {}

            async def make_replicaset(i: int) -> None:
                replicasets[i] = await client.create(
                    REPLICASETS, replicaset(i), namespace="default"
                )

            await in_flight(requests, make_replicaset)
            kinds = writes(client, replicasets)
            micros: dict[str, float] = {}
            for kind in KINDS:
                one: Callable[[int], Awaitable[None]] = kinds[kind]
                runtime.settle_heap()
                profiler = cProfile.Profile() if profile and kind == profile_kind else None
                began = time.process_time()
                if profiler:
                    profiler.enable()
                await in_flight(requests, one)
                if profiler and profile:
                    profiler.disable()
                    profiler.dump_stats(profile)
                micros[kind] = round(1e6 * (time.process_time() - began) / requests, 1)
            return {"requests": requests, "cpu_us_per_request": micros}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--profile")
    parser.add_argument("--profile-kind", default="status_patch", choices=KINDS)
    args = parser.parse_args()
    result = runtime.run(run(args.requests, args.profile, args.profile_kind), virtual_time=True)
    print(json.dumps(result))
