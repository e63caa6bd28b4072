"""Roles and bindings as kube-apiserver defaults and validates them (pkg/apis/rbac/v1/defaults.go,
pkg/apis/rbac/validation): the exact 422 messages, the defaulted api groups, and a roleRef that
cannot change."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import Kubectl

RBAC = "/apis/rbac.authorization.k8s.io/v1"
ROLES = f"{RBAC}/namespaces/default/roles"
CLUSTER_ROLES = f"{RBAC}/clusterroles"
BINDINGS = f"{RBAC}/namespaces/default/rolebindings"
CLUSTER_BINDINGS = f"{RBAC}/clusterrolebindings"
GROUP = "rbac.authorization.k8s.io"
_names = itertools.count()


@pytest.fixture(scope="module")
def api(cluster: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def _name(prefix: str) -> str:
    return f"{prefix}-{next(_names)}"


def refused(response: httpx.Response, kind: str, name: str) -> list[str]:
    """The 422 in upstream's shape; its causes as ``field: message``."""
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["reason"] == "Invalid"
    assert body["details"]["kind"] == kind
    assert body["message"].startswith(f'{kind}.{GROUP} "{name}" is invalid: ')
    return [f"{c['field']}: {c['message']}" for c in body["details"]["causes"]]


@pytest.mark.parametrize(
    ("rule", "errors"),
    [
        (
            {"apiGroups": [""], "resources": ["pods"]},
            ["rules[0].verbs: Required value: verbs must contain at least one value"],
        ),
        (
            {"resources": ["pods"], "verbs": ["get"]},
            [
                "rules[0].apiGroups: Required value: resource rules must supply at least one "
                "api group"
            ],
        ),
        (
            {"apiGroups": [""], "verbs": ["get"]},
            [
                "rules[0].resources: Required value: resource rules must supply at least one "
                "resource"
            ],
        ),
        (
            {"nonResourceURLs": ["/healthz"], "verbs": ["get"]},
            [
                'rules[0].nonResourceURLs: Invalid value: ["/healthz"]: namespaced rules '
                "cannot apply to non-resource URLs"
            ],
        ),
        (
            {"nonResourceURLs": ["/healthz"], "resources": ["pods"], "verbs": ["get"]},
            [
                'rules[0].nonResourceURLs: Invalid value: ["/healthz"]: namespaced rules '
                "cannot apply to non-resource URLs",
                'rules[0].nonResourceURLs: Invalid value: ["/healthz"]: rules cannot apply to '
                "both regular resources and non-resource URLs",
            ],
        ),
    ],
)
def test_role_rules(api: httpx.Client, rule: dict[str, Any], errors: list[str]) -> None:
    name = _name("role")
    response = api.post(ROLES, json={"metadata": {"name": name}, "rules": [rule]})
    assert refused(response, "Role", name) == errors


def test_cluster_roles_may_name_non_resource_urls_but_not_with_resources(
    api: httpx.Client,
) -> None:
    name = _name("cr")
    urls = {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}
    assert api.post(CLUSTER_ROLES, json={"metadata": {"name": name}, "rules": [urls]}).is_success
    bad = _name("cr")
    both = {**urls, "apiGroups": [""]}
    response = api.post(CLUSTER_ROLES, json={"metadata": {"name": bad}, "rules": [urls, both]})
    assert response.json()["message"] == (
        f'ClusterRole.{GROUP} "{bad}" is invalid: rules[1].nonResourceURLs: Invalid value: '
        '["/metrics"]: rules cannot apply to both regular resources and non-resource URLs'
    )


def test_cluster_role_aggregation_rule_needs_a_selector(api: httpx.Client) -> None:
    name = _name("agg")
    response = api.post(
        CLUSTER_ROLES,
        json={"metadata": {"name": name}, "aggregationRule": {"clusterRoleSelectors": []}},
    )
    assert refused(response, "ClusterRole", name) == [
        "aggregationRule.clusterRoleSelectors: Required value: at least one "
        "clusterRoleSelector required if aggregationRule is non-nil"
    ]


