"""Whole-cluster stories on virtual time: a node dies and its ReplicaSet pods come back
elsewhere while DaemonSet pods stay; zone-aware rate limits on NoExecute tainting; the
kubelet refusing pods that do not tolerate its node's NoExecute taints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from taintplane.agents.nodes import NodeShape
from taintplane.client import resource
from taintplane.controllers.manager import ControllerConfig
from taintplane.controllers.nodelifecycle import NodeLifecycleConfig
from tests.controllers.harness import Sim, simulate
from tests.controllers.workload_builders import make_daemonset
from tests.scheduler.builders import make_pod

REPLICASETS = resource("apps", "v1", "replicasets")
DAEMONSETS = resource("apps", "v1", "daemonsets")
EVERYTHING = ("scheduler", "controller-manager", "agents")


def replicaset(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


async def pods_by_node(sim: Sim, app: str) -> dict[str, list[str]]:
    items, _ = await sim.client.list(
        resource("", "v1", "pods"), "default", label_selector=f"app={app}"
    )
    placed: dict[str, list[str]] = {}
    for pod in items:
        state = (
            "Terminating"
            if pod["metadata"].get("deletionTimestamp")
            else pod["status"].get("phase", "")
        )
        placed.setdefault(pod["spec"].get("nodeName", ""), []).append(state)
    return {node: sorted(states) for node, states in sorted(placed.items())}


def test_a_dead_nodes_replicaset_pods_come_back_elsewhere_and_daemons_stay(
    tmp_path: Path,
) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.client.create(REPLICASETS, replicaset("web", 6), namespace="default")
        await sim.client.create(DAEMONSETS, make_daemonset("agent"), namespace="default")
        await sim.advance(1)
        # Every web pod runs and every node has some. Not always two each: the DaemonSet's
        # pods are created in the same instant, and when one lands before the last web pods
        # are placed, its node looks as full as the others and a tie (broken at random, as
        # upstream does) can give a 1/2/3 spread — seen under CPU load, which changes which
        # controller's pods reach the scheduler first.
        before = await pods_by_node(sim, "web")
        assert sorted(before) == ["node-1", "node-2", "node-3"]
        assert [s for states in before.values() for s in states] == ["Running"] * 6
        on_node_1 = len(before["node-1"])
        assert await pods_by_node(sim, "agent") == {
            "node-1": ["Running"],
            "node-2": ["Running"],
            "node-3": ["Running"],
        }
        web = (
            await sim.client.list(resource("", "v1", "pods"), "default", label_selector="app=web")
        )[0][0]
        # DefaultTolerationSeconds gave every pod 300 s on not-ready and unreachable nodes.
        assert web["spec"]["tolerations"][-1] == {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        }
        await sim.advance_to(12)
        sim.kubelets.stop("node-1")
        await sim.advance_to(369)
        assert (await pods_by_node(sim, "web"))["node-1"] == ["Running"] * on_node_1
        await sim.advance_to(370)
        # Evicted at 70 s + 300 s; the silent kubelet cannot finish them, so they stay
        # Terminating, and the ReplicaSet has already replaced them on healthy nodes.
        placed = await pods_by_node(sim, "web")
        assert placed["node-1"] == ["Terminating"] * on_node_1
        assert sum(len(v) for k, v in placed.items() if k != "node-1") == 6
        assert all(s == "Running" for k, v in placed.items() if k != "node-1" for s in v)
        # The daemon's pod tolerates unreachable forever: it stays.
        await sim.advance_to(2000)
        assert await pods_by_node(sim, "agent") == {
            "node-1": ["Running"],
            "node-2": ["Running"],
            "node-3": ["Running"],
        }

    simulate(
        tmp_path,
        scenario,
        components=EVERYTHING,
        nodes=[NodeShape(f"node-{i}") for i in (1, 2, 3)],
    )


def zoned(zone: str, count: int) -> list[NodeShape]:
    return [NodeShape(f"{zone}-{i}", zone=zone) for i in range(1, count + 1)]


async def no_execute_added(sim: Sim, names: list[str]) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in names:
        taints = await sim.node_taints(name)
        stamps = [t.get("timeAdded") for t in taints if t["effect"] == "NoExecute"]
        found[name] = stamps[0] if stamps else None
    return found


LIFECYCLE = ("node-lifecycle-controller",)


def test_a_healthy_zone_is_tainted_at_point_one_node_per_second(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.advance_to(12)
        for name in ("a-1", "a-2"):
            sim.kubelets.stop(name)
        await sim.advance_to(200)
        assert await no_execute_added(sim, ["a-1", "a-2", "a-3"]) == {
            "a-1": "2026-01-01T00:01:10Z",
            "a-2": "2026-01-01T00:01:20Z",
            "a-3": None,
        }

    simulate(
        tmp_path,
        scenario,
        components=("controller-manager", "agents"),
        controllers=LIFECYCLE,
        nodes=zoned("a", 6),
    )


def test_a_partially_disrupted_small_zone_is_not_tainted(tmp_path: Path) -> None:
    """Three of four nodes down (75 % ≥ 55 %, more than two): a zone of at most 50 nodes
    stops NoExecute tainting altogether; the healthy zone keeps the cluster out of full
    disruption."""

    async def scenario(sim: Sim) -> None:
        await sim.advance_to(12)
        for name in ("a-1", "a-2", "a-3"):
            sim.kubelets.stop(name)
        await sim.advance_to(1000)
        assert await no_execute_added(sim, ["a-1", "a-2", "a-3", "a-4"]) == {
            "a-1": None,
            "a-2": None,
            "a-3": None,
            "a-4": None,
        }
        ready = await sim.node_condition("a-1", "Ready")
        assert ready is not None
        assert ready["status"] == "Unknown"

    simulate(
        tmp_path,
        scenario,
        components=("controller-manager", "agents"),
        controllers=LIFECYCLE,
        nodes=zoned("a", 4) + zoned("b", 2),
    )


def test_a_partially_disrupted_large_zone_is_tainted_at_the_secondary_rate(
    tmp_path: Path,
) -> None:
    """With --large-cluster-size-threshold=3 the four-node zone counts as large: 0.01 nodes
    per second, so one NoExecute taint every 100 s."""

    async def scenario(sim: Sim) -> None:
        await sim.advance_to(12)
        for name in ("a-1", "a-2", "a-3"):
            sim.kubelets.stop(name)
        await sim.advance_to(400)
        assert await no_execute_added(sim, ["a-1", "a-2", "a-3", "a-4"]) == {
            "a-1": "2026-01-01T00:01:10Z",
            "a-2": "2026-01-01T00:02:50Z",
            "a-3": "2026-01-01T00:04:30Z",
            "a-4": None,
        }

    simulate(
        tmp_path,
        scenario,
        components=("controller-manager", "agents"),
        controllers=LIFECYCLE,
        nodes=zoned("a", 4) + zoned("b", 2),
        controller_config=ControllerConfig(
            node_lifecycle=NodeLifecycleConfig(large_cluster_size_threshold=3)
        ),
    )


def test_the_kubelet_refuses_a_pod_that_does_not_tolerate_its_no_execute_taint(
    tmp_path: Path,
) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.taint("node-1", [{"key": "maintenance", "effect": "NoExecute"}])
        await sim.create_pod(make_pod("intruder", node_name="node-1"))
        static_pod = make_pod("static", node_name="node-1")
        static_pod["metadata"]["annotations"] = {"kubernetes.io/config.source": "file"}
        await sim.create_pod(static_pod)
        pod = await sim.pod("intruder")
        assert pod is not None
        assert {k: pod["status"].get(k) for k in ("phase", "reason", "message")} == {
            "phase": "Failed",
            "reason": "TaintToleration",
            "message": "Pod was rejected: Predicate TaintToleration failed: node(s) had "
            "taints that the pod didn't tolerate",
        }
        events = await sim.events("TaintToleration")
        assert [(e["type"], e["message"], e["source"]) for e in events] == [
            (
                "Warning",
                "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
                {"component": "kubelet", "host": "node-1"},
            )
        ]
        static = await sim.pod("static")
        assert static is not None
        assert static["status"]["phase"] == "Running"

    simulate(tmp_path, scenario, components=("agents",), nodes=[NodeShape("node-1")])
