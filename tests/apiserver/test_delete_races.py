"""A DELETE that races another writer: kube-apiserver reads the object again and decides the
deletion anew (GuaranteedUpdate, and etcd's conditional delete retried), so only the caller's
own preconditions answer 409. Seen as a DaemonSet controller's delete of a pod the taint
eviction controller had just marked, answered "the object has been modified"."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from taintplane.api.scheme import SCHEME, ResourceType
from taintplane.apiserver.registry import Registry
from taintplane.apiserver.status import APIError
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster


def _pods() -> ResourceType:
    found = SCHEME.lookup("", "v1", "pods")
    assert found is not None
    return found


PODS = _pods()


def pod(name: str, **metadata: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, **metadata},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]},
    }


def with_registry(tmp_path: Path, scenario: Callable[[Registry], Awaitable[None]]) -> None:
    async def main() -> None:
        async with in_process_cluster(tmp_path, VirtualClock(), components=()) as cluster:
            assert cluster.apiserver is not None
            await scenario(cluster.apiserver.registry)

    asyncio.run(main())


def interfere_once(registry: Registry, change: Callable[[], Awaitable[None]]) -> list[str]:
    """Make the next DELETE's admission write to the object first (another writer getting in
    between the deletion's read and its write); the verbs admitted, in order."""
    admit = registry.admit
    seen: list[str] = []

    async def admit_and_interfere(operation: str, *args: Any) -> None:
        seen.append(operation)
        await admit(operation, *args)
        if operation == "DELETE" and seen.count("DELETE") == 1:
            await change()

    registry.admit = admit_and_interfere
    return seen


def test_a_graceful_delete_raced_by_a_label_change_still_deletes(tmp_path: Path) -> None:
    async def scenario(registry: Registry) -> None:
        await registry.create(PODS, "default", pod("web"))

        async def relabel() -> None:
            current = await registry.get(PODS, "default", "web")
            current["metadata"]["labels"] = {"moved": "yes"}
            await registry.update(PODS, "default", "web", current)

        seen = interfere_once(registry, relabel)
        deleted, gone = await registry.delete(PODS, "default", "web", grace_period=30)
        assert not gone
        assert deleted["metadata"]["labels"] == {"moved": "yes"}  # decided on the new object
        assert deleted["metadata"]["deletionGracePeriodSeconds"] == 30
        assert seen == ["DELETE", "UPDATE", "DELETE"]

    with_registry(tmp_path, scenario)


def test_an_immediate_delete_raced_by_a_write_still_deletes(tmp_path: Path) -> None:
    async def scenario(registry: Registry) -> None:
        await registry.create(PODS, "default", pod("now"))

        async def relabel() -> None:
            current = await registry.get(PODS, "default", "now")
            current["metadata"]["labels"] = {"x": "y"}
            await registry.update(PODS, "default", "now", current)

        interfere_once(registry, relabel)
        _, gone = await registry.delete(PODS, "default", "now", grace_period=0)
        assert gone
        with pytest.raises(APIError) as missing:
            await registry.get(PODS, "default", "now")
        assert missing.value.code == 404

    with_registry(tmp_path, scenario)


def test_a_resource_version_precondition_still_answers_409_after_a_race(tmp_path: Path) -> None:
    async def scenario(registry: Registry) -> None:
        created = await registry.create(PODS, "default", pod("pinned"))
        version = created["metadata"]["resourceVersion"]

        async def relabel() -> None:
            current = await registry.get(PODS, "default", "pinned")
            current["metadata"]["labels"] = {"x": "y"}
            await registry.update(PODS, "default", "pinned", current)

        interfere_once(registry, relabel)
        with pytest.raises(APIError) as conflict:
            await registry.delete(
                PODS, "default", "pinned", preconditions={"resourceVersion": version}
            )
        assert conflict.value.code == 409
        assert "Precondition failed: ResourceVersion in precondition: " + version in str(
            conflict.value.status["message"]
        )
        still = await registry.get(PODS, "default", "pinned")
        assert "deletionTimestamp" not in still["metadata"]

    with_registry(tmp_path, scenario)
