"""The DRADeviceTaints and DRADeviceTaintRules gates: on by default in taintplane (alpha and
off in 1.35), and when turned off, what 1.35 does with them off — taints and tolerations
dropped on write unless already in use (resourceslice/strategy.go,
resourceclaimspec.DropDisabledFields), the allocator ignoring taints, no device taint eviction
controller (its requiredFeatureGates), no DeviceTaintRule API (storage_resource.go) and no
rule informer in the scheduler or the controller (devicetainteviction.New)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from taintplane.agents.nodes import DeviceSet, NodeShape
from taintplane.api.features import DEFAULTS, FeatureGates
from taintplane.client import ApiError, resource
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster
from tests.controllers.harness import START, Sim
from tests.controllers.test_dra_end_to_end import device_of, pod, templates
from tests.controllers.test_resourceclaim_live import DRIVER

SLICES = resource("resource.k8s.io", "v1", "resourceslices")
CLAIMS = resource("resource.k8s.io", "v1", "resourceclaims")
TEMPLATES = resource("resource.k8s.io", "v1", "resourceclaimtemplates")
RULES = resource("resource.k8s.io", "v1alpha3", "devicetaintrules")
TOLERATION = {"key": "example.com/x", "operator": "Exists", "effect": "NoExecute"}
TAINT = {"key": "example.com/x", "value": "y", "effect": "NoExecute"}


def run(
    tmp_path: Path,
    gates: str,
    scenario: Callable[[Sim], Awaitable[None]],
    *,
    components: tuple[str, ...] = (),
    nodes: list[NodeShape] | None = None,
) -> None:
    async def main() -> None:
        clock = VirtualClock(START)
        async with in_process_cluster(
            tmp_path, clock, components=components, features=FeatureGates.parse(gates), nodes=nodes
        ) as cluster:
            await scenario(Sim(cluster, clock))

    asyncio.run(main())


def a_slice(name: str, taints: list[dict[str, Any]] | None) -> dict[str, Any]:
    device: dict[str, Any] = {"name": "gpu-0"}
    if taints is not None:
        device["taints"] = taints
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "allNodes": True,
            "devices": [device],
        },
    }


def claim_spec() -> dict[str, Any]:
    return {
        "devices": {
            "requests": [
                {"name": "a", "exactly": {"deviceClassName": "gpu", "tolerations": [TOLERATION]}},
                {
                    "name": "b",
                    "firstAvailable": [
                        {"name": "s", "deviceClassName": "gpu", "tolerations": [TOLERATION]}
                    ],
                },
            ]
        }
    }


def tolerations(spec: dict[str, Any]) -> list[Any]:
    requests = spec["devices"]["requests"]
    return [
        requests[0]["exactly"].get("tolerations"),
        requests[1]["firstAvailable"][0].get("tolerations"),
    ]


def test_both_gates_are_known_and_on_by_default() -> None:
    assert DEFAULTS["DRADeviceTaints"] is True
    assert DEFAULTS["DRADeviceTaintRules"] is True
    gates = FeatureGates.parse("DRADeviceTaints=true,DRADeviceTaintRules=false")
    assert (gates.device_taints, gates.device_taint_rules) == (True, False)


def test_with_device_taints_off_new_taints_and_tolerations_are_dropped(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        created = await sim.client.create(SLICES, a_slice("s1", [TAINT]))
        assert "taints" not in created["spec"]["devices"][0]
        updated = await sim.client.patch(
            SLICES, "s1", {"spec": {"devices": [{"name": "gpu-0", "taints": [TAINT]}]}}
        )
        assert "taints" not in updated["spec"]["devices"][0]

        claim = await sim.client.create(
            CLAIMS,
            {"metadata": {"name": "c", "namespace": "default"}, "spec": claim_spec()},
            namespace="default",
        )
        assert tolerations(claim["spec"]) == [None, None]
        template = await sim.client.create(
            TEMPLATES,
            {"metadata": {"name": "t", "namespace": "default"}, "spec": {"spec": claim_spec()}},
            namespace="default",
        )
        assert tolerations(template["spec"]["spec"]) == [None, None]

    run(tmp_path, "DRADeviceTaints=false", scenario)


def test_with_device_taints_off_taints_already_in_use_are_kept(tmp_path: Path) -> None:
    async def prepare(sim: Sim) -> None:
        await sim.client.create(SLICES, a_slice("s1", [TAINT]))

    async def update(sim: Sim) -> None:
        second = {**TAINT, "key": "example.com/z"}
        updated = await sim.client.patch(
            SLICES, "s1", {"spec": {"devices": [{"name": "gpu-0", "taints": [TAINT, second]}]}}
        )
        assert [t["key"] for t in updated["spec"]["devices"][0]["taints"]] == [
            "example.com/x",
            "example.com/z",
        ]

    run(tmp_path, "", prepare)
    run(tmp_path, "DRADeviceTaints=false", update)


def test_with_device_taints_on_they_are_kept(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        created = await sim.client.create(SLICES, a_slice("s1", [TAINT]))
        assert created["spec"]["devices"][0]["taints"][0]["key"] == "example.com/x"
        claim = await sim.client.create(
            CLAIMS,
            {"metadata": {"name": "c", "namespace": "default"}, "spec": claim_spec()},
            namespace="default",
        )
        assert tolerations(claim["spec"]) == [[{**TOLERATION}], [{**TOLERATION}]]

    run(tmp_path, "", scenario)


def test_with_device_taint_rules_off_the_api_is_not_served(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        with pytest.raises(ApiError) as caught:
            await sim.client.list(RULES)
        assert caught.value.code == 404
        # v1alpha3 has nothing else, so the version itself is not served.
        group = await sim.client.get_path("/apis/resource.k8s.io")
        assert [v["version"] for v in group["versions"]] == ["v1"]

    run(tmp_path, "DRADeviceTaintRules=false", scenario)


RULE = {
    "apiVersion": "resource.k8s.io/v1alpha3",
    "kind": "DeviceTaintRule",
    "metadata": {"name": "maintenance"},
    "spec": {"deviceSelector": {"driver": DRIVER}, "taint": TAINT},
}
ONE_GPU = [NodeShape("gpu-1", devices=[DeviceSet(DRIVER, count=1)])]
EVERYTHING = ("scheduler", "controller-manager", "agents")


def test_a_rule_tainted_device_is_neither_allocated_nor_left_in_use(tmp_path: Path) -> None:
    """The reference behaviour with both gates on, for the test below."""

    async def scenario(sim: Sim) -> None:
        await templates(sim)
        await sim.client.create(RULES, RULE)
        await sim.advance(10)
        await sim.create_pod(pod("plain", "plain"))
        await sim.advance(5)
        running = await sim.pod("plain")
        assert running is not None
        assert running["status"].get("phase") == "Pending"

    run(tmp_path, "", scenario, components=EVERYTHING, nodes=ONE_GPU)


def test_with_device_taints_off_the_scheduler_and_eviction_ignore_taints(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await templates(sim)
        await sim.client.create(RULES, RULE)
        await sim.advance(10)
        await sim.create_pod(pod("plain", "plain"))
        await sim.advance(60)
        running = await sim.pod("plain")
        assert running is not None
        assert running["status"]["phase"] == "Running"
        assert not running["metadata"].get("deletionTimestamp")
        assert await device_of(sim, "plain") == "gpu-1/gpu-0"
        manager = sim.cluster.controller_manager
        assert manager is not None
        assert "device-taint-eviction-controller" not in manager.controllers

    run(tmp_path, "DRADeviceTaints=false", scenario, components=EVERYTHING, nodes=ONE_GPU)


def test_with_rules_off_a_slice_taint_still_evicts_and_rules_are_ignored(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await templates(sim)
        await sim.advance(10)
        await sim.create_pod(pod("plain", "plain"))
        await sim.advance(5)
        running = await sim.pod("plain")
        assert running is not None
        assert running["status"]["phase"] == "Running"
        manager = sim.cluster.controller_manager
        assert manager is not None
        controller = manager.controllers["device-taint-eviction-controller"]
        assert getattr(controller, "rule_objects", "missing") is None
        driver = sim.kubelets.dra
        assert driver is not None
        await driver.set_health(DRIVER, "gpu-1", "gpu-0", "failed")
        await sim.advance(0)
        evicted = await sim.pod("plain")
        assert evicted is not None
        assert evicted["metadata"]["deletionTimestamp"]

    run(tmp_path, "DRADeviceTaintRules=false", scenario, components=EVERYTHING, nodes=ONE_GPU)
