"""A device is allocatable again once the claim that held it is gone (issue 18, finding 1).

The scheduler counts a device as taken while a claim's allocation holds it, and while its own
write of that allocation is in flight; both must follow the claims: a deleted claim frees its
devices, whether or not the scheduler ran a cycle in between.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from taintplane.client import ApiError, resource
from tests.controllers.harness import Sim, simulate
from tests.scheduler.builders import make_node

PODS = resource("", "v1", "pods")
SLICES = resource("resource.k8s.io", "v1", "resourceslices")
CLASSES = resource("resource.k8s.io", "v1", "deviceclasses")
CLAIMS = resource("resource.k8s.io", "v1", "resourceclaims")
DRIVER = "tpv.example.com"


def _slice(node: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "d0"}],
        },
    }


_CLAIM = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "claim", "namespace": "default"},
    "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "cls"}}]}},
}
_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "pod", "namespace": "default"},
    "spec": {
        "containers": [{"name": "c", "image": "app"}],
        "resourceClaims": [{"name": "c", "resourceClaimName": "claim"}],
    },
}


async def _create_all(sim: Sim, node: str) -> None:
    await sim.client.create(SLICES, _slice(node))
    await sim.client.create(CLAIMS, _CLAIM, namespace="default")
    await sim.create_pod(dict(_POD))
    await sim.advance(5)


async def _delete_all(sim: Sim) -> None:
    await sim.client.delete(PODS, "pod", "default", grace_period=0)
    await sim.client.delete(CLAIMS, "claim", "default")
    await sim.client.delete(SLICES, "s")
    await sim.advance(5)
    for rt, name in ((PODS, "pod"), (CLAIMS, "claim")):
        with pytest.raises(ApiError) as gone:
            await sim.client.get(rt, name, "default")
        assert gone.value.code == 404, f"{name} is still there"


async def _node_of_pod(sim: Sim) -> str | None:
    pod = await sim.pod("pod")
    assert pod is not None
    return (pod.get("spec") or {}).get("nodeName")


def _run(tmp_path: Path, second_node: str) -> None:
    async def scenario(sim: Sim) -> None:
        for name in ("node", "other"):
            await sim.create_node(make_node(name))
            await sim.taint(name, None)
        await sim.client.create(
            CLASSES,
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": "cls"},
                "spec": {},
            },
        )
        await _create_all(sim, "node")
        assert await _node_of_pod(sim) == "node"
        await _delete_all(sim)
        await _create_all(sim, second_node)
        assert await _node_of_pod(sim) == second_node
        claim = await sim.client.get(CLAIMS, "claim", "default")
        assert claim["status"]["allocation"]["devices"]["results"][0]["device"] == "d0"

    simulate(tmp_path, scenario, components=("scheduler", "controller-manager"))


def test_a_device_is_allocatable_again_after_its_claim_is_deleted(tmp_path: Path) -> None:
    _run(tmp_path, "node")


def test_the_same_device_on_another_node_is_allocatable_after_its_claim_is_deleted(
    tmp_path: Path,
) -> None:
    _run(tmp_path, "other")
