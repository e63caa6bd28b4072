"""A node deleted and created again under the same name, seen by the node lifecycle
controller: upstream's nodeHealthMap never drops a node's record, so the re-created node has
no startup grace of its own — it counts from the probe time of the one deleted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.controllers.harness import NODES, Sim, at, simulate

LIFECYCLE = ("node-lifecycle-controller",)


def _bare_node() -> dict[str, Any]:
    """A Node as ``kubectl create`` sends it, with no kubelet behind it."""
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}


def _stamp(seconds: float) -> str:
    return at(seconds).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_the_startup_grace_counts_from_the_first_incarnation(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.advance(0)
        await sim.create_node(_bare_node())  # at 0 s, no kubelet
        await sim.advance_to(22)
        await sim.client.delete(NODES, "n1")
        await sim.advance_to(42)
        recreated = await sim.create_node(_bare_node())
        assert recreated["metadata"]["creationTimestamp"] == _stamp(42)
        # 60 s from the first node's creation, not from this one's: Unknown at the first
        # review past 60 s (reviews every 5 s), where a fresh record would wait until 105 s.
        await sim.advance_to(64)
        assert await sim.node_condition("n1", "Ready") is None
        await sim.advance_to(65)
        ready = await sim.node_condition("n1", "Ready")
        assert ready == {
            "type": "Ready",
            "status": "Unknown",
            "lastHeartbeatTime": _stamp(42),
            "lastTransitionTime": _stamp(65),
            "reason": "NodeStatusNeverUpdated",
            "message": "Kubelet never posted node status.",
        }

    simulate(tmp_path, scenario, controllers=LIFECYCLE)
