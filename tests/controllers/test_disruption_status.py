"""The disruption controller's writes as upstream's encode them, and what it counts: a budget
that fails safe before it was ever observed, a DisruptionTarget that has no transition time,
a pod held back by a readiness gate."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from taintplane.agents.nodes import NodeShape
from tests.controllers.harness import Sim, simulate
from tests.controllers.test_disruption import (
    COMPONENTS,
    CONTROLLERS,
    DAEMONSETS,
    PDBS,
    PODS,
    bare_pod,
    budget,
)
from tests.controllers.workload_builders import make_daemonset


def _run(
    tmp_path: Path,
    scenario: Callable[[Sim], Awaitable[None]],
    controllers: tuple[str, ...] = CONTROLLERS,
) -> None:
    simulate(
        tmp_path,
        scenario,
        components=COMPONENTS,
        controllers=controllers,
        nodes=[NodeShape("node-1")],
    )


def test_a_budget_failing_safe_before_it_was_observed(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.client.create(DAEMONSETS, make_daemonset("web"), namespace="default")
        await sim.advance(1)
        await sim.client.create(PDBS, budget("max", maxUnavailable=1), namespace="default")
        await sim.advance(1)
        status = (await sim.client.get(PDBS, "max", "default"))["status"]
        [condition] = status.pop("conditions")
        # The counters are never omitted; the condition has no observedGeneration of 0.
        assert status == {
            "disruptionsAllowed": 0,
            "currentHealthy": 0,
            "desiredHealthy": 0,
            "expectedPods": 0,
        }
        assert "observedGeneration" not in condition
        assert condition["reason"] == "SyncFailed"

    _run(tmp_path, scenario, (*CONTROLLERS, "daemonset-controller"))


def test_a_disruption_target_without_a_transition_time_is_stale_at_once(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.client.create(PODS, bare_pod("kept"), namespace="default")
        await sim.advance(1)
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "EvictionByEvictionAPI",
            "message": "Eviction API: evicting",
        }
        await sim.client.patch(
            PODS,
            "kept",
            {"status": {"conditions": [condition]}},
            namespace="default",
            patch_type="strategic",
            subresource="status",
        )
        pod = await sim.client.get(PODS, "kept", "default")
        [written] = [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]
        assert written.get("lastTransitionTime") is None
        await sim.advance(1)
        pod = await sim.client.get(PODS, "kept", "default")
        [reset] = [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]
        assert reset["status"] == "False"

    _run(tmp_path, scenario)
