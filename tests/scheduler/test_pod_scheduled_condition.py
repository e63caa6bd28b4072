"""The scheduler's PodScheduled=False condition, through the API on virtual time."""

import asyncio

from taintplane.client import resource
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster
from tests.controllers.harness import START
from tests.scheduler.builders import make_node, make_pod, taint

NODES = resource("", "v1", "nodes")
PODS = resource("", "v1", "pods")


def scheduled_condition(pod):
    return next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")


def test_the_unschedulable_condition_carries_the_pods_generation(tmp_path):
    async def scenario():
        clock = VirtualClock(START)
        async with in_process_cluster(tmp_path, clock, components=("scheduler",)) as cluster:
            client = cluster.client
            assert client is not None
            node = make_node("n1", taints=[taint("dedicated", value="x")])
            status = node.pop("status")
            await client.create(NODES, node)
            await client.patch(NODES, "n1", {"status": status}, subresource="status")
            await client.patch(NODES, "n1", {"spec": {"taints": [taint("dedicated", value="x")]}})
            await client.create(PODS, make_pod("p"), namespace="default")
            await clock.advance(0)
            pod = await client.get(PODS, "p", "default")
            assert pod["metadata"]["generation"] == 1
            condition = scheduled_condition(pod)
            assert (condition["reason"], condition["observedGeneration"]) == ("Unschedulable", 1)

            # A spec change (a toleration that does not help) is a new generation: the next
            # failure records it, the transition time stays (the status is still False).
            toleration = {"key": "other", "operator": "Exists"}
            await client.patch(
                PODS, "p", {"spec": {"tolerations": [toleration]}}, namespace="default"
            )
            await clock.advance(30)
            pod = await client.get(PODS, "p", "default")
            assert pod["metadata"]["generation"] == 2
            after = scheduled_condition(pod)
            assert after["observedGeneration"] == 2
            assert after["lastTransitionTime"] == condition["lastTransitionTime"]

    asyncio.run(scenario())
