"""The DaemonSet controller with the scheduler on virtual time: which nodes get a daemon pod,
the pods it writes, events, status, failed-pod replacement and rolling updates."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from taintplane.client import resource
from tests.controllers.harness import PODS, Sim, simulate
from tests.controllers.quiet import track_thread_reads
from tests.scheduler.builders import make_node, taint

DAEMONSETS = resource("apps", "v1", "daemonsets")
DS_ONLY = ("daemonset-controller",)

AUTOMATIC = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]


def run(
    tmp_path: Path,
    scenario: Callable[[Sim], Awaitable[None]],
    controllers: tuple[str, ...] = DS_ONLY,
) -> None:
    async def quiet_scenario(sim: Sim) -> None:
        track_thread_reads(sim.clock)
        await scenario(sim)

    simulate(
        tmp_path,
        quiet_scenario,
        components=("scheduler", "controller-manager"),
        controllers=controllers,
    )


def make_ds(name: str = "agent", **spec: Any) -> dict[str, Any]:
    template_spec = {"containers": [{"name": "c", "image": "agent:1"}], **spec}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": template_spec},
        },
    }


async def create_ds(sim: Sim, ds: dict[str, Any]) -> dict[str, Any]:
    created = await sim.client.create(DAEMONSETS, ds, namespace="default")
    await sim.advance(0)
    return created


async def daemon_pods(sim: Sim, app: str = "agent") -> list[dict[str, Any]]:
    items, _ = await sim.client.list(PODS, "default", label_selector=f"app={app}")
    return sorted(items, key=lambda p: p["spec"].get("nodeName") or "")


async def placement(sim: Sim, app: str = "agent") -> dict[str, str]:
    """node -> pod name, for bound pods that are not terminating."""
    return {
        p["spec"]["nodeName"]: p["metadata"]["name"]
        for p in await daemon_pods(sim, app)
        if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")
    }


async def ds_status(sim: Sim, name: str = "agent") -> dict[str, Any]:
    ds = await sim.client.get(DAEMONSETS, name, "default")
    return dict(ds.get("status") or {})


def test_one_pod_per_node_including_automatically_tolerated_taints(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_node(make_node("plain"))
        await sim.create_node(
            make_node("notready", taints=[taint("node.kubernetes.io/not-ready", "NoExecute")])
        )
        await sim.create_node(
            make_node("unreach", taints=[taint("node.kubernetes.io/unreachable", "NoExecute")])
        )
        await sim.create_node(
            make_node("memory", taints=[taint("node.kubernetes.io/memory-pressure")])
        )
        await sim.create_node(
            make_node(
                "cordoned", unschedulable=True, taints=[taint("node.kubernetes.io/unschedulable")]
            )
        )
        await sim.create_node(make_node("dedicated", taints=[taint("dedicated", value="db")]))
        await sim.create_node(
            make_node("netdown", taints=[taint("node.kubernetes.io/network-unavailable")])
        )
        await create_ds(sim, make_ds())
        await sim.advance(1)
        assert sorted(await placement(sim)) == [
            "cordoned",
            "memory",
            "notready",
            "plain",
            "unreach",
        ]
        status = await ds_status(sim)
        assert status["desiredNumberScheduled"] == 5
        assert status["currentNumberScheduled"] == 5
        assert status["numberMisscheduled"] == 0
        assert status["numberReady"] == 0
        assert status["numberUnavailable"] == 5
        assert status["updatedNumberScheduled"] == 5
        assert status["observedGeneration"] == 1

    run(tmp_path, scenario)
