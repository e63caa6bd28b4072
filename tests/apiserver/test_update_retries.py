"""A patch, or an update without a resourceVersion, that another write races is read and
applied again for as long as that happens, as kube-apiserver's GuaranteedUpdate loops: the
client sees a 409 only for a resourceVersion it named itself. Seen as 3 of 16 000 merge
patches of one node from 16 clients answered 409 "too many concurrent updates"."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from taintplane.api.scheme import SCHEME, ResourceType
from taintplane.apiserver.handlers import apply_patch
from taintplane.apiserver.registry import Registry
from taintplane.apiserver.status import APIError
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster


def _nodes() -> ResourceType:
    found = SCHEME.lookup("", "v1", "nodes")
    assert found is not None
    return found


NODES = _nodes()
MERGE = "application/merge-patch+json"


def with_registry(tmp_path: Path, scenario: Callable[[Registry], Awaitable[None]]) -> None:
    async def main() -> None:
        async with in_process_cluster(tmp_path, VirtualClock(), components=()) as cluster:
            assert cluster.apiserver is not None
            await scenario(cluster.apiserver.registry)

    asyncio.run(main())


def race(registry: Registry, resource: ResourceType, name: str, times: int) -> list[int]:
    """Make each of the next ``times`` updates of ``name`` lose: between its read and its
    write (in its admission), another writer changes the object. Returns the racer's count."""
    admit = registry.admit
    raced = [0]
    racing = [False]

    async def admit_and_race(operation: str, res: ResourceType, *args: Any) -> None:
        await admit(operation, res, *args)
        if operation != "UPDATE" or res != resource or racing[0] or raced[0] >= times:
            return
        racing[0] = True
        try:
            current = await registry.get(resource, "", name)
            current["metadata"].setdefault("labels", {})[f"racer-{raced[0]}"] = "x"
            await registry.update(resource, "", name, current)
            raced[0] += 1
        finally:
            racing[0] = False

    registry.admit = admit_and_race
    return raced


def test_a_patch_raced_forty_times_in_a_row_still_applies(tmp_path: Path) -> None:
    async def scenario(registry: Registry) -> None:
        await registry.create(NODES, "", {"metadata": {"name": "busy"}})
        raced = race(registry, NODES, "busy", 40)
        patch = {"metadata": {"labels": {"mine": "yes"}}}
        patched = await registry.guaranteed_update(
            NODES, "", "busy", lambda current: apply_patch(MERGE, current, patch)
        )
        assert raced[0] == 40
        labels = patched["metadata"]["labels"]
        assert labels["mine"] == "yes"
        assert {f"racer-{i}" for i in range(40)} <= set(labels)

    with_registry(tmp_path, scenario)


def test_an_unconditional_update_is_retried_and_a_conditional_one_is_not(tmp_path: Path) -> None:
    async def scenario(registry: Registry) -> None:
        created = await registry.create(NODES, "", {"metadata": {"name": "put"}})
        race(registry, NODES, "put", 3)
        body = {"metadata": {"name": "put", "annotations": {"a": "b"}}}
        updated = await registry.update(NODES, "", "put", body)
        assert updated["metadata"]["annotations"] == {"a": "b"}
        race(registry, NODES, "put", 1)
        pinned = {"metadata": {**updated["metadata"], "annotations": {"c": "d"}}}
        with pytest.raises(APIError) as refused:
            await registry.update(NODES, "", "put", pinned)
        assert refused.value.code == 409
        assert refused.value.status["message"] == (
            'Operation cannot be fulfilled on nodes "put": the object has been modified; '
            "please apply your changes to the latest version and try again"
        )
        assert created["metadata"]["uid"] == updated["metadata"]["uid"]

    with_registry(tmp_path, scenario)


def test_sixteen_clients_merge_patching_one_node_all_succeed(cluster: Any) -> None:
    clients, patches = 16, 25
    with httpx.Client(base_url=cluster.url) as api:
        assert api.post("/api/v1/nodes", json={"metadata": {"name": "hot"}}).status_code == 201

    def patcher(index: int) -> list[int]:
        codes = []
        with httpx.Client(base_url=cluster.url, timeout=60) as api:
            for i in range(patches):
                body = {"metadata": {"labels": {f"c{index}": str(i)}}}
                response = api.patch(
                    "/api/v1/nodes/hot", json=body, headers={"Content-Type": MERGE}
                )
                codes.append(response.status_code)
        return codes

    with ThreadPoolExecutor(clients) as pool:
        codes = [code for result in pool.map(patcher, range(clients)) for code in result]
    assert codes == [200] * (clients * patches)
    with httpx.Client(base_url=cluster.url) as api:
        labels = api.get("/api/v1/nodes/hot").json()["metadata"]["labels"]
    assert {f"c{i}": str(patches - 1) for i in range(clients)}.items() <= labels.items()


def test_a_retried_update_writes_the_checked_body(tmp_path: Path) -> None:
    """The retry starts from the body as checked (unknown fields dropped, a cluster-scoped
    object's namespace cleared), not from the raw request."""

    async def scenario(registry: Registry) -> None:
        await registry.create(NODES, "", {"metadata": {"name": "checked"}})
        race(registry, NODES, "checked", 2)
        body = {
            "metadata": {"name": "checked", "namespace": "nowhere", "labels": {"a": "b"}},
            "spec": {"unschedulable": True, "bogusField": 1},
        }
        updated = await registry.update(NODES, "", "checked", body)
        stored = await registry.get(NODES, "", "checked")
        assert stored == updated
        assert "namespace" not in stored["metadata"]
        assert stored["spec"] == {"unschedulable": True}
        assert stored["metadata"]["labels"]["a"] == "b"

    with_registry(tmp_path, scenario)
