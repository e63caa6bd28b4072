"""Nodes that fail and recover, with simulated kubelets and the node lifecycle controller, on
virtual time: the exact instants of Unknown, the taints, and the evictions that follow."""

from __future__ import annotations

from pathlib import Path

from taintplane.agents.nodes import NodeShape
from tests.controllers.harness import Sim, simulate
from tests.scheduler.builders import make_pod

AGENTS = ("controller-manager", "agents")
LIFECYCLE = ("node-lifecycle-controller", "taint-eviction-controller")


def unreachable_toleration(seconds: int) -> list[dict[str, object]]:
    return [
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": seconds,
        }
    ]


def shapes(count: int, zone: str = "") -> list[NodeShape]:
    return [NodeShape(f"node-{i}", zone=zone) for i in range(1, count + 1)]


def test_registered_nodes_become_ready_and_lose_the_not_ready_taint(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        node = await sim.node("node-1")
        ready = await sim.node_condition("node-1", "Ready")
        assert ready is not None
        assert (ready["status"], ready["reason"], ready["message"]) == (
            "True",
            "KubeletReady",
            "kubelet is posting ready status",
        )
        assert [c["type"] for c in node["status"]["conditions"]] == [
            "MemoryPressure",
            "DiskPressure",
            "PIDPressure",
            "Ready",
        ]
        labels = node["metadata"]["labels"]
        assert labels["kubernetes.io/hostname"] == "node-1"
        assert labels["kubernetes.io/os"] == "linux"
        assert await sim.node_taints("node-1") == []
        lease = await sim.client.get(
            __import__("taintplane.client", fromlist=["resource"]).resource(
                "coordination.k8s.io", "v1", "leases"
            ),
            "node-1",
            "kube-node-lease",
        )
        assert lease["spec"]["holderIdentity"] == "node-1"
        assert lease["spec"]["leaseDurationSeconds"] == 40
        await sim.advance_to(30)
        lease = await sim.client.get(
            __import__("taintplane.client", fromlist=["resource"]).resource(
                "coordination.k8s.io", "v1", "leases"
            ),
            "node-1",
            "kube-node-lease",
        )
        assert lease["spec"]["renewTime"] == "2026-01-01T00:00:30.000000Z"

    simulate(tmp_path, scenario, components=AGENTS, controllers=LIFECYCLE, nodes=shapes(1))


def test_a_starting_kubelet_tells_about_itself_as_upstreams_does(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.advance(0)
        expected = {
            "Starting": "Starting kubelet.",
            "NodeAllocatableEnforced": "Updated Node Allocatable limit across pods",
            "NodeHasSufficientMemory": "Node node-1 status is now: NodeHasSufficientMemory",
            "NodeHasNoDiskPressure": "Node node-1 status is now: NodeHasNoDiskPressure",
            "NodeHasSufficientPID": "Node node-1 status is now: NodeHasSufficientPID",
        }
        for reason, message in expected.items():
            [event] = await sim.events(reason)
            assert event["message"] == message
            assert event["type"] == "Normal"
            assert event["source"] == {"component": "kubelet", "host": "node-1"}
            # The kubelet names its node by name in place of the uid (kubectl describe node
            # looks under both).
            assert event["involvedObject"] == {"kind": "Node", "name": "node-1", "uid": "node-1"}
        # The first Ready is no event; only a change of it is.
        assert await sim.events("NodeReady") == []
        await sim.kubelets.set_condition("node-1", "MemoryPressure", "True")
        await sim.advance(0)
        [pressure] = await sim.events("NodeHasInsufficientMemory")
        assert pressure["message"] == "Node node-1 status is now: NodeHasInsufficientMemory"

    simulate(tmp_path, scenario, components=AGENTS, controllers=LIFECYCLE, nodes=shapes(1))


def test_a_silent_node_goes_unknown_then_unreachable_and_its_pods_are_evicted(
    tmp_path: Path,
) -> None:
    """Last lease renewal seen at 10 s; silent from 12 s. Grace 50 s: the first review after
    60 s (65 s) marks it Unknown; the next (70 s) queues it and it is tainted at once
    (the zone's bucket is full); a 300 s toleration evicts at 370 s."""

    async def scenario(sim: Sim) -> None:
        await sim.create_pod(
            make_pod("web", node_name="node-1", tolerations=unreachable_toleration(300))
        )
        await sim.create_pod(make_pod("plain", node_name="node-2"))
        await sim.advance_to(12)
        sim.kubelets.stop("node-1")
        await sim.advance_to(64.9)
        ready = await sim.node_condition("node-1", "Ready")
        assert ready is not None
        assert ready["status"] == "True"
        await sim.advance_to(65)
        ready = await sim.node_condition("node-1", "Ready")
        assert ready is not None
        assert (ready["status"], ready["reason"], ready["message"]) == (
            "Unknown",
            "NodeStatusUnknown",
            "Kubelet stopped posting node status.",
        )
        assert ready["lastTransitionTime"] == "2026-01-01T00:01:05Z"
        for pressure in ("MemoryPressure", "DiskPressure", "PIDPressure"):
            found = await sim.node_condition("node-1", pressure)
            assert found is not None
            assert found["status"] == "Unknown"
        assert await sim.node_taints("node-1") == [
            {
                "key": "node.kubernetes.io/unreachable",
                "effect": "NoSchedule",
                "timeAdded": "2026-01-01T00:01:05Z",
            }
        ]
        await sim.advance_to(69.9)
        assert len(await sim.node_taints("node-1")) == 1
        await sim.advance_to(70)
        assert (await sim.node_taints("node-1"))[1] == {
            "key": "node.kubernetes.io/unreachable",
            "effect": "NoExecute",
            "timeAdded": "2026-01-01T00:01:10Z",
        }
        web = await sim.pod("web")
        assert web is not None
        ready_pod = [c for c in web["status"]["conditions"] if c["type"] == "Ready"]
        assert ready_pod[0]["status"] == "False"
        await sim.advance_to(369.9)
        assert await sim.deletion("web") is None
        await sim.advance_to(370)
        assert await sim.deletion("web") == "2026-01-01T00:06:40Z"
        # The healthy node's pods are untouched.
        assert await sim.deletion("plain") is None
        # The kubelet is silent: the pod stays Terminating.
        await sim.advance_to(1000)
        assert await sim.deletion("web") == "2026-01-01T00:06:40Z"
        events = await sim.events("NodeNotReady")
        assert [(e["involvedObject"]["kind"], e["message"]) for e in events] == [
            ("Node", "Node node-1 status is now: NodeNotReady"),
            ("Pod", "Node is not ready"),
        ]

    simulate(tmp_path, scenario, components=AGENTS, controllers=LIFECYCLE, nodes=shapes(2))


def test_a_node_that_comes_back_loses_its_taints_and_keeps_its_pods(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_pod(
            make_pod("web", node_name="node-1", tolerations=unreachable_toleration(300))
        )
        await sim.advance_to(12)
        sim.kubelets.stop("node-1")
        await sim.advance_to(100)
        assert len(await sim.node_taints("node-1")) == 2
        await sim.kubelets.start("node-1")
        await sim.advance(0)
        ready = await sim.node_condition("node-1", "Ready")
        assert ready is not None
        assert ready["status"] == "True"
        # The next review (105 s) sees Ready and lifts the NoExecute taint; the NoSchedule
        # one follows the condition at once.
        await sim.advance_to(105)
        assert await sim.node_taints("node-1") == []
        await sim.advance_to(1000)
        assert await sim.deletion("web") is None

    simulate(tmp_path, scenario, components=AGENTS, controllers=LIFECYCLE, nodes=shapes(2))


def test_a_whole_cluster_outage_evicts_nothing(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        for i in (1, 2, 3):
            await sim.create_pod(make_pod(f"p{i}", node_name=f"node-{i}"))
        await sim.advance_to(12)
        for i in (1, 2, 3):
            sim.kubelets.stop(f"node-{i}")
        await sim.advance_to(2000)
        for i in (1, 2, 3):
            ready = await sim.node_condition(f"node-{i}", "Ready")
            assert ready is not None
            assert ready["status"] == "Unknown"
            assert all(t["effect"] != "NoExecute" for t in await sim.node_taints(f"node-{i}"))
            assert await sim.deletion(f"p{i}") is None

    simulate(tmp_path, scenario, components=AGENTS, controllers=LIFECYCLE, nodes=shapes(3))


async def no_execute_taints(sim: Sim, node: str) -> list[tuple[str, str]]:
    return [
        (t["key"], t["timeAdded"])
        for t in await sim.node_taints(node)
        if t["effect"] == "NoExecute"
    ]


def test_nodes_excluded_from_disruption_checks_are_still_tainted(tmp_path: Path) -> None:
    """Upstream's TestTaintBasedEvictions: every node of the zone carries
    ``node.kubernetes.io/exclude-disruption``, so the zone has no state after a review, but
    its tainting queue stays and gets a full bucket at ``--node-eviction-rate`` on each
    review: one node is tainted per review (5 s)."""
    excluded = {"node.kubernetes.io/exclude-disruption": ""}
    nodes = [NodeShape(f"tn-{i}", labels=excluded, zone="zone1") for i in range(3)]
    not_ready = "node.kubernetes.io/not-ready"

    async def scenario(sim: Sim) -> None:
        await sim.advance_to(12)
        await sim.kubelets.set_condition("tn-1", "Ready", "False")
        await sim.kubelets.set_condition("tn-2", "Ready", "False")
        # The review at 15 s is the first to observe Ready=False.
        await sim.advance_to(14.9)
        assert await no_execute_taints(sim, "tn-1") == []
        await sim.advance_to(15)
        assert await no_execute_taints(sim, "tn-1") == [(not_ready, "2026-01-01T00:00:15Z")]
        assert await no_execute_taints(sim, "tn-2") == []
        await sim.advance_to(20)
        assert await no_execute_taints(sim, "tn-2") == [(not_ready, "2026-01-01T00:00:20Z")]
        await sim.advance_to(100)
        assert await no_execute_taints(sim, "tn-0") == []
        assert await no_execute_taints(sim, "tn-1") == [(not_ready, "2026-01-01T00:00:15Z")]

    simulate(tmp_path, scenario, components=AGENTS, controllers=LIFECYCLE, nodes=nodes)