def test_binding_defaults_api_groups(api: httpx.Client) -> None:
    name = _name("rb")
    created = api.post(
        BINDINGS,
        json={
            "metadata": {"name": name},
            "roleRef": {"kind": "Role", "name": "reader"},
            "subjects": [
                {"kind": "User", "name": "alice"},
                {"kind": "Group", "name": "devs"},
                {"kind": "ServiceAccount", "name": "builder", "namespace": "default"},
            ],
        },
    )
    assert created.status_code == 201, created.text
    body = api.get(f"{BINDINGS}/{name}").json()
    assert body["roleRef"] == {"apiGroup": GROUP, "kind": "Role", "name": "reader"}
    assert body["subjects"] == [
        {"kind": "User", "apiGroup": GROUP, "name": "alice"},
        {"kind": "Group", "apiGroup": GROUP, "name": "devs"},
        {"kind": "ServiceAccount", "name": "builder", "namespace": "default"},
    ]


def test_role_binding_errors(api: httpx.Client) -> None:
    name = _name("rb")
    response = api.post(
        BINDINGS,
        json={
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "example.com", "kind": "Secret", "name": "a/b"},
            "subjects": [
                {"kind": "Robot", "name": "r2"},
                {"kind": "ServiceAccount", "name": "Bad_SA", "apiGroup": GROUP},
                {"kind": "User", "name": "bob", "apiGroup": "example.com"},
                {"kind": "Group"},
            ],
        },
    )
    assert refused(response, "RoleBinding", name) == [
        'roleRef.apiGroup: Unsupported value: "example.com": supported values: '
        '"rbac.authorization.k8s.io"',
        'roleRef.kind: Unsupported value: "Secret": supported values: "Role", "ClusterRole"',
        "roleRef.name: Invalid value: \"a/b\": may not contain '/'",
        'subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", '
        '"User", "Group"',
        'subjects[1].name: Invalid value: "Bad_SA": a lowercase RFC 1123 subdomain must '
        "consist of lower case alphanumeric characters, '-' or '.', and must start and end "
        "with an alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        'subjects[1].apiGroup: Unsupported value: "rbac.authorization.k8s.io": supported '
        'values: ""',
        'subjects[2].apiGroup: Unsupported value: "example.com": supported values: '
        '"rbac.authorization.k8s.io"',
        "subjects[3].name: Required value",
    ]


def test_cluster_role_binding_errors(api: httpx.Client) -> None:
    name = _name("crb")
    response = api.post(
        CLUSTER_BINDINGS,
        json={
            "metadata": {"name": name},
            "roleRef": {"kind": "Role"},
            "subjects": [{"kind": "ServiceAccount", "name": "builder"}],
        },
    )
    assert refused(response, "ClusterRoleBinding", name) == [
        'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"',
        "roleRef.name: Required value",
        "subjects[0].namespace: Required value",
    ]


def test_role_ref_cannot_change(api: httpx.Client) -> None:
    name = _name("rb")
    body = {"metadata": {"name": name}, "roleRef": {"kind": "ClusterRole", "name": "view"}}
    assert api.post(BINDINGS, json=body).status_code == 201
    response = api.patch(
        f"{BINDINGS}/{name}",
        json={"roleRef": {"name": "edit"}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    # The internal rbac.RoleRef, printed as JSON with its Go field names: the new value.
    assert response.json()["message"] == (
        f'RoleBinding.{GROUP} "{name}" is invalid: roleRef: Invalid value: '
        '{"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"edit"}: '
        "cannot change roleRef"
    )
    subjects = {"subjects": [{"kind": "User", "name": "carol"}]}
    changed = api.patch(
        f"{BINDINGS}/{name}",
        json=subjects,
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert changed.status_code == 200, changed.text


def test_kubectl_create_reports_the_invalid_binding(kubectl: Kubectl) -> None:
    name = _name("kb")
    manifest = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "view"},
        "subjects": [{"kind": "User", "name": "dave"}],
    }
    done = kubectl.run("create", "-f", "-", stdin=json.dumps(manifest))
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f'The ClusterRoleBinding "{name}" is invalid: roleRef.kind: Unsupported value: "Role": '
        'supported values: "ClusterRole"'
    )
    created = kubectl(
        "create", "clusterrolebinding", name, "--clusterrole=view", "--user=dave", "-o", "json"
    )
    assert json.loads(created)["subjects"] == [{"apiGroup": GROUP, "kind": "User", "name": "dave"}]
