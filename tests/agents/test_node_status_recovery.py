"""A kubelet that comes back after the node lifecycle controller marked its node Unknown: its
status setters run on the node as stored, so every condition transitions at the recovery
instant and is told (NodeReady, NodeHasSufficientMemory, ...), as upstream's do."""

from __future__ import annotations

from pathlib import Path

from tests.controllers.harness import NODES, Sim, simulate
from tests.controllers.test_node_lifecycle import AGENTS, LIFECYCLE, shapes

RECOVERY = "2026-01-01T00:01:22Z"


def test_a_recovering_kubelet_moves_its_conditions_on_from_unknown(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.advance_to(12)
        sim.kubelets.stop("node-1")
        await sim.advance_to(82)
        for type_ in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure"):
            found = await sim.node_condition("node-1", type_)
            assert found is not None
            assert found["status"] == "Unknown"
        await sim.kubelets.start("node-1")
        await sim.advance_to(85)
        expected = {
            "MemoryPressure": ("False", "KubeletHasSufficientMemory"),
            "DiskPressure": ("False", "KubeletHasNoDiskPressure"),
            "PIDPressure": ("False", "KubeletHasSufficientPID"),
            "Ready": ("True", "KubeletReady"),
        }
        for type_, (status, reason) in expected.items():
            found = await sim.node_condition("node-1", type_)
            assert found is not None
            assert (found["status"], found["reason"]) == (status, reason)
            assert found["lastTransitionTime"] == RECOVERY
            assert found["lastHeartbeatTime"] == RECOVERY
        [ready] = await sim.events("NodeReady")
        assert (ready["message"], ready["lastTimestamp"], ready["source"]) == (
            "Node node-1 status is now: NodeReady",
            RECOVERY,
            {"component": "kubelet", "host": "node-1"},
        )
        for reason in ("NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID"):
            told = await sim.events(reason)
            # Once at registration, once at recovery: the same kubelet's recorder counts the
            # repeat on the first Event, as client-go's correlator does.
            assert [(e["count"], e["firstTimestamp"], e["lastTimestamp"]) for e in told] == [
                (2, "2026-01-01T00:00:00Z", RECOVERY)
            ]
            assert told[0]["message"] == f"Node node-1 status is now: {reason}"
        # The next updates find the stored node as they left it: nothing more to tell, and
        # the transition stays at the recovery instant while the heartbeat moves on.
        await sim.advance_to(400)
        assert len(await sim.events("NodeReady")) == 1
        [memory] = await sim.events("NodeHasSufficientMemory")
        assert memory["count"] == 2
        ready_condition = await sim.node_condition("node-1", "Ready")
        assert ready_condition is not None
        assert ready_condition["lastTransitionTime"] == RECOVERY
        # Unchanged status is posted every 5 minutes: at the first update from 382 s on.
        assert ready_condition["lastHeartbeatTime"] == "2026-01-01T00:06:30Z"

    simulate(tmp_path, scenario, components=AGENTS, controllers=LIFECYCLE, nodes=shapes(1))


def test_a_status_written_by_someone_else_is_corrected_and_told(tmp_path: Path) -> None:
    """The setters diff against the stored node, not the kubelet's memory: a Ready=False
    written over the kubelet's status is put right at its next update, with NodeReady."""

    async def scenario(sim: Sim) -> None:
        await sim.advance_to(1)
        node = await sim.node("node-1")
        conditions = node["status"]["conditions"]
        for found in conditions:
            if found["type"] == "Ready":
                found.update(status="False", reason="Tampered", message="by hand")
        await sim.client.patch(
            NODES, "node-1", {"status": {"conditions": conditions}}, subresource="status"
        )
        await sim.advance_to(10)
        ready = await sim.node_condition("node-1", "Ready")
        assert ready is not None
        assert (ready["status"], ready["reason"], ready["lastTransitionTime"]) == (
            "True",
            "KubeletReady",
            "2026-01-01T00:00:10Z",
        )
        assert [e["lastTimestamp"] for e in await sim.events("NodeReady")] == [
            "2026-01-01T00:00:10Z"
        ]
        # The untouched pressure conditions are no change: not told again.
        assert len(await sim.events("NodeHasSufficientMemory")) == 1

    simulate(tmp_path, scenario, components=AGENTS, controllers=LIFECYCLE, nodes=shapes(1))
