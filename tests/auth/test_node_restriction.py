"""NodeRestriction's decisions and messages (plugin/pkg/admission/noderestriction)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from taintplane.admission.chain import Attributes, Forbidden, UserInfo
from taintplane.admission.node_restriction import NodeRestriction
from taintplane.api.scheme import SCHEME, ResourceType
from tests.admission.support import FakeLookup

NODE = UserInfo("system:node:n1", ("system:nodes", "system:authenticated"))


def _kind(group: str, plural: str) -> ResourceType:
    found = SCHEME.lookup(group, "v1", plural)
    assert found is not None
    return found


NODES = _kind("", "nodes")
PODS = _kind("", "pods")
LEASES = _kind("coordination.k8s.io", "leases")
TAINT = {"key": "dedicated", "value": "a", "effect": "NoSchedule"}


def node(
    name: str = "n1", taints: list[Any] | None = None, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"taints": taints or []}}


def pod(on: str = "n1", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": "p", "labels": labels}, "spec": {"nodeName": on}}


def admit(attributes: Attributes, lookup: FakeLookup | None = None) -> str:
    try:
        asyncio.run(NodeRestriction(lookup or FakeLookup()).admit(attributes))
    except Forbidden as refusal:
        return refusal.reason
    return ""


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        (Attributes("UPDATE", NODES, "", node(), node(), "status", NODE), ""),
        (Attributes("CREATE", NODES, "", node(), None, "", NODE), ""),
        (
            Attributes("UPDATE", NODES, "", node(taints=[TAINT]), node(), "", NODE),
            'node "n1" is not allowed to modify taints',
        ),
        (
            Attributes("UPDATE", NODES, "", node(), node(taints=[TAINT]), "", NODE),
            'node "n1" is not allowed to modify taints',
        ),
        (Attributes("UPDATE", NODES, "", node(labels={"rack": "r2"}), node(), "", NODE), ""),
        (
            Attributes("UPDATE", NODES, "", node("n2"), node("n2"), "status", NODE),
            'node "n1" is not allowed to modify node "n2"',
        ),
        (
            Attributes("CREATE", NODES, "", node("n2"), None, "", NODE),
            'node "n1" is not allowed to modify node "n2"',
        ),
        (
            Attributes(
                "UPDATE",
                NODES,
                "",
                node(labels={"node-role.kubernetes.io/x": ""}),
                node(),
                "",
                NODE,
            ),
            "is not allowed to modify labels: node-role.kubernetes.io/x",
        ),
        (
            Attributes(
                "CREATE",
                NODES,
                "",
                node(
                    labels={"node-restriction.kubernetes.io/a": "b", "kubernetes.io/hostname": "n1"}
                ),
                None,
                "",
                NODE,
            ),
            'node "n1" is not allowed to set the following labels: '
            "node-restriction.kubernetes.io/a",
        ),
        (Attributes("UPDATE", PODS, "ns", pod(), pod(), "status", NODE), ""),
        (
            Attributes("UPDATE", PODS, "ns", pod("n2"), pod("n2"), "status", NODE),
            'node "n1" can only update pod status for pods with spec.nodeName set to itself',
        ),
        (
            Attributes("UPDATE", PODS, "ns", pod(a="b"), pod(), "status", NODE),
            'node "n1" cannot update labels through pod status',
        ),
        (
            Attributes("UPDATE", PODS, "ns", pod(), pod(), "", NODE),
            'unexpected operation "UPDATE", node "n1" can only create and delete mirror pods',
        ),
        (Attributes("DELETE", PODS, "ns", None, pod(), "", NODE), ""),
        (
            Attributes("DELETE", PODS, "ns", None, pod("n2"), "", NODE),
            'node "n1" can only delete pods with spec.nodeName set to itself',
        ),
        (
            Attributes("CREATE", PODS, "ns", pod(), None, "", NODE),
            'pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only '
            "create mirror pods",
        ),
        (Attributes("UPDATE", LEASES, "kube-node-lease", node(), node(), "", NODE), ""),
        (
            Attributes("UPDATE", LEASES, "kube-node-lease", node("n2"), node("n2"), "", NODE),
            "can only access node lease with the same name as the requesting node",
        ),
        (
            Attributes("CREATE", LEASES, "default", node(), None, "", NODE),
            'can only access leases in the "kube-node-lease" system namespace',
        ),
        # Not a node: left alone.
        (Attributes("UPDATE", NODES, "", node("n2", [TAINT]), node("n2"), "", None), ""),
        (
            Attributes("UPDATE", NODES, "", node(taints=[TAINT]), node(), "", UserInfo("alice")),
            "",
        ),
        (
            Attributes(
                "UPDATE", NODES, "", node(), node(), "", UserInfo("system:node:", ("system:nodes",))
            ),
            'could not determine node from user "system:node:"',
        ),
    ],
)
def test_node_restriction(attributes: Attributes, message: str) -> None:
    assert admit(attributes) == message


def _stored_pod(name: str, on: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"nodeName": on},
    }


@pytest.mark.parametrize(
    ("evicted", "message"),
    [
        ("mine", ""),
        ("theirs", "node n1 can only evict pods with spec.nodeName set to itself"),
        ("", "could not determine pod from request data"),
    ],
)
def test_a_node_evicts_only_its_own_pods(evicted: str, message: str) -> None:
    # admitPodEviction: the Eviction names the pod, which must be bound to the node.
    lookup = FakeLookup(_stored_pod("mine", "n1"), _stored_pod("theirs", "n2"))
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": evicted}}
    attributes = Attributes("CREATE", PODS, "ns", eviction, None, "eviction", NODE)
    assert admit(attributes, lookup) == message


def test_resource_slices_of_its_own_node_only() -> None:
    slices = _kind("resource.k8s.io", "resourceslices")
    mine, theirs = ({"spec": {"nodeName": n}} for n in ("n1", "n2"))
    assert admit(Attributes("CREATE", slices, "", mine, None, "", NODE)) == ""
    assert admit(Attributes("CREATE", slices, "", theirs, None, "", NODE)) == (
        "can only create ResourceSlice with the same NodeName as the requesting node"
    )
    assert admit(Attributes("DELETE", slices, "", None, theirs, "", NODE)) == (
        "can only delete ResourceSlice with the same NodeName as the requesting node"
    )
    assert admit(Attributes("UPDATE", slices, "", theirs, theirs, "", NODE)) == ""
