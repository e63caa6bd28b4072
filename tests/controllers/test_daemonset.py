"""The DaemonSet controller with the scheduler on virtual time: which nodes get a daemon pod,
the pods it writes, events, status, failed-pod replacement and rolling updates."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from taintplane.client import resource
from tests.controllers.harness import NODES, PODS, Sim, simulate
from tests.scheduler.builders import make_node, make_pod, taint

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
    simulate(
        tmp_path,
        scenario,
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


async def add_node(sim: Sim, node: dict[str, Any]) -> None:
    """Create a node and give it exactly its own taints, as once its kubelet reports Ready and
    the node lifecycle controller lifts the ``not-ready:NoSchedule`` taint that admission adds
    (daemon pods do not tolerate that one, as upstream)."""
    await sim.create_node(node)
    await sim.taint(node["metadata"]["name"], (node.get("spec") or {}).get("taints"))


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
        await add_node(sim, make_node("plain"))
        await add_node(
            sim, make_node("notready", taints=[taint("node.kubernetes.io/not-ready", "NoExecute")])
        )
        await add_node(
            sim, make_node("unreach", taints=[taint("node.kubernetes.io/unreachable", "NoExecute")])
        )
        await add_node(
            sim, make_node("memory", taints=[taint("node.kubernetes.io/memory-pressure")])
        )
        await add_node(
            sim,
            make_node(
                "cordoned", unschedulable=True, taints=[taint("node.kubernetes.io/unschedulable")]
            ),
        )
        await add_node(sim, make_node("dedicated", taints=[taint("dedicated", value="db")]))
        await add_node(
            sim, make_node("netdown", taints=[taint("node.kubernetes.io/network-unavailable")])
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


def test_created_pod_carries_tolerations_affinity_owner_and_events(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await add_node(sim, make_node("n1", labels={"disk": "ssd"}))
        await add_node(sim, make_node("n2"))
        own = {"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}
        # A template toleration identical to an automatic one is kept once, in its place.
        same = {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
        }
        affinity = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]},
                    }
                ],
            }
        }
        ds = await create_ds(
            sim, make_ds(tolerations=[own, same], affinity=affinity, hostNetwork=True)
        )
        await sim.advance(1)
        pods = await daemon_pods(sim)
        assert [p["spec"].get("nodeName") for p in pods] == ["n1"]
        pod = pods[0]
        meta = pod["metadata"]
        assert meta["generateName"] == "agent-"
        assert meta["name"].startswith("agent-")
        assert len(meta["name"]) == len("agent-") + 5
        assert meta["ownerReferences"] == [
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "name": "agent",
                "uid": ds["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert meta["labels"]["app"] == "agent"
        assert len(meta["labels"]["controller-revision-hash"]) > 0
        assert pod["spec"]["tolerations"] == [
            own,
            same,
            AUTOMATIC[0],
            *AUTOMATIC[2:],
            {
                "key": "node.kubernetes.io/network-unavailable",
                "operator": "Exists",
                "effect": "NoSchedule",
            },
        ]
        assert pod["spec"]["affinity"] == {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["n1"]}
                            ]
                        }
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": affinity["nodeAffinity"][
                    "preferredDuringSchedulingIgnoredDuringExecution"
                ],
            }
        }
        events = await sim.events("SuccessfulCreate")
        assert [(e["message"], e["type"], e["source"]) for e in events] == [
            (f"Created pod: {meta['name']}", "Normal", {"component": "daemonset-controller"})
        ]
        assert events[0]["involvedObject"]["kind"] == "DaemonSet"
        assert events[0]["involvedObject"]["name"] == "agent"
        scheduled = await sim.events("Scheduled")
        assert [e["message"] for e in scheduled] == [
            f"Successfully assigned default/{meta['name']} to n1"
        ]

    run(tmp_path, scenario)


def test_pods_follow_nodes_added_tainted_and_deleted(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await add_node(sim, make_node("n1"))
        await create_ds(sim, make_ds())
        await sim.advance(1)
        assert list(await placement(sim)) == ["n1"]
        await add_node(sim, make_node("n2"))
        await add_node(sim, make_node("n3", taints=[taint("dedicated")]))
        await sim.advance(1)
        assert sorted(await placement(sim)) == ["n1", "n2"]
        assert (await ds_status(sim))["desiredNumberScheduled"] == 2
        # An untolerated NoSchedule taint keeps a running daemon where it is…
        await sim.taint("n2", [taint("dedicated")])
        await sim.advance(1)
        assert sorted(await placement(sim)) == ["n1", "n2"]
        status = await ds_status(sim)
        assert (status["desiredNumberScheduled"], status["numberMisscheduled"]) == (1, 1)
        # …an untolerated NoExecute taint has the controller delete it.
        n1_pod = (await placement(sim))["n1"]
        await sim.taint("n1", [taint("dedicated", "NoExecute")])
        await sim.advance(1)
        pod = await sim.pod(n1_pod)
        assert pod is not None
        assert pod["metadata"].get("deletionTimestamp")
        deleted = await sim.events("SuccessfulDelete")
        assert [e["message"] for e in deleted] == [f"Deleted pod: {n1_pod}"]
        # Removing the taint brings a new daemon pod (the old one is still terminating).
        await sim.taint("n3", None)
        await sim.advance(1)
        assert "n3" in await placement(sim)
        # A deleted node's pod is the pod garbage collector's: gone after its quarantine.
        n3_pod = (await placement(sim))["n3"]
        assert sim.elapsed < 20
        await sim.client.delete(NODES, "n3")
        # Seen missing by the pass at 20 s, checked again 40 s later.
        await sim.advance_to(59.9)
        assert await sim.pod(n3_pod) is not None
        await sim.advance_to(60)
        assert await sim.pod(n3_pod) is None
        status = await ds_status(sim)
        assert status["desiredNumberScheduled"] == 0
        assert status["numberMisscheduled"] == 2

    run(tmp_path, scenario, ("daemonset-controller", "pod-garbage-collector-controller"))


def test_daemon_pods_survive_an_unreachable_node(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await add_node(sim, make_node("n1"))
        await create_ds(sim, make_ds())
        await sim.create_pod(make_pod("web", node_name="n1"))
        await sim.advance(1)
        daemon = (await placement(sim))["n1"]
        await sim.taint("n1", [taint("node.kubernetes.io/unreachable", "NoExecute")])
        await sim.advance(3600)
        pod = await sim.pod(daemon)
        assert pod is not None
        assert not pod["metadata"].get("deletionTimestamp")
        assert await sim.deletion("web") is not None  # a plain pod is evicted at once
        marked = await sim.events("TaintManagerEviction")
        assert [e["message"] for e in marked] == ["Marking for deletion Pod default/web"]
        assert await sim.events("SuccessfulDelete") == []
        assert (await ds_status(sim))["currentNumberScheduled"] == 1

    run(tmp_path, scenario, ("daemonset-controller", "taint-eviction-controller"))


async def set_phase(sim: Sim, name: str, phase: str, *, ready: bool = False) -> None:
    status: dict[str, Any] = {"phase": phase}
    if ready:
        status["conditions"] = [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        ]
    await sim.client.patch(
        PODS,
        name,
        {"status": status},
        namespace="default",
        patch_type="strategic",
        subresource="status",
    )
    await sim.advance(0)


def test_failed_daemon_pod_is_replaced_with_backoff(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await add_node(sim, make_node("n1"))
        await create_ds(sim, make_ds(terminationGracePeriodSeconds=0))
        await sim.advance_to(10)
        first = (await placement(sim))["n1"]
        await set_phase(sim, first, "Failed")
        await sim.advance(0)
        assert await sim.pod(first) is None
        second = (await placement(sim))["n1"]
        assert second != first
        failed = await sim.events("FailedDaemonPod")
        assert [(e["type"], e["message"]) for e in failed] == [
            ("Warning", f"Found failed daemon pod default/{first} on node n1, will try to kill it")
        ]
        # Failing again at once: the next kill waits out the backoff (1 s, then 2 s, …).
        await set_phase(sim, second, "Failed")
        await sim.advance_to(10.999)
        assert await sim.pod(second) is not None
        await sim.advance_to(11)
        assert await sim.pod(second) is None
        third = (await placement(sim))["n1"]
        await set_phase(sim, third, "Failed")
        await sim.advance_to(12.999)
        assert await sim.pod(third) is not None
        await sim.advance_to(13)
        assert await sim.pod(third) is None
        assert len(await placement(sim)) == 1

    run(tmp_path, scenario)


def test_rolling_update_replaces_one_pod_at_a_time(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        for name in ("n1", "n2", "n3"):
            await add_node(sim, make_node(name))
        await create_ds(sim, make_ds(terminationGracePeriodSeconds=0))
        await sim.advance(1)
        old = await placement(sim)
        for pod in old.values():
            await set_phase(sim, pod, "Running", ready=True)
        await sim.advance(1)
        status = await ds_status(sim)
        assert (status["numberReady"], status["numberAvailable"]) == (3, 3)
        ds = await sim.client.get(DAEMONSETS, "agent", "default")
        ds["spec"]["template"]["spec"]["containers"][0]["image"] = "agent:2"
        await sim.client.update(DAEMONSETS, ds)
        for step in range(1, 4):
            await sim.advance(1)
            now = await placement(sim)
            replaced = [node for node in now if now[node] != old[node]]
            assert len(replaced) == step, (step, now, old)
            status = await ds_status(sim)
            assert status["updatedNumberScheduled"] == step
            assert status["observedGeneration"] == 2
            for node in replaced:
                await set_phase(sim, now[node], "Running", ready=True)
        await sim.advance(1)
        status = await ds_status(sim)
        assert (status["updatedNumberScheduled"], status["numberAvailable"]) == (3, 3)
        images = {p["spec"]["containers"][0]["image"] for p in await daemon_pods(sim)}
        assert images == {"agent:2"}

    run(tmp_path, scenario)
