"""RBAC rule matching and request attributes, table-driven against upstream's semantics."""

from __future__ import annotations

from typing import Any

import pytest

from taintplane.admission.chain import UserInfo
from taintplane.apiserver.auth.attributes import Request, forbidden, request_attributes
from taintplane.apiserver.auth.rules import rule_allows, subject_matches

ALICE = UserInfo("alice", ("devs", "system:authenticated"))


def res(verb: str, resource: str, sub: str = "", name: str = "", group: str = "") -> Request:
    return Request(ALICE, verb, True, group, "v1", resource, sub, "ns", name)


def rule(**kw: Any) -> dict[str, Any]:
    return {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], **kw}


@pytest.mark.parametrize(
    ("the_rule", "request_", "allowed"),
    [
        (rule(), res("get", "pods"), True),
        (rule(), res("list", "pods"), False),
        (rule(verbs=["*"]), res("deletecollection", "pods"), True),
        (rule(), res("get", "pods", "status"), False),
        (rule(resources=["pods/status"]), res("get", "pods", "status"), True),
        (rule(resources=["pods/status"]), res("get", "pods"), False),
        (rule(resources=["*/status"]), res("get", "nodes", "status"), True),
        (rule(resources=["*/status"]), res("get", "nodes"), False),
        (rule(resources=["*"]), res("get", "nodes", "status"), True),
        (rule(), res("get", "pods", group="apps"), False),
        (rule(apiGroups=["*"]), res("get", "pods", group="apps"), True),
        (rule(resourceNames=["p1"]), res("get", "pods", name="p1"), True),
        (rule(resourceNames=["p1"]), res("get", "pods", name="p2"), False),
        (rule(resourceNames=["p1"], verbs=["list"]), res("list", "pods"), False),
        (rule(apiGroups=None), res("get", "pods"), False),
    ],
)
def test_resource_rules(the_rule: dict[str, Any], request_: Request, allowed: bool) -> None:
    assert rule_allows(the_rule, request_) is allowed


@pytest.mark.parametrize(
    ("urls", "path", "allowed"),
    [
        (["/version"], "/version", True),
        (["/version"], "/version/", False),
        (["/apis/*"], "/apis/apps/v1", True),
        (["/apis/*"], "/apis", False),
        (["*"], "/anything", True),
        (["/healthz"], "/healthz/ping", False),
    ],
)
def test_non_resource_urls(urls: list[str], path: str, allowed: bool) -> None:
    request_ = Request(ALICE, "get", False, path=path)
    assert rule_allows({"verbs": ["get"], "nonResourceURLs": urls}, request_) is allowed
    assert not rule_allows({"verbs": ["get"], "apiGroups": ["*"], "resources": ["*"]}, request_)


def test_subjects() -> None:
    assert subject_matches({"kind": "User", "name": "alice"}, ALICE, "")
    assert subject_matches({"kind": "Group", "name": "devs"}, ALICE, "")
    assert not subject_matches({"kind": "Group", "name": "alice"}, ALICE, "")
    sa = UserInfo("system:serviceaccount:ns:robot")
    assert subject_matches({"kind": "ServiceAccount", "name": "robot"}, sa, "ns")
    assert not subject_matches({"kind": "ServiceAccount", "name": "robot"}, sa, "other")


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/namespaces/ns/pods", {}, ("list", "", "pods", "", "ns", "")),
        ("GET", "/api/v1/pods", {"watch": "true"}, ("watch", "", "pods", "", "", "")),
        (
            "GET",
            "/api/v1/nodes",
            {"fieldSelector": "metadata.name=n1", "watch": "1"},
            ("watch", "", "nodes", "", "", "n1"),
        ),
        ("PATCH", "/api/v1/nodes/n1/status", {}, ("patch", "", "nodes", "status", "", "n1")),
        ("GET", "/api/v1/namespaces/ns1", {}, ("get", "", "namespaces", "", "ns1", "ns1")),
        (
            "PUT",
            "/api/v1/namespaces/ns1/finalize",
            {},
            ("update", "", "namespaces", "finalize", "ns1", "ns1"),
        ),
        (
            "DELETE",
            "/apis/apps/v1/namespaces/x/deployments",
            {},
            ("deletecollection", "apps", "deployments", "", "x", ""),
        ),
        (
            "POST",
            "/api/v1/namespaces/x/pods/p/eviction",
            {},
            ("create", "", "pods", "eviction", "x", "p"),
        ),
    ],
)
def test_request_attributes(
    method: str, path: str, query: dict[str, str], expected: tuple[str, ...]
) -> None:
    got = request_attributes(ALICE, method, path, query)
    assert got.resource_request
    assert (
        got.verb,
        got.api_group,
        got.resource,
        got.subresource,
        got.namespace,
        got.name,
    ) == expected


@pytest.mark.parametrize("path", ["/version", "/apis/apps", "/api/v1", "/healthz", "/apis"])
def test_non_resource_requests(path: str) -> None:
    got = request_attributes(ALICE, "GET", path, {})
    assert not got.resource_request
    assert got.verb == "get"


def test_forbidden_messages_are_upstreams() -> None:
    node = Request(UserInfo("alice"), "patch", True, "", "v1", "nodes", name="n1")
    assert forbidden(node).status["message"] == (
        'nodes "n1" is forbidden: User "alice" cannot patch resource "nodes" in API group "" '
        "at the cluster scope"
    )
    pods = request_attributes(UserInfo("bob"), "GET", "/api/v1/namespaces/a/pods", {})
    assert forbidden(pods).status["message"] == (
        'pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the '
        'namespace "a"'
    )
    deploy = request_attributes(
        UserInfo("bob"), "PUT", "/apis/apps/v1/namespaces/a/deployments/d/status", {}
    )
    assert forbidden(deploy, "RBAC: x").status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'deployments.apps "d" is forbidden: User "bob" cannot update resource '
        '"deployments/status" in API group "apps" in the namespace "a": RBAC: x',
        "reason": "Forbidden",
        "details": {"name": "d", "group": "apps", "kind": "deployments"},
        "code": 403,
    }
    path = Request(UserInfo("system:anonymous"), "get", False, path="/api")
    assert forbidden(path).status["message"] == (
        'forbidden: User "system:anonymous" cannot get path "/api"'
    )
