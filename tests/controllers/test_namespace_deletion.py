"""Deleting a namespace, as upstream: the API server marks it Terminating and refuses new
content (NamespaceLifecycle); the namespace controller deletes the content through the API
(graceful pod deletion finished by the kubelet, finalizers honoured), reports what remains
in the namespace's conditions and removes the ``kubernetes`` finalizer once it is empty; the
namespace goes when no finalizer is left. On virtual time."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from taintplane.agents.nodes import NodeShape
from taintplane.client import ApiError, resource
from taintplane.sim.cluster import running_cluster
from tests.conftest import Kubectl
from tests.controllers.harness import Sim, simulate
from tests.scheduler.builders import make_pod

NAMESPACES = resource("", "v1", "namespaces")
PODS = resource("", "v1", "pods")

OK_CONDITIONS = {
    "NamespaceDeletionDiscoveryFailure": (
        "False",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    "NamespaceDeletionGroupVersionParsingFailure": (
        "False",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    "NamespaceDeletionContentFailure": (
        "False",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    "NamespaceContentRemaining": ("False", "ContentRemoved", "All content successfully removed"),
    "NamespaceFinalizersRemaining": (
        "False",
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
    ),
}


def run(tmp_path: Path, scenario: Any) -> None:
    simulate(
        tmp_path,
        scenario,
        components=("controller-manager", "agents"),
        controllers=("namespace-controller",),
        nodes=[NodeShape("node-1")],
    )


async def namespace(sim: Sim, name: str) -> dict[str, Any] | None:
    try:
        return await sim.client.get(NAMESPACES, name)
    except ApiError as error:
        if error.code != 404:
            raise
        return None


def conditions(ns: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {
        c["type"]: (c["status"], c["reason"], c["message"])
        for c in ns["status"].get("conditions") or []
    }


async def create_namespace(sim: Sim, name: str, **metadata: Any) -> None:
    await sim.client.create(NAMESPACES, {"metadata": {"name": name, **metadata}})


def pod_in(namespace: str, name: str = "web", **metadata: Any) -> dict[str, Any]:
    """A pod on node-1 whose containers ignore SIGTERM: the kubelet kills them when the 30 s
    grace period is over."""
    made = make_pod(name, node_name="node-1", namespace=namespace, terminationGracePeriodSeconds=30)
    made["metadata"]["annotations"] = {"sim.taintplane.io/shutdown-seconds": "600"}
    made["metadata"].update(metadata)
    return made


def test_a_namespace_goes_after_its_pods_grace_period(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await create_namespace(sim, "team")
        await sim.create_pod(pod_in("team"))
        await sim.advance_to(10)
        deleting = await sim.client.delete(NAMESPACES, "team")
        assert deleting["status"]["phase"] == "Terminating"
        assert deleting["spec"]["finalizers"] == ["kubernetes"]
        assert deleting["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:10Z"
        assert "deletionGracePeriodSeconds" not in deleting["metadata"]
        # The controller waits 5 s (namespaceDeletionGracePeriod), then deletes the pod
        # gracefully: the kubelet has its 30 s.
        await sim.advance_to(14.9)
        assert await sim.deletion("web", "team") is None
        await sim.advance_to(15)
        assert await sim.deletion("web", "team") == "2026-01-01T00:00:45Z"
        ns = await namespace(sim, "team")
        assert ns is not None
        assert conditions(ns) == {
            **OK_CONDITIONS,
            "NamespaceContentRemaining": (
                "True",
                "SomeResourcesRemain",
                "Some resources are remaining: pods. has 1 resource instances",
            ),
        }
        assert [c["lastTransitionTime"] for c in ns["status"]["conditions"]] == [
            "2026-01-01T00:00:15Z"
        ] * 5
        # Checks again at 20 (its own status update), 36 and 52 (half the 30 s estimate
        # plus one); the kubelet removes the pod at 45.
        await sim.advance_to(45)
        assert await sim.pod("web", "team") is None
        await sim.advance_to(51.9)
        assert await namespace(sim, "team") is not None
        await sim.advance_to(52)
        assert await namespace(sim, "team") is None

    run(tmp_path, scenario)


def test_a_finalizer_on_content_keeps_the_namespace_terminating(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await create_namespace(sim, "team")
        await sim.create_pod(pod_in("team", finalizers=["example.com/hold"]))
        await sim.advance_to(10)
        await sim.client.delete(NAMESPACES, "team")
        await sim.advance_to(120)
        pod = await sim.pod("web", "team")
        assert pod is not None
        assert pod["status"]["phase"] == "Failed"  # killed, kept by its finalizer
        ns = await namespace(sim, "team")
        assert ns is not None
        assert ns["status"]["phase"] == "Terminating"
        assert ns["spec"]["finalizers"] == ["kubernetes"]
        found = conditions(ns)
        assert found["NamespaceFinalizersRemaining"] == (
            "True",
            "SomeFinalizersRemain",
            "Some content in the namespace has finalizers remaining: example.com/hold in 1 "
            "resource instances",
        )
        assert found["NamespaceContentRemaining"] == (
            "True",
            "SomeResourcesRemain",
            "Some resources are remaining: pods. has 1 resource instances",
        )
        await sim.client.patch(PODS, "web", {"metadata": {"finalizers": None}}, namespace="team")
        # Content held by finalizers is looked at again every 15 / 2 + 1 = 8 s.
        await sim.advance(8)
        assert await sim.pod("web", "team") is None
        assert await namespace(sim, "team") is None

    run(tmp_path, scenario)


def test_metadata_finalizers_keep_the_namespace_after_it_is_emptied(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await create_namespace(sim, "held", finalizers=["example.com/ns"])
        await sim.client.delete(NAMESPACES, "held")
        await sim.advance(60)
        ns = await namespace(sim, "held")
        assert ns is not None
        assert ns["spec"] == {}  # the controller finalized it (an empty list is not stored)
        assert ns["metadata"]["finalizers"] == ["example.com/ns"]
        assert ns["status"]["phase"] == "Terminating"
        assert conditions(ns) == OK_CONDITIONS
        await sim.client.patch(NAMESPACES, "held", {"metadata": {"finalizers": None}})
        assert await namespace(sim, "held") is None

    run(tmp_path, scenario)


def test_new_content_in_a_terminating_namespace_is_forbidden(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await create_namespace(sim, "team")
        await sim.create_pod(pod_in("team", finalizers=["example.com/hold"]))
        await sim.client.delete(NAMESPACES, "team")
        with pytest.raises(ApiError) as refused:
            await sim.client.create(PODS, pod_in("team", "late"), namespace="team")
        assert refused.value.status == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": 'pods "late" is forbidden: unable to create new content in namespace '
            "team because it is being terminated",
            "reason": "Forbidden",
            "details": {
                "name": "late",
                "kind": "pods",
                "causes": [
                    {
                        "reason": "NamespaceTerminating",
                        "message": "namespace team is being terminated",
                        "field": "metadata.namespace",
                    }
                ],
            },
            "code": 403,
        }
        # Updates and deletions of what is there are allowed.
        labelled = await sim.client.patch(
            PODS, "web", {"metadata": {"labels": {"a": "b"}}}, namespace="team"
        )
        assert labelled["metadata"]["labels"] == {"a": "b"}
        await sim.client.delete(PODS, "web", "team", grace_period=0)
        # An object without a name yet is named by its generateName.
        unnamed = pod_in("team", "")
        unnamed["metadata"]["generateName"] = "gen-"
        with pytest.raises(ApiError, match=r'^pods "gen-" is forbidden: unable to create new'):
            await sim.client.create(PODS, unnamed, namespace="team")

    run(tmp_path, scenario)


def test_the_default_namespaces_may_not_be_deleted(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        for name in ("default", "kube-system", "kube-public"):
            with pytest.raises(ApiError) as refused:
                await sim.client.delete(NAMESPACES, name)
            status = refused.value.status
            assert (status["code"], status["reason"]) == (403, "Forbidden")
            assert status["message"] == (
                f'namespaces "{name}" is forbidden: this namespace may not be deleted'
            )
            assert status["details"] == {"name": name, "kind": "namespaces"}
            found = await namespace(sim, name)
            assert found is not None
            assert found["status"]["phase"] == "Active"
        # kube-node-lease is not one of them (upstream's immortal namespaces).
        deleting = await sim.client.delete(NAMESPACES, "kube-node-lease")
        assert deleting["status"]["phase"] == "Terminating"

    simulate(tmp_path, scenario, controllers=("namespace-controller",))


def test_kubectl_delete_namespace_waits_until_it_is_gone(tmp_path: Path) -> None:
    """The real kubectl: ``delete ns`` waits for the namespace to disappear (the controller
    starts 5 s after the deletion), and a creation in a namespace held Terminating by a
    finalizer is refused with upstream's message."""
    assert shutil.which("kubectl") is not None, "kubectl is on the CI image"
    with running_cluster(tmp_path / "data", components=("controller-manager",)) as cluster:
        kubectl = Kubectl(cluster.kubeconfig_path, tmp_path)
        kubectl("create", "namespace", "doomed")
        kubectl("apply", "-n", "doomed", "-f", "-", stdin=ROLE)
        done = kubectl.run("delete", "namespace", "doomed", "--timeout=60s")
        assert done.returncode == 0, done.stderr
        assert done.stdout == 'namespace "doomed" deleted\n'
        gone = kubectl.run("get", "namespace", "doomed")
        assert gone.stderr == 'Error from server (NotFound): namespaces "doomed" not found\n'

        kubectl("apply", "-f", "-", stdin=HELD)
        kubectl("delete", "namespace", "held", "--wait=false")
        refused = kubectl.run("apply", "-n", "held", "-f", "-", stdin=ROLE)
        assert refused.returncode == 1
        assert refused.stderr.endswith(
            'roles.rbac.authorization.k8s.io "reader" is forbidden: unable to create new '
            "content in namespace held because it is being terminated\n"
        ), refused.stderr
        kubectl(
            "patch", "namespace", "held", "--type=merge", "-p", '{"metadata":{"finalizers":null}}'
        )
        kubectl("wait", "--for=delete", "namespace/held", "--timeout=60s")
        protected = kubectl.run("delete", "namespace", "kube-system")
        assert protected.stderr == (
            'Error from server (Forbidden): namespaces "kube-system" is forbidden: this '
            "namespace may not be deleted\n"
        )


ROLE = """
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader}
rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]
"""
HELD = """
apiVersion: v1
kind: Namespace
metadata: {name: held, finalizers: [example.com/hold]}
"""
