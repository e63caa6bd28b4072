"""The garbage collector's graph as upstream's (graph_builder.go, attemptToDeleteItem): every
deletable kind, foreground deletion that finishes, dangling references, blockOwnerDeletion.
Scenarios follow test/e2e/apimachinery/garbage_collector.go and
test/integration/garbagecollector."""

from __future__ import annotations

import sys
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

from taintplane.client import ApiError, resource
from taintplane.controllers.gcgraph import Graph
from tests.controllers.harness import Sim, simulate

PODS = resource("", "v1", "pods")
REPLICASETS = resource("apps", "v1", "replicasets")
DEPLOYMENTS = resource("apps", "v1", "deployments")
ROLES = resource("rbac.authorization.k8s.io", "v1", "roles")
CLUSTERROLES = resource("rbac.authorization.k8s.io", "v1", "clusterroles")
CONTROLLERS = ("replicaset-controller", "deployment-controller", "garbage-collector-controller")
GC_ONLY = ("garbage-collector-controller",)
HOLD = "example.com/hold"
GHOST_UID = "00000000-0000-0000-0000-000000000000"


def workload(kind: str, name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
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


def ref(owner: dict[str, Any], *, block: bool | None = None, uid: str = "") -> dict[str, Any]:
    found = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": uid or owner["metadata"]["uid"],
    }
    if block is not None:
        found["blockOwnerDeletion"] = block
    return found


