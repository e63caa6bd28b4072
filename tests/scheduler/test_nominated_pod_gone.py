"""A nominated pod deleted before it is bound gives its reserved room back at once."""

import asyncio

from taintplane.client import resource
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster
from tests.controllers.harness import START
from tests.scheduler.builders import make_node, make_pod

NODES = resource("", "v1", "nodes")
PODS = resource("", "v1", "pods")
PRIORITY_CLASSES = resource("scheduling.k8s.io", "v1", "priorityclasses")


def test_a_pod_waiting_behind_a_nomination_is_bound_as_the_nominated_pod_is_deleted(tmp_path):
    """deletePodFromSchedulingQueue: lower or equal priority pods counted the nominated pod
    as if it were on its node; its deletion is an AssignedPodDelete for them, not a wait for
    the five-minute flush."""

    async def scenario():
        clock = VirtualClock(START)
        async with in_process_cluster(tmp_path, clock, components=("scheduler",)) as cluster:
            client = cluster.client
            assert client is not None
            high_class = {"metadata": {"name": "high"}, "value": 100}
            await client.create(PRIORITY_CLASSES, high_class)
            node = make_node("n1", cpu="4")
            status = node.pop("status")
            await client.create(NODES, node)
            await client.patch(NODES, "n1", {"status": status}, subresource="status")
            await client.patch(NODES, "n1", {"spec": {"taints": None}})
            victim = make_pod("victim", requests={"cpu": "2"})
            await client.create(PODS, victim, namespace="default")
            await clock.advance(0)
            assert (await client.get(PODS, "victim", "default"))["spec"]["nodeName"] == "n1"

            # No kubelet here: the preempted victim stays terminating, holding its 2 cpus.
            high = make_pod("high", requests={"cpu": "3"}, priorityClassName="high")
            await client.create(PODS, high, namespace="default")
            await clock.advance(0)
            high = await client.get(PODS, "high", "default")
            assert high["status"].get("nominatedNodeName") == "n1"
            assert not high["spec"].get("nodeName")
            assert (await client.get(PODS, "victim", "default"))["metadata"]["deletionTimestamp"]

            low = make_pod("low", requests={"cpu": "1"})
            await client.create(PODS, low, namespace="default")
            await clock.advance(0)
            pod = await client.get(PODS, "low", "default")
            assert pod["status"]["conditions"][0]["reason"] == "Unschedulable"
            await clock.advance(30)  # its backoff is long over; nothing else happened
            assert (await client.get(PODS, "low", "default"))["spec"].get("nodeName") is None

            await client.delete(PODS, "high", "default")
            await clock.advance(0)
            pod = await client.get(PODS, "low", "default")
            assert pod["spec"].get("nodeName") == "n1"

    asyncio.run(scenario())
