"""PodDisruptionBudget status from the disruption controller, with real pods on simulated
nodes: what `kubectl get pdb` shows."""

from __future__ import annotations

from pathlib import Path

from taintplane.agents.nodes import NodeShape
from taintplane.client import resource
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
