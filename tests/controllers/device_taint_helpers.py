"""Builders for device-taint scenarios: slices published by the simulated DRA driver, claims
allocated by writing their status (as the scheduler would), pods using them, rules."""

from __future__ import annotations

from typing import Any

from taintplane.agents.dra_driver import DraDriver
from taintplane.agents.nodes import DeviceSet, NodeShape
from taintplane.client import Client, resource
from tests.controllers.harness import Sim

CLAIMS = resource("resource.k8s.io", "v1", "resourceclaims")
RULES = resource("resource.k8s.io", "v1alpha3", "devicetaintrules")
DRIVER = "gpu.example.com"
GPUS = DeviceSet(DRIVER, count=8)


async def publish(sim: Sim, *nodes: str) -> DraDriver:
    """The simulated driver publishing eight GPUs per node (no kubelets needed)."""
    driver = DraDriver(sim.client, sim.clock)
    for node in nodes:
        await driver.publish_node(NodeShape(node, devices=[GPUS]), f"uid-{node}")
    await sim.advance(0)
    return driver


def toleration(
    key: str, seconds: int | None = None, effect: str = "NoExecute", **extra: Any
) -> dict[str, Any]:
    found: dict[str, Any] = {"key": key, "operator": "Exists", **extra}
    if effect:
        found["effect"] = effect
    if seconds is not None:
        found["tolerationSeconds"] = seconds
    return found


async def allocated_claim(
    client: Client,
    name: str,
    devices: list[tuple[str, str]],
    *,
    tolerations: list[dict[str, Any]] | None = None,
    namespace: str = "default",
) -> dict[str, Any]:
    """A claim for ``devices`` [(pool, device)], allocated by writing its status."""
    exactly: dict[str, Any] = {"deviceClassName": "gpu.example.com", "count": len(devices)}
    if tolerations:
        exactly["tolerations"] = tolerations
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }
    await client.create(CLAIMS, claim, namespace=namespace)
    results = [
        {"request": "gpu", "driver": DRIVER, "pool": pool, "device": device}
        for pool, device in devices
    ]
    status = {"allocation": {"devices": {"results": results}}}
    return await client.patch(
        CLAIMS, name, {"status": status}, namespace=namespace, subresource="status"
    )


async def running_pod(
    sim: Sim, name: str, claim: str, *, node: str = "node-1", namespace: str = "default"
) -> dict[str, Any]:
    """A pod bound to ``node`` using ``claim``, which is reserved for it."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "image": "cuda"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
        },
    }
    created = await sim.create_pod(pod)
    claim_obj = await sim.client.get(CLAIMS, claim, namespace)
    others = list((claim_obj.get("status") or {}).get("reservedFor") or [])  # shared claims
    reserved = [*others, {"resource": "pods", "name": name, "uid": created["metadata"]["uid"]}]
    await sim.client.patch(
        CLAIMS,
        claim,
        {"status": {"reservedFor": reserved}},
        namespace=namespace,
        subresource="status",
    )
    await sim.advance(0)
    return created


def rule(
    name: str,
    key: str,
    effect: str,
    *,
    value: str = "",
    driver: str | None = DRIVER,
    pool: str | None = None,
    device: str | None = None,
) -> dict[str, Any]:
    selector = {
        k: v for k, v in (("driver", driver), ("pool", pool), ("device", device)) if v is not None
    }
    taint: dict[str, Any] = {"key": key, "effect": effect}
    if value:
        taint["value"] = value
    return {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "DeviceTaintRule",
        "metadata": {"name": name},
        "spec": {"deviceSelector": selector, "taint": taint},
    }


async def create_rule(sim: Sim, obj: dict[str, Any]) -> dict[str, Any]:
    created = await sim.client.create(RULES, obj)
    await sim.advance(0)
    return created


async def set_effect(sim: Sim, name: str, effect: str) -> dict[str, Any]:
    patched = await sim.client.patch(RULES, name, {"spec": {"taint": {"effect": effect}}})
    await sim.advance(0)
    return patched


async def rule_condition(sim: Sim, name: str) -> dict[str, Any] | None:
    obj = await sim.client.get(RULES, name)
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "EvictionInProgress"), None)


def summary(condition: dict[str, Any] | None) -> tuple[str, str, str, str] | None:
    """(status, reason, message, lastTransitionTime) of a condition."""
    if condition is None:
        return None
    return (
        condition["status"],
        condition["reason"],
        condition["message"],
        condition["lastTransitionTime"],
    )
