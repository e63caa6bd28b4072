"""Where a NoExecute eviction's time goes, layer by layer: the ceiling each layer of the
write path puts on evictions per second.

    .venv/bin/python benchmarks/eviction_layers.py --pods 10000

Every eviction is the same three writes the taint eviction controller makes (the
``DisruptionTarget`` status condition, the graceful deletion, the ``TaintManagerEviction``
Event), 256 in flight, with one watcher decoding every pod change as the controller's
informer does. Measured at four depths, each on a fresh SQLite store:

``store``
    the three writes straight through the ``Store`` protocol (read, decode, change, encode,
    write; no API machinery at all): the ceiling of any design that writes three revisions
    per eviction through this store one by one.
``registry``
    the same through ``Registry`` with the API server's admission chain (strategic patch of
    the status subresource, graceful delete, create): type checks, strategies, validation,
    admission, managed fields, but no request, routing or response.
``api``
    the same as in-process requests through the API server (``Client`` over the in-process
    transport), as every component makes them: ``benchmarks/eviction_throughput.py`` measures
    this layer with the real controller.
``batch``
    the ``api`` layer's requests sent as batches of 32 pods (``Client.batch``: each request
    through the same API path, a batch's writes one store transaction and one fan-out), as
    the taint eviction controller sends a burst.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

from taintplane import runtime
from taintplane.apiserver.patch import apply_strategic_merge_patch
from taintplane.apiserver.registry import Registry
from taintplane.client import Op, resource
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import Cluster, in_process_cluster
from taintplane.store.sqlite import SqliteStore

NODES = resource("", "v1", "nodes")
PODS = resource("", "v1", "pods")
EVENTS = resource("", "v1", "events")
CONDITION = {
    "type": "DisruptionTarget",
    "status": "True",
    "lastTransitionTime": "2026-01-01T00:01:00Z",
    "reason": "DeletionByTaintManager",
    "message": "Taint manager: deleting due to NoExecute taint",
}


def pod(i: int) -> dict[str, Any]:
    return {
        "metadata": {"name": f"p-{i:06d}", "namespace": "default"},
        "spec": {
            "nodeName": "node-1",
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        },
    }


def event(i: int) -> dict[str, Any]:
    return {
        "metadata": {"name": f"p-{i:06d}.1", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": f"p-{i:06d}"},
        "reason": "TaintManagerEviction",
        "message": f"Marking for deletion Pod default/p-{i:06d}",
        "source": {"component": "taint-eviction-controller"},
        "firstTimestamp": "2026-01-01T00:01:00Z",
        "lastTimestamp": "2026-01-01T00:01:00Z",
        "count": 1,
        "type": "Normal",
    }


async def informer(watch: Any, changes: int) -> None:
    """Decode every pod change, as the controller's informer does, until ``changes`` came."""
    seen = 0
    async for change in watch:
        orjson.loads(change.value)
        seen += 1
        if seen == changes:
            return


async def in_flight(count: int, one: Callable[[int], Awaitable[None]], limit: int = 256) -> None:
    slots = asyncio.Semaphore(limit)

    async def limited(i: int) -> None:
        async with slots:
            await one(i)

    await asyncio.gather(*(limited(i) for i in range(count)))


async def stored_pod() -> bytes:
    """A pod as the API server stores it (defaults and managedFields filled in), so the
    store layer moves the same bytes as the others."""
    with tempfile.TemporaryDirectory() as data:
        async with in_process_cluster(Path(data), VirtualClock(), components=()) as cluster:
            assert cluster.client is not None
            await cluster.client.create(PODS, pod(0), namespace="default")
            kv = await registry_of(cluster).store.get(PODS.storage_key("default", "p-000000"))
            assert kv is not None
            return kv.value


async def store_layer(pods: int) -> float:
    stored = await stored_pod()
    with tempfile.TemporaryDirectory() as data:
        store = await SqliteStore(Path(data) / "db").open()
        try:
            keys = [PODS.storage_key("default", f"p-{i:06d}") for i in range(pods)]

            async def create(i: int) -> None:
                await store.create(keys[i], stored)

            await in_flight(pods, create)
            runtime.settle_heap()
            watch = store.watch(PODS.storage_prefix(), await store.current_revision())
            consumer = asyncio.create_task(informer(watch, 2 * pods))

            async def evict(i: int) -> None:
                kv = await store.get(keys[i])
                assert kv is not None
                obj = orjson.loads(kv.value)
                obj.setdefault("status", {}).setdefault("conditions", []).append(CONDITION)
                revision = await store.update(keys[i], orjson.dumps(obj), kv.mod_revision)
                obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:30Z"
                obj["metadata"]["deletionGracePeriodSeconds"] = 30
                await store.update(keys[i], orjson.dumps(obj), revision)
                await store.create(
                    EVENTS.storage_key("default", f"p-{i:06d}.1"), orjson.dumps(event(i))
                )

            began = time.perf_counter()
            await in_flight(pods, evict)
            await consumer
            return time.perf_counter() - began
        finally:
            await store.close()


