"""Scheduling with claims, live on virtual time: a pod's ResourceClaimTemplate becomes its own
claim, the scheduler allocates untainted free devices on a node and reserves the claim, the
pod runs; when the pod goes, the claim is deallocated and deleted."""

from __future__ import annotations

import re
from typing import Any

import pytest

from taintplane.agents.nodes import DeviceSet, NodeShape
from taintplane.client import ApiError, resource
from taintplane.client.shared import SharedInformers
from taintplane.controllers.resourceclaim import (
    ResourceClaimController,
    generate_name,
    is_pod_done,
)
from tests.controllers.harness import Sim, simulate

CLAIMS = resource("resource.k8s.io", "v1", "resourceclaims")
TEMPLATES = resource("resource.k8s.io", "v1", "resourceclaimtemplates")
CLASSES = resource("resource.k8s.io", "v1", "deviceclasses")
RULES = resource("resource.k8s.io", "v1alpha3", "devicetaintrules")
PODS = resource("", "v1", "pods")
DRIVER = "gpu.example.com"
GPUS = DeviceSet(DRIVER, count=2, attributes={"model": "a100"}, capacity={"memory": "80Gi"})


async def setup(sim: Sim, count: int = 1) -> None:
    await sim.client.create(
        CLASSES,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        },
    )
    selector = (
        f'device.attributes["{DRIVER}"].model == "a100" && '
        f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0'
    )
    await sim.client.create(
        TEMPLATES,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": "default"},
            "spec": {
                "metadata": {"labels": {"app": "trainer"}},
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "gpu",
                                "exactly": {
                                    "deviceClassName": "gpu",
                                    "count": count,
                                    "selectors": [{"cel": {"expression": selector}}],
                                },
                            }
                        ]
                    }
                },
            },
        },
        namespace="default",
    )


def gpu_pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "trainer"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
        },
    }


async def claims(sim: Sim) -> list[dict[str, Any]]:
    items, _ = await sim.client.list(CLAIMS, "default")
    return items


def test_a_template_claim_is_allocated_reserved_and_released(tmp_path):
    async def scenario(sim: Sim) -> None:
        # Every device on gpu-1 is tainted NoSchedule by a rule: the pod must go to gpu-2.
        await sim.client.create(
            RULES,
            {
                "apiVersion": "resource.k8s.io/v1alpha3",
                "kind": "DeviceTaintRule",
                "metadata": {"name": "gpu-1-maintenance"},
                "spec": {
                    "deviceSelector": {"pool": "gpu-1"},
                    "taint": {"key": "example.com/maintenance", "effect": "NoSchedule"},
                },
            },
        )
        await setup(sim)
        await sim.advance(30)
        created = await sim.create_pod(gpu_pod("trainer"))
        await sim.advance(5)

        (claim,) = await claims(sim)
        meta = claim["metadata"]
        assert re.fullmatch(r"trainer-gpu-[a-z0-9]{5}", meta["name"])
        assert meta["annotations"] == {"resource.kubernetes.io/pod-claim-name": "gpu"}
        assert meta["labels"] == {"app": "trainer"}
        assert meta["ownerReferences"] == [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": "trainer",
                "uid": created["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert meta["finalizers"] == ["resource.kubernetes.io/delete-protection"]
        allocation = claim["status"]["allocation"]
        assert allocation["devices"]["results"] == [
            {"request": "gpu", "driver": DRIVER, "pool": "gpu-2", "device": "gpu-0"}
        ]
        assert allocation["nodeSelector"] == {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-2"]}]}
            ]
        }
        assert claim["status"]["reservedFor"] == [
            {"resource": "pods", "name": "trainer", "uid": created["metadata"]["uid"]}
        ]

        pod = await sim.pod("trainer")
        assert pod is not None
        assert pod["status"]["resourceClaimStatuses"] == [
            {"name": "gpu", "resourceClaimName": meta["name"]}
        ]
        assert pod["spec"]["nodeName"] == "gpu-2"
        assert pod["status"]["phase"] == "Running"

        # A second pod gets the other free device on gpu-2, a third finds none.
        await sim.create_pod(gpu_pod("second"))
        await sim.advance(5)
        second = await sim.pod("second")
        assert second is not None
        assert second["spec"]["nodeName"] == "gpu-2"
        await sim.create_pod(gpu_pod("third"))
        await sim.advance(5)
        third = await sim.pod("third")
        assert third is not None
        assert not third["spec"].get("nodeName")
        scheduled = next(c for c in third["status"]["conditions"] if c["type"] == "PodScheduled")
        assert scheduled["message"] == (
            "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, "
            "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
        )

        # The first pod goes: its claim is released and deleted, and the third pod gets the
        # device.
        await sim.client.delete(PODS, "trainer", "default")
        await sim.advance(60)
        assert await sim.pod("trainer") is None
        names = [c["metadata"]["name"] for c in await claims(sim)]
        assert meta["name"] not in names
        await sim.advance(30)
        third = await sim.pod("third")
        assert third is not None
        assert third["spec"].get("nodeName") == "gpu-2"

        # Lifting the rule lets a new pod use gpu-1.
        await sim.client.delete(RULES, "gpu-1-maintenance")
        await sim.create_pod(gpu_pod("fourth"))
        await sim.advance(15)
        fourth = await sim.pod("fourth")
        assert fourth is not None
        assert fourth["spec"].get("nodeName") == "gpu-1"

    simulate(
        tmp_path,
        scenario,
        components=("scheduler", "controller-manager", "agents"),
        nodes=[NodeShape("gpu-1", devices=[GPUS]), NodeShape("gpu-2", devices=[GPUS])],
    )


def test_a_claim_by_name_is_deallocated_when_its_last_pod_is_gone(tmp_path):
    async def scenario(sim: Sim) -> None:
        await setup(sim, count=2)
        template = await sim.client.get(TEMPLATES, "one-gpu", "default")
        await sim.client.create(
            CLAIMS,
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": "shared", "namespace": "default"},
                "spec": template["spec"]["spec"],
            },
            namespace="default",
        )
        await sim.advance(30)
        for name in ("a", "b"):
            pod = gpu_pod(name)
            pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared"}]
            await sim.create_pod(pod)
            await sim.advance(5)
        shared = await sim.client.get(CLAIMS, "shared", "default")
        assert [r["name"] for r in shared["status"]["reservedFor"]] == ["a", "b"]
        node = shared["status"]["allocation"]["devices"]["results"][0]["pool"]
        for name in ("a", "b"):
            running = await sim.pod(name)
            assert running is not None
            assert running["spec"]["nodeName"] == node
        await sim.client.delete(PODS, "a", "default")
        await sim.advance(60)
        shared = await sim.client.get(CLAIMS, "shared", "default")
        assert [r["name"] for r in shared["status"]["reservedFor"]] == ["b"]
        await sim.client.delete(PODS, "b", "default")
        await sim.advance(60)
        shared = await sim.client.get(CLAIMS, "shared", "default")
        assert "allocation" not in shared["status"]
        assert "reservedFor" not in shared["status"]
        assert not shared["metadata"].get("finalizers")
        # Not generated for a pod: it stays for the next one.
        try:
            await sim.client.get(CLAIMS, "shared", "default")
        except ApiError:  # pragma: no cover
            raise AssertionError("the claim should stay") from None

    simulate(
        tmp_path,
        scenario,
        components=("scheduler", "controller-manager", "agents"),
        nodes=[NodeShape("gpu-1", devices=[GPUS])],
    )


