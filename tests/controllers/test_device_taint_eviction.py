"""The device taint eviction controller on virtual time: KEP-5055's four user stories end to
end, with exact eviction instants, the pod condition, events, rule status and metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prometheus_client import generate_latest

from taintplane.client import resource
from taintplane.controllers.devicetainteviction import DeviceTaintEvictionController
from tests.controllers.device_taint_helpers import (
    CLAIMS,
    RULES,
    allocated_claim,
    create_rule,
    publish,
    rule,
    rule_condition,
    running_pod,
    set_effect,
    summary,
    toleration,
)
from tests.controllers.harness import Sim, at, simulate

NAMESPACES = resource("", "v1", "namespaces")
PODS = resource("", "v1", "pods")
ONLY = ("device-taint-eviction-controller",)
NOT_AGAIN = (
    " if the effect was NoExecute. This information will not be updated again. "
    "Recreate the DeviceTaintRule to trigger an update."
)


def controller(sim: Sim) -> DeviceTaintEvictionController:
    manager = sim.cluster.controller_manager
    assert manager is not None
    found = manager.controllers["device-taint-eviction-controller"]
    assert isinstance(found, DeviceTaintEvictionController)
    return found


def disruption(pod: dict[str, Any] | None) -> dict[str, Any] | None:
    assert pod is not None
    conditions = pod["status"].get("conditions", [])
    return next((c for c in conditions if c["type"] == "DisruptionTarget"), None)


def metrics(sim: Sim) -> list[str]:
    manager = sim.cluster.controller_manager
    assert manager is not None
    text = generate_latest(manager.registry).decode()
    return [
        line
        for line in text.splitlines()
        if line.startswith("device_taint_eviction_controller_pod_deletion")
        and ("_total " in line or "_count " in line or "_sum " in line)
    ]


async def event_log(sim: Sim, namespace: str = "default") -> list[tuple[str, str, str]]:
    events = await sim.events("DeviceTaintManagerEviction", namespace)
    return [(e["lastTimestamp"], e["involvedObject"]["name"], e["message"]) for e in events]


def test_degraded_devices_are_drained_when_a_rule_gives_the_taint_an_effect(
    tmp_path: Path,
) -> None:
    """Story "degraded devices": the driver's ``degraded`` taint (effect None) changes
    nothing; a control plane component reacts with a NoExecute DeviceTaintRule per degraded
    device; pods go at the rule's timeAdded plus their claims' tolerationSeconds."""

    async def scenario(sim: Sim) -> None:
        driver = await publish(sim, "node-1")
        degraded = "gpu.example.com/degraded"
        await allocated_claim(sim.client, "trainer-gpu", [("node-1", "gpu-3")])
        await allocated_claim(
            sim.client, "batch-gpu", [("node-1", "gpu-4")], tolerations=[toleration(degraded, 600)]
        )
        await allocated_claim(
            sim.client, "robust-gpu", [("node-1", "gpu-5")], tolerations=[toleration(degraded)]
        )
        for pod, claim in (("trainer", "trainer-gpu"), ("batch", "batch-gpu")):
            await running_pod(sim, pod, claim)
        await running_pod(sim, "robust", "robust-gpu")

        await sim.advance_to(100)
        for device in ("gpu-3", "gpu-4", "gpu-5"):
            await driver.set_health("gpu.example.com", "node-1", device, "degraded")
        await sim.advance(100)
        assert controller(sim).delete_pod_at == {}
        assert [await sim.deletion(p) for p in ("trainer", "batch", "robust")] == [None] * 3

        # t=200: the reaction, one rule per device the driver reports degraded.
        published = await sim.client.get(controller(sim).slices.resource, "node-1-gpu.example.com")
        for device in published["spec"]["devices"]:
            for taint in device.get("taints", []):
                if taint["key"] == degraded:
                    await create_rule(
                        sim,
                        rule(
                            f"degraded-{device['name']}",
                            degraded,
                            "NoExecute",
                            value=taint["value"],
                            pool="node-1",
                            device=device["name"],
                        ),
                    )
        assert await sim.deletion("trainer") == "2026-01-01T00:03:50Z"  # 200 s + 30 s grace
        assert disruption(await sim.pod("trainer")) == {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "DeletionByDeviceTaintManager",
            "message": "Device Taint manager: deleting due to NoExecute taint",
            "lastTransitionTime": "2026-01-01T00:03:20Z",
            "lastProbeTime": None,
        }
        assert controller(sim).scheduled("default", "batch") == at(800)
        assert controller(sim).scheduled("default", "robust") is None
        assert summary(await rule_condition(sim, "degraded-gpu-3")) == (
            "True",
            "PodsPendingEviction",
            "1 pod needs to be evicted in 1 namespace.",
            "2026-01-01T00:03:20Z",
        )
        assert summary(await rule_condition(sim, "degraded-gpu-5")) == (
            "False",
            "NotStarted",
            "",
            "2026-01-01T00:03:20Z",
        )
        await sim.advance_to(210)
        assert summary(await rule_condition(sim, "degraded-gpu-3")) == (
            "False",
            "Completed",
            "1 pod evicted since starting the controller.",
            "2026-01-01T00:03:30Z",
        )

        await sim.advance_to(799.999)
        assert await sim.deletion("batch") is None
        await sim.advance_to(800)
        assert await sim.deletion("batch") == "2026-01-01T00:13:50Z"
        await sim.advance_to(86400)
        assert await sim.deletion("robust") is None
        assert await event_log(sim) == [
            ("2026-01-01T00:03:20Z", "trainer", "Marking for deletion"),
            ("2026-01-01T00:13:20Z", "batch", "Marking for deletion"),
        ]
        assert metrics(sim) == [
            "device_taint_eviction_controller_pod_deletions_total 2.0",
            "device_taint_eviction_controller_pod_deletion_duration_seconds_count 2.0",
            "device_taint_eviction_controller_pod_deletion_duration_seconds_sum 0.0",
        ]

    simulate(tmp_path, scenario, controllers=ONLY)


def test_a_drivers_own_no_execute_taint_counts_from_its_time_added(tmp_path: Path) -> None:
    """A ``failed`` device (the driver's NoExecute taint): pods go at the taint's timeAdded
    plus tolerationSeconds, so a claim allocated later than that is evicted at once."""

    async def scenario(sim: Sim) -> None:
        driver = await publish(sim, "node-1")
        failed = "gpu.example.com/failed"
        await allocated_claim(
            sim.client, "early", [("node-1", "gpu-1")], tolerations=[toleration(failed, 60)]
        )
        await running_pod(sim, "early", "early")
        await sim.advance_to(100)
        await driver.set_health("gpu.example.com", "node-1", "gpu-1", "failed")
        await sim.advance(0)
        assert controller(sim).scheduled("default", "early") == at(160)
        await sim.advance_to(130)
        # Healthy again before the toleration ran out: the deletion is cancelled.
        await driver.set_health("gpu.example.com", "node-1", "gpu-1", "healthy")
        await sim.advance(0)
        assert controller(sim).scheduled("default", "early") is None
        await sim.advance_to(200)
        await driver.set_health("gpu.example.com", "node-1", "gpu-1", "failed")
        await sim.advance_to(400)
        assert await sim.deletion("early") == "2026-01-01T00:04:50Z"  # 260 s + 30 s grace
        # A claim allocated at 400 for a device that failed at 200, tolerated for 60 s.
        await allocated_claim(
            sim.client, "late", [("node-1", "gpu-1")], tolerations=[toleration(failed, 60)]
        )
        await running_pod(sim, "late", "late")
        assert await sim.deletion("late") == "2026-01-01T00:07:10Z"  # at once: 400 + 30
        assert await event_log(sim) == [
            ("2026-01-01T00:02:10Z", "early", "Cancelling deletion"),
            ("2026-01-01T00:04:20Z", "early", "Marking for deletion"),
            ("2026-01-01T00:06:40Z", "late", "Marking for deletion"),
        ]
        assert metrics(sim)[0] == "device_taint_eviction_controller_pod_deletions_total 2.0"
        # Latency is measured from the due instant: 0 s and 140 s (due at 260).
        assert metrics(sim)[2].endswith("_sum 140.0")

    simulate(tmp_path, scenario, controllers=ONLY)


def test_external_health_monitoring_takes_a_device_offline_with_a_rule(tmp_path: Path) -> None:
    """Story "external health monitoring": a monitoring component creates a NoExecute rule
    for one device; the status tracks progress; deleting the rule cancels what is left."""

    async def scenario(sim: Sim) -> None:
        await publish(sim, "node-1")
        unhealthy = "monitor.example.com/unhealthy"
        await allocated_claim(
            sim.client, "job", [("node-1", "gpu-2")], tolerations=[toleration(unhealthy, 30)]
        )
        await allocated_claim(
            sim.client, "service", [("node-1", "gpu-2")], tolerations=[toleration(unhealthy, 3600)]
        )
        await running_pod(sim, "job", "job")
        await running_pod(sim, "service", "service")
        await sim.advance_to(50)
        await create_rule(
            sim, rule("health-node-1-gpu-2", unhealthy, "NoExecute", value="ecc", pool="node-1",
                      device="gpu-2"),
        )  # fmt: skip
        assert controller(sim).scheduled("default", "job") == at(80)
        assert controller(sim).scheduled("default", "service") == at(3650)
        assert summary(await rule_condition(sim, "health-node-1-gpu-2")) == (
            "True",
            "PodsPendingEviction",
            "2 pods need to be evicted in 1 namespace.",
            "2026-01-01T00:00:50Z",
        )
        await sim.advance_to(89)
        assert await sim.deletion("job") == "2026-01-01T00:01:50Z"
        condition = await rule_condition(sim, "health-node-1-gpu-2")
        assert condition is not None
        assert condition["lastTransitionTime"].endswith("00:50Z")
        await sim.advance_to(90)  # 10 s after the eviction
        assert summary(await rule_condition(sim, "health-node-1-gpu-2")) == (
            "True",
            "PodsPendingEviction",
            "1 pod needs to be evicted in 1 namespace. 1 pod evicted since starting the "
            "controller.",
            "2026-01-01T00:01:30Z",
        )
        await sim.advance_to(120)  # the device recovered: the monitor removes its rule
        await sim.client.delete(RULES, "health-node-1-gpu-2")
        await sim.advance(0)
        assert controller(sim).scheduled("default", "service") is None
        await sim.advance_to(4000)
        assert await sim.deletion("service") is None
        assert await event_log(sim) == [
            ("2026-01-01T00:01:20Z", "job", "Marking for deletion"),
            ("2026-01-01T00:02:00Z", "service", "Cancelling deletion"),
        ]

    simulate(tmp_path, scenario, controllers=ONLY)


def test_safe_pod_eviction_none_first_then_no_execute(tmp_path: Path) -> None:
    """Story "safe pod eviction": a rule with effect None reports once what NoExecute would
    do (a too-wide selector shows it), pods keep running; switching the effect to NoExecute
    evicts them at that instant and the status follows until EvictionInProgress=False."""

    async def scenario(sim: Sim) -> None:
        await publish(sim, "node-1", "node-2")
        for namespace in ("team-a", "team-b"):
            await sim.client.create(NAMESPACES, {"metadata": {"name": namespace}})
        for name, namespace, pool, device in (
            ("a1", "team-a", "node-1", "gpu-0"),
            ("a2", "team-a", "node-1", "gpu-1"),
            ("b1", "team-b", "node-1", "gpu-2"),
            ("c1", "team-b", "node-2", "gpu-0"),
        ):
            await allocated_claim(sim.client, name, [(pool, device)], namespace=namespace)
            await running_pod(sim, name, name, node=pool, namespace=namespace)

        await sim.advance_to(10)
        await create_rule(sim, rule("drain-everything", "example.com/drain", "None"))
        assert summary(await rule_condition(sim, "drain-everything")) == (
            "False",
            "NoEffect",
            "16 published devices selected. 4 allocated devices selected. 4 pods would be "
            "evicted in 2 different namespaces" + NOT_AGAIN,
            "2026-01-01T00:00:10Z",
        )
        await sim.client.delete(RULES, "drain-everything")  # too wide: try again
        await sim.advance_to(20)
        created = await create_rule(
            sim, rule("drain-node-1", "example.com/drain", "None", pool="node-1")
        )
        assert created["metadata"]["generation"] == 1
        condition = await rule_condition(sim, "drain-node-1")
        assert condition is not None
        assert condition["observedGeneration"] == 1
        assert summary(condition) == (
            "False",
            "NoEffect",
            "8 published devices selected. 3 allocated devices selected. 3 pods would be "
            "evicted in 2 different namespaces" + NOT_AGAIN,
            "2026-01-01T00:00:20Z",
        )
        await sim.advance_to(3600)  # the report stays, nothing is evicted
        assert controller(sim).delete_pod_at == {}
        assert summary(await rule_condition(sim, "drain-node-1")) == summary(condition)

        patched = await set_effect(sim, "drain-node-1", "NoExecute")
        assert patched["spec"]["taint"]["timeAdded"] == "2026-01-01T01:00:00Z"
        condition = await rule_condition(sim, "drain-node-1")
        assert condition is not None
        assert condition["observedGeneration"] == 2
        assert summary(condition) == (
            "True",
            "PodsPendingEviction",
            "3 pods need to be evicted in 2 different namespaces.",
            "2026-01-01T01:00:00Z",
        )
        for name, namespace in (("a1", "team-a"), ("a2", "team-a"), ("b1", "team-b")):
            assert await sim.deletion(name, namespace) == "2026-01-01T01:00:30Z"
        await sim.advance_to(3609)
        condition = await rule_condition(sim, "drain-node-1")
        assert condition is not None
        assert condition["status"] == "True"
        await sim.advance_to(3610)
        assert summary(await rule_condition(sim, "drain-node-1")) == (
            "False",
            "Completed",
            "3 pods evicted since starting the controller.",
            "2026-01-01T01:00:10Z",
        )
        assert await sim.deletion("c1", "team-b") is None

    simulate(tmp_path, scenario, controllers=ONLY)


def test_maintenance_pods_tolerate_their_own_taint(tmp_path: Path) -> None:
    """Story "maintenance": the admin's rule evicts the workload; the maintenance pod's
    claim tolerates the taint (NoExecute, no seconds) and keeps running. As upstream, only
    tolerations with effect NoExecute count for eviction: one without an effect does not."""

    async def scenario(sim: Sim) -> None:
        await publish(sim, "node-1")
        maintenance = "example.com/maintenance"
        await allocated_claim(sim.client, "workload", [("node-1", "gpu-7")])
        await running_pod(sim, "workload", "workload")
        await sim.advance_to(30)
        await create_rule(
            sim, rule("maintain-gpu-7", maintenance, "NoExecute", pool="node-1", device="gpu-7")
        )
        assert await sim.deletion("workload") == "2026-01-01T00:01:00Z"
        await sim.advance_to(60)
        await allocated_claim(
            sim.client, "firmware", [("node-1", "gpu-7")], tolerations=[toleration(maintenance)]
        )
        await running_pod(sim, "firmware-update", "firmware")
        await allocated_claim(
            sim.client, "sloppy", [("node-1", "gpu-7")],
            tolerations=[toleration(maintenance, effect="")],
        )  # fmt: skip
        await running_pod(sim, "sloppy", "sloppy")
        assert await sim.deletion("sloppy") == "2026-01-01T00:01:30Z"
        await sim.advance_to(86400)
        assert await sim.deletion("firmware-update") is None
        assert summary(await rule_condition(sim, "maintain-gpu-7")) == (
            "False",
            "Completed",
            "2 pods evicted since starting the controller.",
            "2026-01-01T00:01:10Z",
        )

    simulate(tmp_path, scenario, controllers=ONLY)


def test_which_pods_a_claim_evicts(tmp_path: Path) -> None:
    """Pods are evicted through claims they use and are reserved for: a claim generated from
    a template counts only for the pod that owns it; a claim not reserved for a pod, or a
    pod not yet scheduled, is left alone."""

    async def scenario(sim: Sim) -> None:
        await publish(sim, "node-1")
        claim = await allocated_claim(sim.client, "gen-abc", [("node-1", "gpu-1")])
        pod = await sim.create_pod(
            {
                "metadata": {"name": "templated", "namespace": "default"},
                "spec": {
                    "nodeName": "node-1",
                    "containers": [{"name": "c", "image": "cuda"}],
                    "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-tpl"}],
                },
            }
        )
        uid = pod["metadata"]["uid"]
        owner = {"apiVersion": "v1", "kind": "Pod", "name": "templated", "uid": uid}
        await sim.client.patch(
            CLAIMS,
            "gen-abc",
            {"metadata": {"ownerReferences": [{**owner, "controller": True}]}},
            namespace="default",
        )
        reserved = [{"resource": "pods", "name": "templated", "uid": uid}]
        await sim.client.patch(
            CLAIMS,
            "gen-abc",
            {"status": {**claim["status"], "reservedFor": reserved}},
            namespace="default",
            subresource="status",
        )
        await allocated_claim(sim.client, "unreserved", [("node-1", "gpu-1")])
        await sim.create_pod(
            {
                "metadata": {"name": "bystander", "namespace": "default"},
                "spec": {
                    "nodeName": "node-1",
                    "containers": [{"name": "c", "image": "cuda"}],
                    "resourceClaims": [{"name": "gpu", "resourceClaimName": "unreserved"}],
                },
            }
        )
        await sim.advance_to(10)
        await create_rule(sim, rule("broken", "example.com/broken", "NoExecute", device="gpu-1"))
        # The generated claim's name is not in the pod's status yet: not its claim.
        assert controller(sim).scheduled("default", "templated") is None
        await sim.client.patch(
            PODS,
            "templated",
            {
                "status": {
                    "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "gen-abc"}]
                }
            },
            namespace="default",
            subresource="status",
        )
        await sim.advance(0)
        assert await sim.deletion("templated") == "2026-01-01T00:00:40Z"
        await sim.advance_to(100)
        assert await sim.deletion("bystander") is None

    simulate(tmp_path, scenario, controllers=ONLY)
