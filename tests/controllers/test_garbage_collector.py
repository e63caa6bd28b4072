"""The garbage collector with the three propagation policies, on virtual time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from taintplane.agents.nodes import NodeShape
from taintplane.client import ApiError, resource
from tests.controllers.harness import Sim, simulate

PODS = resource("", "v1", "pods")
REPLICASETS = resource("apps", "v1", "replicasets")
DEPLOYMENTS = resource("apps", "v1", "deployments")
DAEMONSETS = resource("apps", "v1", "daemonsets")
REVISIONS = resource("apps", "v1", "controllerrevisions")
LEASES = resource("coordination.k8s.io", "v1", "leases")
NODES = resource("", "v1", "nodes")
CONTROLLERS = ("replicaset-controller", "deployment-controller", "garbage-collector-controller")


def replicaset(name: str, replicas: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


async def names(sim: Sim, rt: Any, selector: str = "") -> list[str]:
    items, _ = await sim.client.list(rt, "default", label_selector=selector)
    return sorted(i["metadata"]["name"] for i in items)


async def gone(sim: Sim, rt: Any, name: str, namespace: str = "default") -> bool:
    try:
        await sim.client.get(rt, name, namespace)
    except ApiError as error:
        return error.code == 404
    return False


def test_background_deletion_of_a_deployment_takes_its_replicasets_and_pods(
    tmp_path: Path,
) -> None:
    async def scenario(sim: Sim) -> None:
        deployment = replicaset("web", 3) | {"apiVersion": "apps/v1", "kind": "Deployment"}
        await sim.client.create(DEPLOYMENTS, deployment, namespace="default")
        await sim.advance(1)
        assert len(await names(sim, REPLICASETS)) == 1
        assert len(await names(sim, PODS, "app=web")) == 3
        await sim.client.delete(DEPLOYMENTS, "web", "default")  # kubectl's default
        await sim.advance(0)
        assert await names(sim, REPLICASETS) == []
        assert await names(sim, PODS, "app=web") == []  # unscheduled pods go at once

    simulate(tmp_path, scenario, controllers=CONTROLLERS)


def test_a_daemonsets_revisions_and_pods_follow_it(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.client.create(NODES, {"metadata": {"name": "n1"}})
        await sim.taint("n1", None)  # as once it is Ready
        daemonset = replicaset("agent") | {"apiVersion": "apps/v1", "kind": "DaemonSet"}
        del daemonset["spec"]["replicas"]
        await sim.client.create(DAEMONSETS, daemonset, namespace="default")
        await sim.advance(1)
        [revision] = await names(sim, REVISIONS)
        assert revision.startswith("agent-")
        assert len(await names(sim, PODS, "app=agent")) == 1
        await sim.client.delete(DAEMONSETS, "agent", "default")
        await sim.advance(0)
        assert await names(sim, REVISIONS) == []
        assert await names(sim, PODS, "app=agent") == []  # unscheduled: gone at once

    simulate(tmp_path, scenario, controllers=("daemonset-controller", *CONTROLLERS))


def test_orphan_deletion_leaves_the_pods_without_their_owner(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.client.create(REPLICASETS, replicaset("web"), namespace="default")
        await sim.advance(1)
        pods = await names(sim, PODS, "app=web")
        assert len(pods) == 2
        await sim.client.delete(REPLICASETS, "web", "default", propagation="Orphan")
        await sim.advance(0)
        assert await gone(sim, REPLICASETS, "web")
        assert await names(sim, PODS, "app=web") == pods
        for name in pods:
            pod = await sim.client.get(PODS, name, "default")
            assert "ownerReferences" not in pod["metadata"]

    simulate(tmp_path, scenario, controllers=CONTROLLERS)


def test_foreground_deletion_waits_for_the_pods(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.client.create(REPLICASETS, replicaset("web"), namespace="default")
        await sim.advance(1)
        # Bound pods are deleted gracefully (30 s): nothing removes them here but time.
        for name in await names(sim, PODS, "app=web"):
            await sim.client.patch(
                PODS, name, {"metadata": {"finalizers": ["example.com/hold"]}}, namespace="default"
            )
        await sim.client.delete(REPLICASETS, "web", "default", propagation="Foreground")
        await sim.advance(0)
        owner = await sim.client.get(REPLICASETS, "web", "default")
        assert owner["metadata"]["finalizers"] == ["foregroundDeletion"]
        assert "deletionTimestamp" in owner["metadata"]
        pods = await names(sim, PODS, "app=web")
        for name in pods:
            pod = await sim.client.get(PODS, name, "default")
            assert "deletionTimestamp" in pod["metadata"]
            await sim.client.patch(
                PODS, name, {"metadata": {"finalizers": None}}, namespace="default"
            )
        await sim.advance(0)
        assert await names(sim, PODS, "app=web") == []
        assert await gone(sim, REPLICASETS, "web")

    simulate(tmp_path, scenario, controllers=CONTROLLERS)


def test_a_deleted_nodes_lease_is_collected(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        lease = await sim.client.get(LEASES, "node-1", "kube-node-lease")
        assert lease["metadata"]["ownerReferences"][0]["kind"] == "Node"
        sim.kubelets.stop("node-1")
        await sim.client.delete(NODES, "node-1")
        await sim.advance(0)
        assert await gone(sim, LEASES, "node-1", "kube-node-lease")

    simulate(
        tmp_path,
        scenario,
        components=("controller-manager", "agents"),
        controllers=("garbage-collector-controller",),
        nodes=[NodeShape("node-1")],
    )


def test_unknown_propagation_policy_is_refused(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.client.create(REPLICASETS, replicaset("web"), namespace="default")
        with pytest.raises(ApiError) as refused:
            await sim.client.delete(REPLICASETS, "web", "default", propagation="Sideways")
        assert refused.value.code == 422
        assert str(refused.value) == (
            'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported '
            'value: "Sideways": supported values: "Foreground", "Background", "Orphan", '
            '"nil"'
        )
        assert not await gone(sim, REPLICASETS, "web")

    simulate(tmp_path, scenario, controllers=CONTROLLERS)
