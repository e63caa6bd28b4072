"""One informer per kind for every component of `taintplane up` (one cache of each object),
and handlers added to a running informer told of what it already holds, as client-go's."""

from __future__ import annotations

import asyncio
from pathlib import Path

from taintplane.agents.nodes import NodeShape
from taintplane.client import resource
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster

PODS = resource("", "v1", "pods")


def test_up_keeps_one_cache_per_kind_for_all_its_components(tmp_path: Path) -> None:
    async def scenario() -> None:
        clock = VirtualClock()
        async with in_process_cluster(tmp_path, clock, nodes=[NodeShape("node-1")]) as cluster:
            assert cluster.scheduler is not None
            assert cluster.controller_manager is not None
            assert cluster.kubelets is not None
            shared = cluster.controller_manager.informers
            assert cluster.scheduler.informers is shared
            assert cluster.kubelets.informers is shared
            assert cluster.scheduler.pod_informer is shared.pods
            assert cluster.scheduler.node_informer is shared.nodes

    asyncio.run(scenario())


def test_a_handler_added_late_is_told_of_every_cached_object(tmp_path: Path) -> None:
    async def scenario() -> None:
        clock = VirtualClock()
        async with in_process_cluster(tmp_path, clock, nodes=[NodeShape("node-1")]) as cluster:
            assert cluster.client is not None
            assert cluster.controller_manager is not None
            for name in ("a", "b"):
                pod = {
                    "metadata": {"name": name},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                }
                await cluster.client.create(PODS, pod, namespace="default")
            await clock.advance(1)
            informer = cluster.controller_manager.informers.pods
            seen: list[str] = []
            informer.add_handlers(lambda obj: seen.append(obj["metadata"]["name"]))
            assert sorted(seen) == ["a", "b"]

    asyncio.run(scenario())


def test_cached_objects_carry_no_managed_fields_and_updates_from_them_keep_the_stored_ones(
    tmp_path: Path,
) -> None:
    """kube-controller-manager's and kube-scheduler's informers trim managedFields; a
    component that writes back a cached object does not lose the server's record of who set
    what. Each component writes under upstream's name for it."""

    async def scenario() -> None:
        clock = VirtualClock()
        async with in_process_cluster(tmp_path, clock, nodes=[NodeShape("node-1")]) as cluster:
            assert cluster.client is not None
            assert cluster.controller_manager is not None
            await clock.advance(1)  # the node reports Ready: the pod can be placed
            pod = {
                "metadata": {"name": "a", "labels": {"app": "a"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            }
            await cluster.client.create(PODS, pod, namespace="default")
            await clock.advance(1)
            stored = await cluster.client.get(PODS, "a", "default")
            assert stored["status"]["phase"] == "Running"
            managers = {
                (e["manager"], e.get("subresource", ""))
                for e in stored["metadata"]["managedFields"]
            }
            assert managers == {("taintplane", ""), ("kubelet", "status")}

            informer = cluster.controller_manager.informers.pods
            cached = informer.get("default/a")
            assert cached is not None
            assert "managedFields" not in cached["metadata"]
            changed = {**cached, "metadata": {**cached["metadata"], "labels": {"app": "b"}}}
            component = cluster.client.with_field_manager("kube-controller-manager")
            updated = await component.update(PODS, changed)
            assert {
                (e["manager"], e.get("subresource", ""))
                for e in updated["metadata"]["managedFields"]
            } == managers | {("kube-controller-manager", "")}
            await clock.advance(1)
            cached = informer.get("default/a")
            assert cached is not None
            assert cached["metadata"]["labels"] == {"app": "b"}
            assert "managedFields" not in cached["metadata"]

    asyncio.run(scenario())


def test_cached_objects_hold_the_strings_they_share_once(tmp_path: Path) -> None:
    """Equal values of different cached objects (and of one object) are one string, so a
    large cache of pods does not hold each pod's image, node name and timestamps again."""

    async def scenario() -> None:
        clock = VirtualClock()
        async with in_process_cluster(tmp_path, clock, nodes=[NodeShape("node-1")]) as cluster:
            assert cluster.client is not None
            assert cluster.controller_manager is not None
            for name in ("a", "b"):
                pod = {
                    "metadata": {"name": name, "labels": {"app": "web"}},
                    "spec": {
                        "nodeName": "node-1",
                        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                    },
                }
                await cluster.client.create(PODS, pod, namespace="default")
            await clock.advance(1)
            informer = cluster.controller_manager.informers.pods
            a, b = informer.get("default/a"), informer.get("default/b")
            assert a is not None
            assert b is not None
            assert a["status"]["phase"] == b["status"]["phase"] == "Running"
            assert a["spec"]["containers"][0]["image"] is b["spec"]["containers"][0]["image"]
            assert a["spec"]["nodeName"] is b["spec"]["nodeName"]
            assert a["metadata"]["labels"]["app"] is b["metadata"]["labels"]["app"]
            assert a["status"]["hostIP"] is b["status"]["hostIPs"][0]["ip"]

    asyncio.run(scenario())