def pod(
    name: str, owners: list[dict[str, Any]], finalizers: list[str] | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "ownerReferences": owners}
    if finalizers:
        meta["finalizers"] = finalizers
    return {"metadata": meta, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


async def role(sim: Sim, name: str) -> dict[str, Any]:
    body = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": name},
    }
    created = await sim.client.create(ROLES, body, namespace="default")
    return created | {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role"}


async def make_pod(sim: Sim, body: dict[str, Any]) -> dict[str, Any]:
    return await sim.client.create(PODS, body, namespace="default")


async def fetch(sim: Sim, rt: Any, name: str, namespace: str = "default") -> dict[str, Any] | None:
    try:
        return await sim.client.get(rt, name, namespace)
    except ApiError as error:
        if error.code == 404:
            return None
        raise


async def names(sim: Sim, rt: Any, selector: str = "") -> list[str]:
    items, _ = await sim.client.list(rt, "default", label_selector=selector)
    return sorted(i["metadata"]["name"] for i in items)


# ---- 1. foreground deletion finishes ----------------------------------------------------------


def test_foreground_deletion_of_a_deployment_takes_everything_and_finishes(
    tmp_path: Path,
) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.client.create(DEPLOYMENTS, workload("Deployment", "web", 3), namespace="default")
        await sim.advance(1)
        assert len(await names(sim, PODS, "app=web")) == 3
        await sim.client.delete(DEPLOYMENTS, "web", "default", propagation="Foreground")
        await sim.advance(0)
        assert await fetch(sim, DEPLOYMENTS, "web") is None
        assert await names(sim, REPLICASETS) == []
        assert await names(sim, PODS, "app=web") == []

    simulate(tmp_path, scenario, controllers=CONTROLLERS)


def test_foreground_deletion_of_an_object_without_dependents_finishes(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await make_pod(sim, pod("solo", []))
        await sim.client.delete(PODS, "solo", "default", propagation="Foreground")
        await sim.advance(0)
        assert await fetch(sim, PODS, "solo") is None

    simulate(tmp_path, scenario, controllers=GC_ONLY)


def test_foreground_deletes_dependents_without_dependents_in_the_background(
    tmp_path: Path,
) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.client.create(DEPLOYMENTS, workload("Deployment", "web", 2), namespace="default")
        await sim.advance(1)
        pods = await names(sim, PODS, "app=web")
        for name in pods:
            await sim.client.patch(
                PODS, name, {"metadata": {"finalizers": [HOLD]}}, namespace="default"
            )
        await sim.client.delete(DEPLOYMENTS, "web", "default", propagation="Foreground")
        await sim.advance(0)
        deployment = await fetch(sim, DEPLOYMENTS, "web")
        assert deployment is not None
        assert deployment["metadata"]["finalizers"] == ["foregroundDeletion"]
        [rs_name] = await names(sim, REPLICASETS)
        rs = await fetch(sim, REPLICASETS, rs_name)
        assert rs is not None
        # The ReplicaSet has dependents: deleted in the foreground, it waits for them.
        assert rs["metadata"]["finalizers"] == ["foregroundDeletion"]
        assert "deletionTimestamp" in rs["metadata"]
        for name in pods:
            held = await fetch(sim, PODS, name)
            assert held is not None
            # A pod has none: deleted in the background, only its own finalizers hold it.
            assert held["metadata"]["finalizers"] == [HOLD]
            assert "deletionTimestamp" in held["metadata"]
        for name in pods:
            await sim.client.patch(
                PODS, name, {"metadata": {"finalizers": None}}, namespace="default"
            )
        await sim.advance(0)
        assert await names(sim, PODS, "app=web") == []
        assert await names(sim, REPLICASETS) == []
        assert await fetch(sim, DEPLOYMENTS, "web") is None

    simulate(tmp_path, scenario, controllers=CONTROLLERS)


# ---- 2. every deletable kind; dangling references ---------------------------------------------


def test_a_pod_owned_by_a_pod_follows_it(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        parent = await make_pod(sim, pod("parent", []))
        parent |= {"apiVersion": "v1", "kind": "Pod"}
        await make_pod(sim, pod("child", [ref(parent)]))
        await sim.advance(0)
        assert await fetch(sim, PODS, "child") is not None
        await sim.client.delete(PODS, "parent", "default")
        await sim.advance(0)
        assert await fetch(sim, PODS, "child") is None

    simulate(tmp_path, scenario, controllers=GC_ONLY)


def test_a_role_owning_a_pod_and_a_cluster_role_owning_a_role(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        cluster_role = await sim.client.create(
            CLUSTERROLES,
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "top"},
            },
        )
        cluster_role |= {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole"}
        body = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "middle", "ownerReferences": [ref(cluster_role)]},
        }
        middle = await sim.client.create(ROLES, body, namespace="default")
        middle |= {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role"}
        await make_pod(sim, pod("leaf", [ref(middle)]))
        await sim.advance(0)
        await sim.client.delete(CLUSTERROLES, "top")
        await sim.advance(0)
        assert await fetch(sim, ROLES, "middle") is None
        assert await fetch(sim, PODS, "leaf") is None

    simulate(tmp_path, scenario, controllers=GC_ONLY)


def test_a_dependent_whose_owners_never_existed_is_deleted(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        # One owner never existed; the other has the right name but another uid (a new
        # object of the same name is not the owner).
        same_name = await role(sim, "reborn")
        await make_pod(
            sim,
            pod("orphaned", [ref(same_name, uid=GHOST_UID.replace("0", "1"))]),
        )
        ghost = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "ghost", "uid": GHOST_UID},
        }
        await make_pod(sim, pod("haunted", [ref(ghost)]))
        await sim.advance(0)
        assert await fetch(sim, PODS, "orphaned") is None
        assert await fetch(sim, PODS, "haunted") is None
        assert await fetch(sim, ROLES, "reborn") is not None

    simulate(tmp_path, scenario, controllers=GC_ONLY)


def test_a_dependent_with_a_valid_owner_only_loses_its_dangling_references(
    tmp_path: Path,
) -> None:
    async def scenario(sim: Sim) -> None:
        valid = await role(sim, "valid")
        ghost = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "ghost", "uid": GHOST_UID},
        }
        await make_pod(sim, pod("kept", [ref(ghost), ref(valid)]))
        await sim.advance(0)
        kept = await fetch(sim, PODS, "kept")
        assert kept is not None
        assert "deletionTimestamp" not in kept["metadata"]
        assert kept["metadata"]["ownerReferences"] == [ref(valid)]

    simulate(tmp_path, scenario, controllers=GC_ONLY)


