"""Finished pods (Succeeded or Failed) hold no room on their node, as upstream's scheduler: its
pod informer watches with ``status.phase!=Succeeded,status.phase!=Failed``, so a pod that
finishes leaves the cache as a delete (AssignedPodDelete) and a finished one is never counted;
the kubelet's admission counts only its active pods. On virtual time, at exact instants."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from taintplane.agents.nodes import NodeShape
from taintplane.client import resource
from taintplane.scheduler.scheduler import Scheduler
from tests.controllers.harness import Sim, simulate
from tests.scheduler.builders import make_node, make_pod

PODS = resource("", "v1", "pods")

TOO_MANY_PODS = (
    "0/1 nodes are available: 1 Too many pods. no new claims to deallocate, preemption: 0/1 nodes are available: "
    "1 No preemption victims found for incoming pod."
)
PORTS_TAKEN = (
    "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports. no new claims to deallocate, "
    "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
)


def two_pod_node() -> list[NodeShape]:
    return [NodeShape("node-1", capacity={"cpu": "4", "memory": "8Gi", "pods": "2"})]


def scheduled(pod: dict[str, Any]) -> tuple[str, str, str | None]:
    condition = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
    return condition["status"], condition["lastTransitionTime"], condition.get("message")


def cached_pods(sim: Sim, node: str = "node-1") -> list[str]:
    scheduler = sim.cluster.scheduler
    assert scheduler is not None
    return sorted(scheduler.nodes[node].pods)


def test_a_pod_failed_by_its_deadline_frees_its_place_at_once(tmp_path: Path) -> None:
    """The reported repro: a node with room for two pods runs ``a`` (5 s active deadline) and
    ``b``; ``c`` waits, Too many pods, until ``a`` fails, then is bound at that instant (the
    AssignedPodDelete its finishing is, not the five-minute flush) and admitted by the kubelet
    next to the failed pod."""

    async def scenario(sim: Sim) -> None:
        await sim.create_pod(make_pod("a", activeDeadlineSeconds=5))
        await sim.create_pod(make_pod("b"))
        await sim.create_pod(make_pod("c"))
        pending = await sim.pod("c")
        assert pending is not None
        assert scheduled(pending) == ("False", "2026-01-01T00:00:00Z", TOO_MANY_PODS)
        assert cached_pods(sim) == ["default/a", "default/b"]

        await sim.advance_to(4.9)
        still = await sim.pod("c")
        assert still is not None
        assert not still["spec"].get("nodeName")

        await sim.advance_to(5)
        failed = await sim.pod("a")
        assert failed is not None
        assert (failed["status"]["phase"], failed["status"]["reason"]) == (
            "Failed",
            "DeadlineExceeded",
        )
        assert cached_pods(sim) == ["default/b", "default/c"]
        placed = await sim.pod("c")
        assert placed is not None
        assert placed["spec"]["nodeName"] == "node-1"
        assert scheduled(placed)[:2] == ("True", "2026-01-01T00:00:05Z")
        assert placed["status"]["phase"] == "Running"

        await sim.advance(300)
        assert [(await sim.pod(n) or {})["status"]["phase"] for n in "abc"] == [
            "Failed",
            "Running",
            "Running",
        ]
        assert await sim.events("OutOfpods") == []

    simulate(
        tmp_path,
        scenario,
        components=("scheduler", "controller-manager", "agents"),
        nodes=two_pod_node(),
    )


def test_a_finished_pod_kept_by_a_finalizer_holds_no_room(tmp_path: Path) -> None:
    """Deleted, its containers exit 0 and it reports Succeeded, yet a finalizer keeps the
    object: the scheduler and the kubelet both count it out."""

    async def scenario(sim: Sim) -> None:
        kept = make_pod("a")
        kept["metadata"]["finalizers"] = ["example.com/keep"]
        await sim.create_pod(kept)
        await sim.create_pod(make_pod("b"))
        await sim.advance_to(10)
        await sim.client.delete(PODS, "a", "default")
        await sim.advance(0)
        finished = await sim.pod("a")
        assert finished is not None
        assert finished["status"]["phase"] == "Succeeded"
        assert finished["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:10Z"
        assert cached_pods(sim) == ["default/b"]

        await sim.create_pod(make_pod("c"))
        placed = await sim.pod("c")
        assert placed is not None
        assert placed["spec"]["nodeName"] == "node-1"
        assert placed["status"]["phase"] == "Running"
        assert (await sim.pod("a") or {})["status"]["phase"] == "Succeeded"

    simulate(
        tmp_path,
        scenario,
        components=("scheduler", "controller-manager", "agents"),
        nodes=two_pod_node(),
    )


def test_a_finished_pod_frees_its_host_port_and_resources(tmp_path: Path) -> None:
    """NodePorts and NodeResourcesFit read the cache: a pod that finishes gives back its
    host port and requests, and the pod waiting for them is bound when it finishes."""

    async def scenario(sim: Sim) -> None:
        await sim.create_node(make_node("node-1"))
        await sim.taint("node-1", None)  # no lifecycle controller to lift not-ready
        holder = make_pod("holder", node_name="node-1", requests={"cpu": "3"})
        holder["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
        await sim.create_pod(holder)
        scheduler = sim.cluster.scheduler
        assert scheduler is not None
        assert scheduler.nodes["node-1"].requested == {"cpu": 3000}

        waiting = make_pod("waiting", requests={"cpu": "2"})
        waiting["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
        await sim.create_pod(waiting)
        pending = await sim.pod("waiting")
        assert pending is not None
        assert scheduled(pending) == ("False", "2026-01-01T00:00:00Z", PORTS_TAKEN)

        await sim.advance_to(20)
        await sim.client.patch(
            PODS,
            "holder",
            {"status": {"phase": "Failed"}},
            namespace="default",
            subresource="status",
        )
        await sim.advance(0)
        assert cached_pods(sim) == ["default/waiting"]
        assert scheduler.nodes["node-1"].requested == {"cpu": 2000}
        assert scheduler.nodes["node-1"].used_ports == {("TCP", 8080): {"0.0.0.0": 1}}
        placed = await sim.pod("waiting")
        assert placed is not None
        assert placed["spec"]["nodeName"] == "node-1"
        assert scheduled(placed)[:2] == ("True", "2026-01-01T00:00:20Z")

        # A scheduler started later never counts the finished pod (its first list).
        fresh = Scheduler(sim.client, sim.clock)
        fresh.informers.start()
        try:
            await fresh.informers.wait_synced()
            assert sorted(fresh.nodes["node-1"].pods) == ["default/waiting"]
            assert fresh.nodes["node-1"].requested == {"cpu": 2000}
        finally:
            await fresh.informers.stop()

    simulate(tmp_path, scenario, components=("scheduler",))


def test_a_pending_pod_that_fails_leaves_the_queue(tmp_path: Path) -> None:
    """An unscheduled pod reported Failed is deleted from the queue (its finishing reaches
    the scheduler as a delete) and never bound."""

    async def scenario(sim: Sim) -> None:
        await sim.create_pod(make_pod("lost"))
        scheduler = sim.cluster.scheduler
        assert scheduler is not None
        assert "default/lost" in scheduler.queue
        await sim.client.patch(
            PODS, "lost", {"status": {"phase": "Failed"}}, namespace="default", subresource="status"
        )
        await sim.advance(0)
        assert "default/lost" not in scheduler.queue
        await sim.create_node(make_node("node-1"))
        await sim.taint("node-1", None)
        await sim.advance(300)
        lost = await sim.pod("lost")
        assert lost is not None
        assert not lost["spec"].get("nodeName")

    simulate(tmp_path, scenario, components=("scheduler",))
