"""The scheduling queue inside an in-process cluster on virtual time."""

import asyncio

from taintplane.client import resource
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster
from tests.controllers.harness import START
from tests.scheduler.builders import make_node, make_pod

NODES = resource("", "v1", "nodes")
PODS = resource("", "v1", "pods")


def test_a_pod_is_bound_at_once_when_a_node_is_uncordoned_as_it_fails(tmp_path):
    """SchedulerPopFromBackoffQ: the scheduler has nothing else to do, so the pod that just
    failed is retried from the backoff queue without waiting out its backoff."""

    async def scenario():
        clock = VirtualClock(START)
        async with in_process_cluster(tmp_path, clock, components=("scheduler",)) as cluster:
            client = cluster.client
            assert client is not None
            for name in ("a-1", "a-2"):
                node = make_node(name, unschedulable=True)
                status = node.pop("status")
                await client.create(NODES, node)
                await client.patch(NODES, name, {"status": status}, subresource="status")
                # No node lifecycle controller here to lift TaintNodesByCondition's taint.
                await client.patch(NODES, name, {"spec": {"taints": None}})
            await client.create(PODS, make_pod("p"), namespace="default")
            await clock.advance(0)
            pod = await client.get(PODS, "p", "default")
            assert pod["status"]["conditions"][0]["reason"] == "Unschedulable"
            await client.patch(NODES, "a-2", {"spec": {"unschedulable": None}})
            await clock.advance(0)
            pod = await client.get(PODS, "p", "default")
            assert pod["spec"].get("nodeName") == "a-2"

    asyncio.run(scenario())