async def registry_layer(pods: int) -> float:
    clock = VirtualClock()
    with tempfile.TemporaryDirectory() as data:
        async with in_process_cluster(Path(data), clock, components=()) as cluster:
            registry = registry_of(cluster)
            pod_type = registry.scheme.lookup("", "v1", "pods")
            event_type = registry.scheme.lookup("", "v1", "events")
            assert pod_type is not None
            assert event_type is not None

            async def create(i: int) -> None:
                await registry.create(pod_type, "default", pod(i), manager="bench")

            await in_flight(pods, create)
            runtime.settle_heap()
            watch = registry.store.watch(
                pod_type.storage_prefix(), await registry.store.current_revision()
            )
            consumer = asyncio.create_task(informer(watch, 2 * pods))
            patch = {"status": {"conditions": [CONDITION]}}

            async def evict(i: int) -> None:
                name = f"p-{i:06d}"
                await registry.guaranteed_update(
                    pod_type,
                    "default",
                    name,
                    lambda current: apply_strategic_merge_patch(
                        current, patch, consume_original=True
                    ),
                    subresource="status",
                    manager="taint-eviction-controller",
                )
                await registry.delete(pod_type, "default", name)
                await registry.create(event_type, "default", event(i), manager="bench")

            began = time.perf_counter()
            await in_flight(pods, evict)
            await consumer
            return time.perf_counter() - began


async def api_layer(pods: int) -> float:
    clock = VirtualClock()
    with tempfile.TemporaryDirectory() as data:
        async with in_process_cluster(Path(data), clock, components=()) as cluster:
            client = cluster.client
            assert client is not None

            async def create(i: int) -> None:
                await client.create(PODS, pod(i), namespace="default")

            await in_flight(pods, create)
            runtime.settle_heap()
            store = registry_of(cluster).store
            watch = store.watch(PODS.storage_prefix(), await store.current_revision())
            consumer = asyncio.create_task(informer(watch, 2 * pods))

            async def evict(i: int) -> None:
                name = f"p-{i:06d}"
                await client.patch(
                    PODS,
                    name,
                    {"status": {"conditions": [CONDITION]}},
                    namespace="default",
                    patch_type="strategic",
                    subresource="status",
                )
                await client.delete(PODS, name, "default")
                await client.create(EVENTS, event(i), namespace="default")

            began = time.perf_counter()
            await in_flight(pods, evict)
            await consumer
            return time.perf_counter() - began


async def batch_layer(pods: int, size: int = 32) -> float:
    """The ``api`` layer's requests sent as batches (``Client.batch``) of ``size`` pods: their
    status writes, then their deletions, then their Events, each batch one store transaction;
    256 // size batches in flight (the same 256 pods as the other layers)."""
    clock = VirtualClock()
    with tempfile.TemporaryDirectory() as data:
        async with in_process_cluster(Path(data), clock, components=()) as cluster:
            client = cluster.client
            assert client is not None

            async def create(i: int) -> None:
                await client.create(PODS, pod(i), namespace="default")

            await in_flight(pods, create)
            runtime.settle_heap()
            store = registry_of(cluster).store
            watch = store.watch(PODS.storage_prefix(), await store.current_revision())
            consumer = asyncio.create_task(informer(watch, 2 * pods))
            patch = {"status": {"conditions": [CONDITION]}}

            async def evict(chunk: int) -> None:
                names = [
                    (i, f"p-{i:06d}") for i in range(chunk * size, min(pods, (chunk + 1) * size))
                ]
                for answers in (
                    await client.batch(
                        [
                            Op.patch(
                                PODS,
                                n,
                                patch,
                                namespace="default",
                                patch_type="strategic",
                                subresource="status",
                            )
                            for _, n in names
                        ]
                    ),
                    await client.batch([Op.delete(PODS, n, "default") for _, n in names]),
                    await client.batch(
                        [Op.create(EVENTS, event(i), namespace="default") for i, _ in names]
                    ),
                ):
                    assert not any(isinstance(a, Exception) for a in answers)

            began = time.perf_counter()
            await in_flight(-(-pods // size), evict, limit=256 // size)
            await consumer
            return time.perf_counter() - began


def registry_of(cluster: Cluster) -> Registry:
    assert cluster.apiserver is not None
    return cluster.apiserver.registry


LAYERS = {
    "store": store_layer,
    "registry": registry_layer,
    "api": api_layer,
    "batch": batch_layer,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--layers", default="store,registry,api,batch")
    args = parser.parse_args()
    results = {}
    for name in args.layers.split(","):
        # As `taintplane up` runs (runtime.run: its interpreter switch interval included).
        elapsed = runtime.run(LAYERS[name](args.pods), virtual_time=True)
        results[name] = {
            "seconds": round(elapsed, 2),
            "evictions_per_second": round(args.pods / elapsed),
            "microseconds_per_eviction": round(elapsed / args.pods * 1e6),
        }
        print(json.dumps({"layer": name, **results[name]}), flush=True)


if __name__ == "__main__":
    main()
