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


def test_a_pod_waiting_for_its_affinity_is_bound_once_the_pod_it_follows_lands(tmp_path):
    """AssignedPodAdd (InterPodAffinity's EventsToRegister): the pod that fails for want of a
    matching pod is tried again when one lands, not after the five-minute flush."""

    async def scenario():
        clock = VirtualClock(START)
        async with in_process_cluster(tmp_path, clock, components=("scheduler",)) as cluster:
            client = cluster.client
            assert client is not None
            for name in ("a-1", "a-2"):
                node = make_node(name)
                status = node.pop("status")
                await client.create(NODES, node)
                await client.patch(NODES, name, {"status": status}, subresource="status")
                await client.patch(NODES, name, {"spec": {"taints": None}})
            term = {
                "labelSelector": {"matchLabels": {"app": "db"}},
                "topologyKey": "kubernetes.io/hostname",
            }
            follower = make_pod("web")
            follower["spec"]["affinity"] = {
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            }
            await client.create(PODS, follower, namespace="default")
            await clock.advance(0)
            pod = await client.get(PODS, "web", "default")
            assert pod["status"]["conditions"][0]["reason"] == "Unschedulable"
            await clock.advance(30)  # its backoff is long over; nothing else happened
            assert (await client.get(PODS, "web", "default"))["spec"].get("nodeName") is None
            leader = make_pod("db", node_name="a-2")
            leader["metadata"]["labels"] = {"app": "db"}
            await client.create(PODS, leader, namespace="default")
            await clock.advance(0)
            pod = await client.get(PODS, "web", "default")
            assert pod["spec"].get("nodeName") == "a-2"

    asyncio.run(scenario())