def test_generate_name_and_pod_done():
    assert generate_name("trainer", "gpu") == "trainer-gpu-"
    # Upstream cuts both names in proportion (len * 57 / len("<pod>-<claim>-")), no dash after.
    assert generate_name("p" * 40, "c" * 40) == "p" * 27 + "-" + "c" * 27
    assert generate_name("p" * 50, "gpu") == "p" * 50 + "-gpu-"  # 55: fits
    assert generate_name("p" * 53, "gpu") == "p" * 52 + "-gp"  # 58: cut
    assert is_pod_done({"metadata": {}, "status": {"phase": "Succeeded"}})
    assert is_pod_done({"metadata": {"deletionTimestamp": "x"}, "spec": {}})
    assert not is_pod_done({"metadata": {"deletionTimestamp": "x"}, "spec": {"nodeName": "n"}})


def test_the_finalizer_of_an_unallocated_unreserved_claim_is_left_alone(tmp_path):
    """The scheduler adds the finalizer before it writes the allocation and reservation
    (PreBind); the controller removes it only when the claim stops being used, or is being
    deleted (upstream's syncClaim), so it never races the scheduler's second write."""

    async def scenario(sim: Sim) -> None:
        await sim.client.create(
            CLAIMS,
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {
                    "name": "c",
                    "namespace": "default",
                    "finalizers": ["resource.kubernetes.io/delete-protection"],
                },
                "spec": {"devices": {"requests": []}},
            },
            namespace="default",
        )
        await sim.advance(5)
        claim = await sim.client.get(CLAIMS, "c", "default")
        assert claim["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
        # Being deleted and used by nobody: now it goes.
        await sim.client.delete(CLAIMS, "c", "default")
        await sim.advance(5)
        with pytest.raises(ApiError) as gone:
            await sim.client.get(CLAIMS, "c", "default")
        assert gone.value.code == 404

    simulate(tmp_path, scenario, controllers=("resourceclaim-controller",))


def test_a_reservation_for_a_pod_not_yet_seen_is_checked_with_the_api_server(tmp_path):
    """As upstream's syncClaim: a pod missing from the informer's cache may only be late to it,
    so the API server is asked before its reservation is dropped; a pod seen deleted is not."""

    async def scenario(sim: Sim) -> None:
        created = await sim.create_pod(gpu_pod("p"))
        # Informers never started: every pod is one this controller has not seen.
        controller = ResourceClaimController(sim.client, sim.clock, SharedInformers(sim.client))
        ref = {"resource": "pods", "name": "p", "uid": created["metadata"]["uid"]}
        assert await controller._pod_in_use("default", ref)
        assert not await controller._pod_in_use("default", {**ref, "uid": "another"})
        assert not await controller._pod_in_use("default", {**ref, "name": "ghost"})
        controller._pod_deleted(created)
        assert not await controller._pod_in_use("default", ref)

    simulate(tmp_path, scenario, components=())
