"""Pod readiness gates as the kubelet's GeneratePodReadyCondition applies them: Ready waits
for every gate's condition (written by someone else) to be True, ContainersReady does not; and
the disruption controller does not count a pod held back by a gate as healthy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from taintplane.agents.nodes import NodeShape
from taintplane.client import resource
from tests.controllers.harness import Sim, simulate

PODS = resource("", "v1", "pods")
PDBS = resource("policy", "v1", "poddisruptionbudgets")


def gated_pod(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"app": "gated"}},
        "spec": {
            "containers": [{"name": "c", "image": "nginx"}],
            "readinessGates": [{"conditionType": "example.com/ok"}],
        },
    }


def test_ready_waits_for_the_readiness_gate(tmp_path: Path) -> None:
    async def conditions(sim: Sim) -> dict[str, dict[str, Any]]:
        pod = await sim.client.get(PODS, "gated", "default")
        return {c["type"]: c for c in pod["status"]["conditions"]}

    async def scenario(sim: Sim) -> None:
        await sim.client.create(PODS, gated_pod("gated"), namespace="default")
        budget = {
            "metadata": {"name": "gated"},
            "spec": {"selector": {"matchLabels": {"app": "gated"}}, "minAvailable": 1},
        }
        await sim.client.create(PDBS, budget, namespace="default")
        await sim.advance(5)
        found = await conditions(sim)
        assert found["ContainersReady"]["status"] == "True"
        ready = found["Ready"]
        assert (ready["status"], ready["reason"], ready["message"]) == (
            "False",
            "ReadinessGatesNotReady",
            'corresponding condition of pod readiness gate "example.com/ok" does not exist.',
        )
        status = (await sim.client.get(PDBS, "gated", "default"))["status"]
        assert (status["currentHealthy"], status["expectedPods"]) == (0, 1)

        async def gate(value: str) -> None:
            condition = {"type": "example.com/ok", "status": value}
            await sim.client.patch(
                PODS,
                "gated",
                {"status": {"conditions": [condition]}},
                namespace="default",
                patch_type="strategic",
                subresource="status",
            )
            await sim.advance(1)

        await gate("False")
        ready = (await conditions(sim))["Ready"]
        assert (ready["status"], ready["message"]) == (
            "False",
            'the status of pod readiness gate "example.com/ok" is not "True", but False',
        )
        await gate("True")
        ready = (await conditions(sim))["Ready"]
        assert ready["status"] == "True"
        assert "reason" not in ready
        assert "message" not in ready
        status = (await sim.client.get(PDBS, "gated", "default"))["status"]
        assert (status["currentHealthy"], status["disruptionsAllowed"]) == (1, 0)

    simulate(
        tmp_path,
        scenario,
        components=("scheduler", "controller-manager", "agents"),
        controllers=("disruption-controller", "node-lifecycle-controller"),
        nodes=[NodeShape("node-1")],
    )
