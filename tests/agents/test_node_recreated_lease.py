"""A node deleted and created again under its name while its kubelet runs: the kubelet does
not register it again, but the Lease it creates is owned by the Node as it is now (upstream's
setNodeOwnerFunc GETs the Node for every new Lease, and creates none while there is no Node),
so the garbage collector leaves it and the node stays Ready."""

from __future__ import annotations

from pathlib import Path

from taintplane.agents.nodes import NodeShape
from taintplane.client import ApiError, resource
from tests.controllers.harness import Sim, simulate

LEASES = resource("coordination.k8s.io", "v1", "leases")
NODES = resource("", "v1", "nodes")
AGENTS = ("controller-manager", "agents")
CONTROLLERS = ("node-lifecycle-controller", "garbage-collector-controller")


async def _lease(sim: Sim) -> dict[str, object] | None:
    try:
        return await sim.client.get(LEASES, "node-3", "kube-node-lease")
    except ApiError as error:
        if error.code != 404:
            raise
        return None


def test_a_recreated_node_gets_a_lease_owned_by_its_new_uid(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.advance_to(20)
        first_uid = (await sim.node("node-3"))["metadata"]["uid"]
        await sim.client.delete(NODES, "node-3")
        await sim.advance(30)
        # No Node, no Lease: one created now would be owned by nobody.
        assert await _lease(sim) is None
        with_node = [n["metadata"]["name"] for n in (await sim.client.list(NODES))[0]]
        assert "node-3" not in with_node  # the kubelet does not register it again

        await sim.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-3"}})
        new_uid = (await sim.node("node-3"))["metadata"]["uid"]
        assert new_uid != first_uid
        await sim.advance(10)  # the next heartbeat: status posted, Lease created
        ready = await sim.node_condition("node-3", "Ready")
        assert ready is not None
        ready_since = ready["lastTransitionTime"]
        for _ in range(36):  # six minutes: no flapping to Unknown and back
            lease = await _lease(sim)
            assert lease is not None
            owners = lease["metadata"]["ownerReferences"]  # type: ignore[index]
            assert [o["uid"] for o in owners] == [new_uid]
            ready = await sim.node_condition("node-3", "Ready")
            assert ready is not None
            assert (ready["status"], ready["lastTransitionTime"]) == ("True", ready_since)
            await sim.advance(10)

    simulate(
        tmp_path,
        scenario,
        components=AGENTS,
        controllers=CONTROLLERS,
        nodes=[NodeShape(f"node-{i}") for i in (1, 2, 3)],
    )