def test_orphaning_a_role_leaves_its_pod_without_the_reference(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        owner = await role(sim, "owner")
        await make_pod(sim, pod("stays", [ref(owner, block=True)]))
        await sim.advance(0)
        await sim.client.delete(ROLES, "owner", "default", propagation="Orphan")
        await sim.advance(0)
        assert await fetch(sim, ROLES, "owner") is None
        stays = await fetch(sim, PODS, "stays")
        assert stays is not None
        assert "ownerReferences" not in stays["metadata"]
        assert "deletionTimestamp" not in stays["metadata"]

    simulate(tmp_path, scenario, controllers=GC_ONLY)


# ---- 3. foreground with another valid owner; blockOwnerDeletion -------------------------------


def test_foreground_deletion_keeps_a_dependent_that_has_another_valid_owner(
    tmp_path: Path,
) -> None:
    # e2e: "should not delete dependents that have both valid owner and owner that's
    # waiting for dependents to be deleted".
    async def scenario(sim: Sim) -> None:
        to_delete = await role(sim, "to-delete")
        to_stay = await role(sim, "to-stay")
        await make_pod(sim, pod("shared", [ref(to_delete, block=True), ref(to_stay)]))
        await sim.advance(0)
        await sim.client.delete(ROLES, "to-delete", "default", propagation="Foreground")
        await sim.advance(0)
        assert await fetch(sim, ROLES, "to-delete") is None
        shared = await fetch(sim, PODS, "shared")
        assert shared is not None
        assert "deletionTimestamp" not in shared["metadata"]
        assert shared["metadata"]["ownerReferences"] == [ref(to_stay)]

    simulate(tmp_path, scenario, controllers=GC_ONLY)


def test_a_blocking_dependent_holds_its_foreground_owner(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        owner = await role(sim, "owner")
        await make_pod(sim, pod("blocker", [ref(owner, block=True)], [HOLD]))
        await sim.advance(0)
        await sim.client.delete(ROLES, "owner", "default", propagation="Foreground")
        await sim.advance(0)
        waiting = await fetch(sim, ROLES, "owner")
        assert waiting is not None
        assert waiting["metadata"]["finalizers"] == ["foregroundDeletion"]
        blocker = await fetch(sim, PODS, "blocker")
        assert blocker is not None
        assert blocker["metadata"]["finalizers"] == [HOLD]
        assert "deletionTimestamp" in blocker["metadata"]
        await sim.client.patch(
            PODS, "blocker", {"metadata": {"finalizers": None}}, namespace="default"
        )
        await sim.advance(0)
        assert await fetch(sim, PODS, "blocker") is None
        assert await fetch(sim, ROLES, "owner") is None

    simulate(tmp_path, scenario, controllers=GC_ONLY)


def test_a_non_blocking_dependent_does_not_hold_its_foreground_owner(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        owner = await role(sim, "owner")
        await make_pod(sim, pod("loose", [ref(owner, block=False)], [HOLD]))
        await make_pod(sim, pod("unset", [ref(owner)], [HOLD]))
        await sim.advance(0)
        await sim.client.delete(ROLES, "owner", "default", propagation="Foreground")
        await sim.advance(0)
        # The owner goes at once; its dependents are still deleted, held by their finalizers.
        assert await fetch(sim, ROLES, "owner") is None
        for name in ("loose", "unset"):
            held = await fetch(sim, PODS, name)
            assert held is not None
            assert held["metadata"]["finalizers"] == [HOLD]
            assert "deletionTimestamp" in held["metadata"]

    simulate(tmp_path, scenario, controllers=GC_ONLY)


# ---- memory ------------------------------------------------------------------------------------


def test_the_graph_holds_a_few_hundred_bytes_a_pod() -> None:
    graph = Graph(lambda node: None, lambda node: None)
    owner = {"metadata": {"uid": sys.intern(str(uuid.uuid4())), "name": "web", "namespace": "ns"}}
    graph.observe("apps/v1", "ReplicaSet", None, owner)
    reference = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "web",
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    pods = [
        {
            "metadata": {
                # Interned, as the shared informers' transform leaves them.
                "uid": sys.intern(str(uuid.uuid4())),
                "name": sys.intern(f"web-{i}"),
                "namespace": "ns",
                "ownerReferences": [reference],
            }
        }
        for i in range(20_000)
    ]
    tracemalloc.start()
    try:
        for obj in pods:
            graph.observe("v1", "Pod", None, obj)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held / len(pods) < 300
    first = graph.nodes[str(pods[0]["metadata"]["uid"])]
    assert first.owners is graph.nodes[str(pods[1]["metadata"]["uid"])].owners
