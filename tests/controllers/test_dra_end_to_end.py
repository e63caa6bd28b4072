"""DRA end to end on virtual time, every component real: the scheduler allocates a claim made
from a template, the kubelet runs the pod, the simulated driver marks the device failed
(a NoExecute taint in its slice), and the device-taint eviction controller evicts the pod —
at once without a toleration, at timeAdded + tolerationSeconds with one — while the failed
device is never allocated again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from taintplane.agents.nodes import DeviceSet, NodeShape
from taintplane.client import resource
from tests.controllers.harness import Sim, simulate
from tests.controllers.test_resourceclaim_live import DRIVER, claims

CLAIMS = resource("resource.k8s.io", "v1", "resourceclaims")
TEMPLATES = resource("resource.k8s.io", "v1", "resourceclaimtemplates")
CLASSES = resource("resource.k8s.io", "v1", "deviceclasses")
FAILED = f"{DRIVER}/failed"


async def templates(sim: Sim) -> None:
    await sim.client.create(
        CLASSES,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        },
    )
    for name, tolerations in (
        ("plain", []),
        (
            "patient",
            [{"key": FAILED, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}],
        ),
    ):
        exactly: dict[str, Any] = {"deviceClassName": "gpu"}
        if tolerations:
            exactly["tolerations"] = tolerations
        await sim.client.create(
            TEMPLATES,
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}},
            },
            namespace="default",
        )


def pod(name: str, template: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        # Containers take 10 s to stop, so the evicted pod is still there to be looked at.
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {"sim.taintplane.io/shutdown-seconds": "10"},
        },
        "spec": {
            "containers": [{"name": "c", "image": "trainer"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}],
        },
    }


async def device_of(sim: Sim, pod_name: str) -> str:
    for claim in await claims(sim):
        owner = claim["metadata"]["ownerReferences"][0]["name"]
        if owner == pod_name:
            result = claim["status"]["allocation"]["devices"]["results"][0]
            return f"{result['pool']}/{result['device']}"
    raise AssertionError(f"no claim allocated for {pod_name}")


def condition(pod: dict[str, Any]) -> dict[str, Any] | None:
    return next(
        (c for c in pod["status"].get("conditions", []) if c["type"] == "DisruptionTarget"), None
    )


def test_a_failed_device_evicts_its_pods_on_time_and_is_not_allocated_again(
    tmp_path: Path,
) -> None:
    async def scenario(sim: Sim) -> None:
        await templates(sim)
        await sim.advance(10)
        await sim.create_pod(pod("plain", "plain"))
        await sim.create_pod(pod("patient", "patient"))
        await sim.advance(5)
        for name in ("plain", "patient"):
            running = await sim.pod(name)
            assert running is not None
            assert running["status"]["phase"] == "Running", name
        plain_device = await device_of(sim, "plain")
        patient_device = await device_of(sim, "patient")
        assert plain_device != patient_device
        driver = sim.kubelets.dra
        assert driver is not None
        failed_at = sim.elapsed
        for device in (plain_device, patient_device):
            pool, name = device.split("/")
            await driver.set_health(DRIVER, pool, name, "failed")
        await sim.advance(0)
        # No toleration: evicted at the taint's timeAdded, that is at once.
        plain = await sim.pod("plain")
        assert plain is not None
        assert plain["metadata"]["deletionTimestamp"]
        plain_condition = condition(plain)
        assert plain_condition is not None
        assert plain_condition["reason"] == "DeletionByDeviceTaintManager"
        # 60 s of toleration: still running until exactly timeAdded + 60.
        await sim.advance_to(failed_at + 59)
        assert await sim.deletion("patient") is None
        await sim.advance_to(failed_at + 60)
        patient = await sim.pod("patient")
        assert patient is not None
        assert patient["metadata"]["deletionTimestamp"]
        found = condition(patient)
        assert found is not None
        assert (found["reason"], found["message"]) == (
            "DeletionByDeviceTaintManager",
            "Device Taint manager: deleting due to NoExecute taint",
        )
        # The kubelet stops it 10 s later; then it is gone.
        await sim.advance_to(failed_at + 70)
        assert await sim.pod("patient") is None
        # A new pod never gets a failed device.
        await sim.advance(30)
        await sim.create_pod(pod("fresh", "plain"))
        await sim.advance(5)
        assert await device_of(sim, "fresh") not in (plain_device, patient_device)

    simulate(
        tmp_path,
        scenario,
        components=("scheduler", "controller-manager", "agents"),
        nodes=[
            NodeShape("gpu-1", devices=[DeviceSet(DRIVER, count=2)]),
            NodeShape("gpu-2", devices=[DeviceSet(DRIVER, count=2)]),
        ],
    )
