"""A cluster with only the scheduler on virtual time, for allocation results read back from the
API: nodes, one ResourceSlice per node with the devices given, device classes and claims."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from taintplane.client import resource
from tests.controllers.harness import Sim, simulate
from tests.scheduler.builders import make_node

DRIVER = "test.example.com"
SLICES = resource("resource.k8s.io", "v1", "resourceslices")
CLASSES = resource("resource.k8s.io", "v1", "deviceclasses")
CLAIMS = resource("resource.k8s.io", "v1", "resourceclaims")


def run(tmp_path: Path, scenario: Callable[[Sim], Awaitable[None]]) -> None:
    simulate(tmp_path, scenario, components=("scheduler",))


def device(name: str, attributes: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"name": name, "attributes": attributes} if attributes else {"name": name}


async def node_with_devices(sim: Sim, node: str, devices: list[dict[str, Any]]) -> None:
    await sim.create_node(make_node(node))
    # No node lifecycle controller here to lift TaintNodesByCondition's not-ready taint.
    await sim.taint(node, None)
    await sim.client.create(
        SLICES,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-slice"},
            "spec": {
                "driver": DRIVER,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        },
    )


async def device_class(
    sim: Sim, name: str, *, selector: str = "", config: list[dict[str, Any]] | None = None
) -> None:
    expression = selector or f'device.driver == "{DRIVER}"'
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": expression}}]}
    if config:
        spec["config"] = config
    await sim.client.create(
        CLASSES,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": spec,
        },
    )


def opaque(**parameters: Any) -> dict[str, Any]:
    return {"opaque": {"driver": DRIVER, "parameters": parameters}}


def exactly(name: str, device_class: str, **spec: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": device_class, **spec}}


def first_available(name: str, *subrequests: tuple[str, str]) -> dict[str, Any]:
    return {
        "name": name,
        "firstAvailable": [{"name": sub, "deviceClassName": cls} for sub, cls in subrequests],
    }


async def claim(sim: Sim, name: str, devices: dict[str, Any]) -> None:
    await sim.client.create(
        CLAIMS,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": devices},
        },
        namespace="default",
    )


async def schedule(sim: Sim, pod: str, *claims: str) -> str | None:
    """Creates a pod using the claims, gives the scheduler a second, and says where it went."""
    await sim.create_pod(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": pod, "namespace": "default"},
            "spec": {
                "containers": [{"name": "c", "image": "app"}],
                "resourceClaims": [{"name": c, "resourceClaimName": c} for c in claims],
            },
        }
    )
    await sim.advance(1)
    created = await sim.pod(pod)
    assert created is not None
    node = created["spec"].get("nodeName")
    return str(node) if node else None


async def allocation(sim: Sim, name: str) -> dict[str, Any] | None:
    found = await sim.client.get(CLAIMS, name, "default")
    result = (found.get("status") or {}).get("allocation")
    return dict(result) if result else None


async def results(sim: Sim, name: str) -> list[tuple[str, str]]:
    """(request, device) of each result of the claim's allocation."""
    allocated = await allocation(sim, name)
    assert allocated is not None, f"claim {name} is not allocated"
    return [(r["request"], r["device"]) for r in allocated["devices"]["results"]]


def result(request: str, node: str, name: str, **extra: Any) -> dict[str, Any]:
    return {"request": request, "driver": DRIVER, "pool": node, "device": name, **extra}
