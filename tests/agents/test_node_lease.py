"""The kubelet's node Lease as upstream's lease controller (component-helpers' lease
controller.go newLease) writes it: the bare minimum on creation, only renewTime on renewal."""

from __future__ import annotations

from pathlib import Path

from taintplane.agents.nodes import NodeShape
from taintplane.client import resource
from tests.controllers.harness import Sim, simulate

LEASES = resource("coordination.k8s.io", "v1", "leases")
NODES = resource("", "v1", "nodes")


def test_the_node_lease_holds_only_what_upstreams_lease_controller_sets(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.advance_to(1)
        node = await sim.client.get(NODES, "node-1")
        lease = await sim.client.get(LEASES, "node-1", "kube-node-lease")
        assert lease["spec"] == {
            "holderIdentity": "node-1",
            "leaseDurationSeconds": 40,
            "renewTime": "2026-01-01T00:00:00.000000Z",
        }
        assert lease["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Node", "name": "node-1", "uid": node["metadata"]["uid"]}
        ]
        # A renewal asserts nothing but the renewal: what others changed stays.
        await sim.client.patch(
            LEASES, "node-1", {"spec": {"leaseDurationSeconds": 55}}, namespace="kube-node-lease"
        )
        await sim.advance_to(10)
        lease = await sim.client.get(LEASES, "node-1", "kube-node-lease")
        assert lease["spec"] == {
            "holderIdentity": "node-1",
            "leaseDurationSeconds": 55,
            "renewTime": "2026-01-01T00:00:10.000000Z",
        }

    simulate(tmp_path, scenario, components=("agents",), nodes=[NodeShape("node-1")])
