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
from tests.controllers.workload_builders import make_daemonset

PDBS = resource("policy", "v1", "poddisruptionbudgets")
REPLICASETS = resource("apps", "v1", "replicasets")
DAEMONSETS = resource("apps", "v1", "daemonsets")


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


def bare_pod(name: str) -> dict[str, object]:
    return {
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


CONTROLLERS = ("replicaset-controller", "disruption-controller", "node-lifecycle-controller")
COMPONENTS = ("scheduler", "controller-manager", "agents")


def test_unmanaged_pods_are_reported_not_failed(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        for name in ("bare-1", "bare-2"):
            await sim.client.create(PODS, bare_pod(name), namespace="default")
        await sim.client.create(PDBS, budget("max", maxUnavailable=1), namespace="default")
        await sim.advance(1)
        status = (await sim.client.get(PDBS, "max", "default"))["status"]
        assert {k: v for k, v in status.items() if k != "conditions"} == {
            "observedGeneration": 1,
            "disruptionsAllowed": 0,
            "currentHealthy": 2,
            "desiredHealthy": 0,
            "expectedPods": 0,
        }
        assert status["conditions"][0]["reason"] == "InsufficientPods"
        [event] = await sim.events("UnmanagedPods")
        assert event["type"] == "Warning"
        assert event["involvedObject"]["kind"] == "PodDisruptionBudget"
        assert event["message"] == (
            "Pods selected by this PodDisruptionBudget (selector: &LabelSelector{MatchLabels:"
            "map[string]string{app: web,},MatchExpressions:[]LabelSelectorRequirement{},}) were "
            "found to be unmanaged. As a result, the status of the PDB cannot be calculated "
            "correctly, which may result in undefined behavior. To account for these pods "
            'please set ".spec.minAvailable" field of the PDB to an integer value.'
        )

    simulate(
        tmp_path,
        scenario,
        components=COMPONENTS,
        controllers=CONTROLLERS,
        nodes=[NodeShape("node-1")],
    )


def test_a_budget_over_daemon_pods_fails_safe(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.client.create(DAEMONSETS, make_daemonset("web"), namespace="default")
        await sim.advance(1)
        await sim.client.create(PDBS, budget("max", maxUnavailable=1), namespace="default")
        await sim.advance(1)
        status = (await sim.client.get(PDBS, "max", "default"))["status"]
        # Failing safe leaves the rest of the status as it was: never observed.
        assert status["disruptionsAllowed"] == 0
        assert "observedGeneration" not in status
        [condition] = status["conditions"]
        assert (condition["type"], condition["status"], condition["reason"]) == (
            "DisruptionAllowed",
            "False",
            "SyncFailed",
        )
        assert condition["message"] == "daemonsets.apps does not implement the scale subresource"
        [event] = await sim.events("CalculateExpectedPodCountFailed")
        assert event["message"] == (
            "Failed to calculate the number of expected pods: daemonsets.apps does not "
            "implement the scale subresource"
        )

    simulate(
        tmp_path,
        scenario,
        components=COMPONENTS,
        controllers=(*CONTROLLERS, "daemonset-controller"),
        nodes=[NodeShape("node-1")],
    )


def test_a_stale_disruption_target_is_reset_after_two_minutes(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.client.create(PODS, bare_pod("kept"), namespace="default")
        await sim.advance(1)
        marked_at = sim.clock.monotonic()
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "EvictionByEvictionAPI",
            "message": "Eviction API: evicting",
            "lastTransitionTime": format_time(sim.clock.now()),
        }
        await sim.client.patch(
            PODS,
            "kept",
            {"status": {"conditions": [condition]}},
            namespace="default",
            patch_type="strategic",
            subresource="status",
        )

        async def target() -> dict[str, object]:
            pod = await sim.client.get(PODS, "kept", "default")
            [found] = [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]
            return dict(found)

        await sim.advance_to(marked_at + 119)
        assert (await target())["status"] == "True"
        await sim.advance_to(marked_at + 120)
        reset = await target()
        assert reset == {
            "type": "DisruptionTarget",
            "status": "False",
            "lastTransitionTime": format_time(sim.clock.now()),
            "lastProbeTime": None,
        }

    simulate(
        tmp_path,
        scenario,
        components=COMPONENTS,
        controllers=CONTROLLERS,
        nodes=[NodeShape("node-1")],
    )
