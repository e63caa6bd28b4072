"""The kubelet's NodeNotSchedulable / NodeSchedulable events on cordon and uncordon, recorded
with its status setters every 10 s, as upstream's recordNodeSchedulableEvent."""

from __future__ import annotations

from pathlib import Path

from taintplane.agents.nodes import NodeShape
from taintplane.client import resource
from tests.controllers.harness import Sim, simulate

NODES = resource("", "v1", "nodes")


def test_cordon_and_uncordon_are_told_at_the_next_status_update(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.advance_to(1)
        await sim.client.patch(NODES, "node-1", {"spec": {"unschedulable": True}})
        await sim.advance_to(9.9)
        assert await sim.events("NodeNotSchedulable") == []
        await sim.advance_to(10)
        events = await sim.events("NodeNotSchedulable")
        assert [(e["message"], e["lastTimestamp"], e["source"]) for e in events] == [
            (
                "Node node-1 status is now: NodeNotSchedulable",
                "2026-01-01T00:00:10Z",
                {"component": "kubelet", "host": "node-1"},
            )
        ]
        assert events[0]["involvedObject"] == {"kind": "Node", "name": "node-1", "uid": "node-1"}
        await sim.advance_to(15)
        await sim.client.patch(NODES, "node-1", {"spec": {"unschedulable": None}})
        await sim.advance_to(30)
        assert [e["lastTimestamp"] for e in await sim.events("NodeSchedulable")] == [
            "2026-01-01T00:00:20Z"
        ]
        assert len(await sim.events("NodeNotSchedulable")) == 1  # told once, not every 10 s

    simulate(tmp_path, scenario, components=("agents",), nodes=[NodeShape("node-1")])
