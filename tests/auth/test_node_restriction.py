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


def admit(attributes: Attributes) -> str:
    try:
        asyncio.run(NodeRestriction(FakeLookup()).admit(attributes))
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
