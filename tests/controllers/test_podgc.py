"""The pod garbage collector on virtual time: orphans after the quarantine with the exact
condition, the terminated-pod threshold, terminating pods on out-of-service nodes and
unscheduled terminating pods."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from prometheus_client import generate_latest

from taintplane.controllers.podgc import PodGCController
from tests.controllers.harness import NODES, PODS, Sim, at, simulate
from tests.scheduler.builders import make_node, make_pod

ONLY = ("pod-garbage-collector-controller",)
KEEP = "example.com/keep"  # a finalizer, so a deleted pod can still be read


def run(tmp_path: Path, scenario: Callable[[Sim], Awaitable[None]]) -> None:
    simulate(tmp_path, scenario, controllers=ONLY)


def controller(sim: Sim) -> PodGCController:
    manager = sim.cluster.controller_manager
    assert manager is not None
    found = manager.controllers["pod-garbage-collector-controller"]
    assert isinstance(found, PodGCController)
    return found


def kept(pod: dict[str, Any]) -> dict[str, Any]:
    pod["metadata"]["finalizers"] = [KEEP]
    return pod


async def set_status(sim: Sim, name: str, status: dict[str, Any]) -> None:
    await sim.client.patch(
        PODS, name, {"status": status}, namespace="default", subresource="status"
    )


def test_orphan_is_failed_marked_and_force_deleted_after_quarantine(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_node(make_node("n1"))
        await sim.create_node(make_node("n2"))
        await sim.create_pod(kept(make_pod("orphan", node_name="n1")))
        await sim.create_pod(make_pod("plain", node_name="n1"))
        await sim.create_pod(make_pod("safe", node_name="n2"))
        await set_status(sim, "orphan", {"phase": "Running"})
        await sim.advance_to(25)
        await sim.client.delete(NODES, "n1")
        # The pass at 40 s finds n1 missing and quarantines it until 80 s.
        await sim.advance_to(79.999)
        pod = await sim.pod("orphan")
        assert pod is not None
        assert not pod["metadata"].get("deletionTimestamp")
        assert controller(sim).quarantine == {"n1": at(80)}
        await sim.advance_to(80)
        assert await sim.pod("plain") is None  # grace period 0: gone at once
        assert await sim.pod("safe") is not None
        pod = await sim.pod("orphan")
        assert pod is not None
        assert pod["metadata"]["deletionTimestamp"] == "2026-01-01T00:01:20Z"
        assert pod["metadata"]["deletionGracePeriodSeconds"] == 0
        assert pod["status"]["phase"] == "Failed"
        assert pod["status"]["conditions"] == [
            {
                "type": "DisruptionTarget",
                "status": "True",
                "lastTransitionTime": "2026-01-01T00:01:20Z",
                "reason": "DeletionByPodGC",
                "message": "PodGC: node no longer exists",
                "observedGeneration": 1,  # the pod's generation, PodObservedGenerationTracking
                "lastProbeTime": None,
            }
        ]
        manager = sim.cluster.controller_manager
        assert manager is not None
        metrics = generate_latest(manager.registry).decode()
        assert (
            'pod_gc_collector_force_delete_pods_total{namespace="default",reason="orphaned"} 2.0'
            in metrics
        )

    run(tmp_path, scenario)


def test_node_back_before_the_quarantine_ends_keeps_its_pods(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_node(make_node("n1"))
        await sim.create_pod(make_pod("web", node_name="n1"))
        await sim.advance_to(5)
        await sim.client.delete(NODES, "n1")
        await sim.advance_to(30)
        await sim.create_node(make_node("n1"))
        await sim.advance_to(300)
        assert await sim.deletion("web") is None

    run(tmp_path, scenario)


def test_terminated_pods_beyond_the_threshold_go_evicted_then_oldest(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        controller(sim).threshold = 2
        await sim.create_node(make_node("n1"))
        for i, name in enumerate(("a", "b", "c", "d")):
            await sim.advance_to(i + 1)
            await sim.create_pod(make_pod(name, node_name="n1"))
            await set_status(sim, name, {"phase": "Succeeded"})
        await set_status(sim, "d", {"phase": "Failed", "reason": "Evicted"})
        await sim.create_pod(make_pod("running", node_name="n1"))
        await set_status(sim, "running", {"phase": "Running"})
        await sim.advance_to(20)
        remaining = sorted(
            p["metadata"]["name"] for p in (await sim.client.list(PODS, "default"))[0]
        )
        assert remaining == ["b", "c", "running"]

    run(tmp_path, scenario)


def test_unscheduled_terminating_pod_is_failed_and_force_deleted(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_pod(kept(make_pod("pending")))
        await sim.advance_to(1)
        await sim.client.delete(PODS, "pending", "default")
        pod = await sim.pod("pending")  # unscheduled: the API server gives it no grace
        assert pod is not None
        assert pod["status"].get("phase") != "Failed"
        await sim.advance_to(19.9)
        assert (await sim.pod("pending") or {})["status"].get("phase") != "Failed"
        await sim.advance_to(20)
        pod = await sim.pod("pending")
        assert pod is not None
        assert pod["status"]["phase"] == "Failed"
        assert "conditions" not in pod["status"] or not any(
            c["type"] == "DisruptionTarget" for c in pod["status"]["conditions"]
        )

    run(tmp_path, scenario)


def test_terminating_pods_on_a_not_ready_out_of_service_node_are_force_deleted(
    tmp_path: Path,
) -> None:
    out_of_service = [
        {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}
    ]

    async def scenario(sim: Sim) -> None:
        await sim.create_node(make_node("down", taints=out_of_service))  # no Ready condition
        ready = make_node("ready", taints=out_of_service)
        ready["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
        await sim.create_node(ready)
        await sim.create_node(make_node("untainted"))
        for node in ("down", "ready", "untainted"):
            await sim.create_pod(kept(make_pod(f"on-{node}", node_name=node)))
            await set_status(sim, f"on-{node}", {"phase": "Running"})
        await sim.create_pod(kept(make_pod("running-on-down", node_name="down")))
        await sim.advance_to(1)
        for node in ("down", "ready", "untainted"):
            await sim.client.delete(PODS, f"on-{node}", "default")
        await sim.advance_to(19.9)
        assert (await sim.pod("on-down") or {})["status"]["phase"] == "Running"
        await sim.advance_to(20)
        pod = await sim.pod("on-down")
        assert pod is not None
        assert pod["status"]["phase"] == "Failed"
        assert pod["metadata"]["deletionGracePeriodSeconds"] == 0
        for name in ("on-ready", "on-untainted"):
            pod = await sim.pod(name)
            assert pod is not None
            assert pod["metadata"]["deletionGracePeriodSeconds"] == 30
        assert await sim.deletion("running-on-down") is None  # not terminating: left alone

    run(tmp_path, scenario)
