"""PodDisruptionBudget status from the disruption controller, with real pods on simulated
nodes: what `kubectl get pdb` shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from taintplane.agents.nodes import NodeShape
from taintplane.api.decoding import format_time
from taintplane.client import ApiError, resource
from tests.controllers.harness import Sim, simulate
from tests.controllers.test_garbage_collector import replicaset

PDBS = resource("policy", "v1", "poddisruptionbudgets")
REPLICASETS = resource("apps", "v1", "replicasets")


def budget(name: str, **rule: object) -> dict[str, object]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, **rule},
    }


def test_budget_status_follows_the_ready_pods(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.client.create(REPLICASETS, replicaset("web", 3), namespace="default")
        await sim.client.create(PDBS, budget("min", minAvailable=2), namespace="default")
        await sim.client.create(PDBS, budget("max", maxUnavailable="50%"), namespace="default")
        await sim.advance(1)
        minimum = await sim.client.get(PDBS, "min", "default")
        assert {k: v for k, v in minimum["status"].items() if k != "conditions"} == {
            "observedGeneration": 1,
            "disruptionsAllowed": 1,
            "currentHealthy": 3,
            "desiredHealthy": 2,
            "expectedPods": 3,
        }
        condition = minimum["status"]["conditions"][0]
        assert (condition["type"], condition["status"], condition["reason"]) == (
            "DisruptionAllowed",
            "True",
            "SufficientPods",
        )
        maximum = await sim.client.get(PDBS, "max", "default")
        # 50 % of 3 rounds up to 2 unavailable: 1 must stay healthy, 2 may go.
        assert maximum["status"]["desiredHealthy"] == 1
        assert maximum["status"]["disruptionsAllowed"] == 2
        await sim.client.patch(REPLICASETS, "web", {"spec": {"replicas": 2}}, namespace="default")
        await sim.advance(1)
        minimum = await sim.client.get(PDBS, "min", "default")
        assert minimum["status"]["disruptionsAllowed"] == 0
        assert minimum["status"]["conditions"][0]["reason"] == "InsufficientPods"

    simulate(
        tmp_path,
        scenario,
        components=("scheduler", "controller-manager", "agents"),
        controllers=(
            "replicaset-controller",
            "disruption-controller",
            "node-lifecycle-controller",
        ),
        nodes=[NodeShape("node-1"), NodeShape("node-2")],
    )


PODS = resource("", "v1", "pods")
EVENTS = resource("", "v1", "events")


def test_evicted_pods_are_not_counted_for_two_minutes_unless_they_go(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.client.create(REPLICASETS, replicaset("web", 3), namespace="default")
        await sim.client.create(PDBS, budget("min", minAvailable=2), namespace="default")
        await sim.advance(1)
        pods, _ = await sim.client.list(PODS, "default")
        stuck = sorted(p["metadata"]["name"] for p in pods)[0]
        # An eviction whose pod did not start going (as if its deletion never came).
        since = format_time(sim.clock.now())
        pdb = await sim.client.get(PDBS, "min", "default")
        status = {**pdb["status"], "disruptedPods": {stuck: since}}
        await sim.client.update(PDBS, {**pdb, "status": status}, subresource="status")
        started = sim.clock.monotonic()
        await sim.advance(0)
        status = (await sim.client.get(PDBS, "min", "default"))["status"]
        assert (status["currentHealthy"], status["disruptionsAllowed"]) == (2, 0)
        assert status["disruptedPods"] == {stuck: since}
        await sim.advance_to(started + 119)
        status = (await sim.client.get(PDBS, "min", "default"))["status"]
        assert (status["currentHealthy"], status["disruptionsAllowed"]) == (2, 0)
        await sim.advance_to(started + 120)
        status = (await sim.client.get(PDBS, "min", "default"))["status"]
        assert (status["currentHealthy"], status["disruptionsAllowed"]) == (3, 1)
        assert "disruptedPods" not in status
        events, _ = await sim.client.list(EVENTS, "default")
        [warning] = [e for e in events if e["reason"] == "NotDeleted"]
        assert warning["involvedObject"]["name"] == stuck
        assert warning["type"] == "Warning"
        assert warning["message"] == (
            "Pod was expected by PDB default/default to be deleted but it wasn't"
        )
        assert warning["source"] == {"component": "controllermanager"}

    simulate(
        tmp_path,
        scenario,
        components=("scheduler", "controller-manager", "agents"),
        controllers=(
            "replicaset-controller",
            "disruption-controller",
            "node-lifecycle-controller",
        ),
        nodes=[NodeShape("node-1"), NodeShape("node-2")],
    )


def test_an_eviction_uses_the_budget_and_the_replacement_restores_it(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.client.create(REPLICASETS, replicaset("web", 3), namespace="default")
        await sim.client.create(PDBS, budget("min", minAvailable=2), namespace="default")
        await sim.advance(1)
        pods, _ = await sim.client.list(PODS, "default")
        first, second = sorted(p["metadata"]["name"] for p in pods)[:2]
        eviction = {"apiVersion": "policy/v1", "kind": "Eviction"}
        await sim.client.post_subresource(
            PODS, first, "default", "eviction", {**eviction, "metadata": {"name": first}}
        )
        # The budget is used up at once, before any controller has looked again.
        with pytest.raises(ApiError) as refused:
            await sim.client.post_subresource(
                PODS, second, "default", "eviction", {**eviction, "metadata": {"name": second}}
            )
        assert refused.value.code == 429
        await sim.advance(1)
        # The evicted pod went, the ReplicaSet replaced it, and the budget has room again.
        pods, _ = await sim.client.list(PODS, "default")
        assert first not in {p["metadata"]["name"] for p in pods}
        assert len(pods) == 3
        status = (await sim.client.get(PDBS, "min", "default"))["status"]
        assert (status["currentHealthy"], status["disruptionsAllowed"]) == (3, 1)
        assert "disruptedPods" not in status

    simulate(
        tmp_path,
        scenario,
        components=("scheduler", "controller-manager", "agents"),
        controllers=(
            "replicaset-controller",
            "disruption-controller",
            "node-lifecycle-controller",
        ),
        nodes=[NodeShape("node-1"), NodeShape("node-2")],
    )
