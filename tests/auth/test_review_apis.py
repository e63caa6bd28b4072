"""The review APIs served as create-only resources (authentication.k8s.io/v1 TokenReview and
SelfSubjectReview, authorization.k8s.io/v1 SubjectAccessReview, LocalSubjectAccessReview,
SelfSubjectAccessReview, SelfSubjectRulesReview), with and without ``--auth``, through HTTP
and the real kubectl, exact outputs."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from taintplane.api.features import FeatureGates
from taintplane.sim.cluster import Cluster, ClusterConfig, running_cluster

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")

TOKENS = 'admin-token,admin,a1,"system:masters"\nalice-token,alice,1001\n'
AUTHZ = "/apis/authorization.k8s.io/v1"
AUTHN = "/apis/authentication.k8s.io/v1"
ALL_RULES = """\
Resources   Non-Resource URLs   Resource Names   Verbs
*.*         []                  []               [*]
            [*]                 []               [*]
"""
OWN_RULES = """\
selfsubjectreviews.authentication.k8s.io        []                  []               [create]
selfsubjectaccessreviews.authorization.k8s.io   []                  []               [create]
selfsubjectrulesreviews.authorization.k8s.io    []                  []               [create]
                                                [/api/*]            []               [get]
                                                [/api]              []               [get]
                                                [/apis/*]           []               [get]
                                                [/apis]             []               [get]
                                                [/healthz]          []               [get]
                                                [/healthz]          []               [get]
                                                [/livez]            []               [get]
                                                [/livez]            []               [get]
                                                [/openapi/*]        []               [get]
                                                [/openapi]          []               [get]
                                                [/readyz]           []               [get]
                                                [/readyz]           []               [get]
                                                [/version/]         []               [get]
                                                [/version/]         []               [get]
                                                [/version]          []               [get]
                                                [/version]          []               [get]
"""
HEADER = (
    "Resources                                       Non-Resource URLs   Resource Names   Verbs\n"
)


class Kubectl:
    def __init__(self, kubeconfig: Path, home: Path) -> None:
        self.env = {"HOME": str(home), "KUBECONFIG": str(kubeconfig), "PATH": os.environ["PATH"]}

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["kubectl", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=60,
            check=False,
        )

    def create(self, obj: dict[str, Any], *args: str) -> dict[str, Any]:
        # --validate=false: kubectl looks for a PATCH operation of the kind in OpenAPI v3 and
        # falls back to v2 (not served) when it finds none, as for every create-only kind.
        done = self.run(
            "create", "--validate=false", "-o", "json", "-f", "-", *args, stdin=json.dumps(obj)
        )
        assert done.returncode == 0, done.stderr
        answer: dict[str, Any] = json.loads(done.stdout)
        return answer


@pytest.fixture(scope="module")
def open_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("open"), components=()) as running:
        yield running


@pytest.fixture(scope="module")
def open_kubectl(open_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    return Kubectl(open_cluster.kubeconfig_path, tmp_path_factory.mktemp("home"))


@pytest.fixture(scope="module")
def auth_kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    """A cluster with ``--auth`` (TLS, tokens, RBAC) serving from a background thread."""
    tmp = tmp_path_factory.mktemp("auth")
    tokens = tmp / "tokens.csv"
    tokens.write_text(TOKENS)
    config = ClusterConfig(
        data_dir=tmp / "data", port=0, features=FeatureGates(), components=(), auth_tokens=tokens
    )
    cluster = Cluster(config, None)
    cluster.bind()
    ready = threading.Event()

    def run() -> None:
        async def main() -> None:
            await cluster.start()
            serving = asyncio.create_task(cluster.serve())
            while not (cluster._server and cluster._server.started) and not serving.done():
                await asyncio.sleep(0.005)  # readiness poll
            ready.set()
            await serving
            await cluster.close()

        asyncio.run(main())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(30)
    yield Kubectl(cluster.kubeconfig_path, tmp)
    cluster.stop()
    thread.join(30)


def _post(cluster: Cluster, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(cluster.url + path, json=body, timeout=10)


# ---- discovery ------------------------------------------------------------------------------


def test_api_resources_lists_the_reviews(open_kubectl: Kubectl) -> None:
    done = open_kubectl.run("api-resources", "--api-group=authorization.k8s.io")
    assert done.stdout.splitlines()[1:] == [
        "localsubjectaccessreviews                authorization.k8s.io/v1   true         "
        "LocalSubjectAccessReview",
        "selfsubjectaccessreviews                 authorization.k8s.io/v1   false        "
        "SelfSubjectAccessReview",
        "selfsubjectrulesreviews                  authorization.k8s.io/v1   false        "
        "SelfSubjectRulesReview",
        "subjectaccessreviews                     authorization.k8s.io/v1   false        "
        "SubjectAccessReview",
    ]
    done = open_kubectl.run("api-resources", "--api-group=authentication.k8s.io")
    assert done.stdout.splitlines()[1:] == [
        "selfsubjectreviews                authentication.k8s.io/v1   false        "
        "SelfSubjectReview",
        "tokenreviews                      authentication.k8s.io/v1   false        TokenReview",
    ]


def test_discovery_serves_the_groups_create_only(open_cluster: Cluster) -> None:
    groups = httpx.get(open_cluster.url + "/apis").json()["groups"]
    names = [g["name"] for g in groups]
    assert "authentication.k8s.io" in names
    assert "authorization.k8s.io" in names
    resources = httpx.get(open_cluster.url + AUTHZ).json()["resources"]
    local = next(r for r in resources if r["name"] == "localsubjectaccessreviews")
    assert local["namespaced"] is True
    assert local["verbs"] == ["create"]
    listed = httpx.get(open_cluster.url + AUTHZ + "/subjectaccessreviews")
    assert listed.status_code == 405


# ---- without --auth: AlwaysAllow, the insecure superuser --------------------------------------


def test_whoami_without_auth_is_the_unsecured_superuser(open_kubectl: Kubectl) -> None:
    done = open_kubectl.run("auth", "whoami")
    assert done.stdout == (
        "ATTRIBUTE   VALUE\n"
        "Username    system:unsecured\n"
        "Groups      [system:masters system:authenticated]\n"
    )


def test_can_i_without_auth_is_always_yes(open_kubectl: Kubectl) -> None:
    done = open_kubectl.run("auth", "can-i", "list", "pods")
    assert (done.returncode, done.stdout) == (0, "yes\n")
    assert open_kubectl.run("auth", "can-i", "--list").stdout == ALL_RULES


def test_access_review_without_auth_allows_with_no_reason(open_cluster: Cluster) -> None:
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"nonResourceAttributes": {"path": "/x", "verb": "get"}},
    }
    response = _post(open_cluster, AUTHZ + "/selfsubjectaccessreviews", body)
    assert response.status_code == 201
    assert response.json() == {
        **body,
        "metadata": {"creationTimestamp": None},
        "status": {"allowed": True},
    }


def test_token_review_without_authenticator_comes_back_as_sent(open_cluster: Cluster) -> None:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "x"}}
    response = _post(open_cluster, AUTHN + "/tokenreviews", body)
    assert response.status_code == 201
    assert response.json() == {**body, "metadata": {"creationTimestamp": None}}
    empty = _post(open_cluster, AUTHN + "/tokenreviews", {**body, "spec": {}})
    assert (empty.status_code, empty.json()["message"]) == (
        400,
        "token is required for TokenReview in authentication",
    )


# ---- validation -----------------------------------------------------------------------------


def test_self_access_review_needs_exactly_one_kind_of_attributes(open_cluster: Cluster) -> None:
    path = AUTHZ + "/selfsubjectaccessreviews"
    kind = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview"}
    neither = _post(open_cluster, path, {**kind, "spec": {}})
    message = (
        'spec.resourceAttributes: Invalid value: "null": exactly one of nonResourceAttributes '
        "or resourceAttributes must be specified"
    )
    assert neither.status_code == 422
    assert neither.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: {message}',
        "reason": "Invalid",
        "details": {
            "group": "authorization.k8s.io",
            "kind": "SelfSubjectAccessReview",
            "causes": [
                {
                    "reason": "FieldValueInvalid",
                    "message": message.split(": ", 1)[1],
                    "field": "spec.resourceAttributes",
                }
            ],
        },
        "code": 422,
    }
    spec = {
        "resourceAttributes": {"verb": "get", "resource": "pods"},
        "nonResourceAttributes": {"path": "/x", "verb": "get"},
    }
    both = _post(open_cluster, path, {**kind, "spec": spec})
    assert both.status_code == 422
    assert both.json()["message"] == (
        'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: '
        'Invalid value: {"Path":"/x","Verb":"get"}: cannot be specified in combination with '
        "resourceAttributes"
    )


def test_subject_access_review_needs_a_user_or_groups(open_cluster: Cluster) -> None:
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "metadata": {"name": "x"},
        "spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}},
    }
    response = _post(open_cluster, AUTHZ + "/subjectaccessreviews", body)
    assert response.status_code == 422
    assert response.json()["message"] == (
        'SubjectAccessReview.authorization.k8s.io "" is invalid: [spec.user: Invalid value: "": '
        "at least one of user or group must be specified, metadata: Invalid value: "
        '{"name":"x","creationTimestamp":null}: must be empty]'
    )


def test_local_access_review_namespace_must_be_the_requests(open_cluster: Cluster) -> None:
    path = AUTHZ + "/namespaces/default/localsubjectaccessreviews"
    body: dict[str, Any] = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "LocalSubjectAccessReview",
        "spec": {"user": "u", "resourceAttributes": {"namespace": "other", "verb": "get"}},
    }
    # The create handler defaults metadata.namespace to the URL's, so validation's
    # "must match metadata.namespace" is what the client sees (the REST storage's 400 "must
    # match namespace" cannot be reached through HTTP).
    response = _post(open_cluster, path, body)
    assert (response.status_code, response.json()["message"]) == (
        422,
        'LocalSubjectAccessReview.authorization.k8s.io "" is invalid: '
        'spec.resourceAttributes.namespace: Invalid value: "other": must match metadata.namespace',
    )
    elsewhere = {**body, "metadata": {"namespace": "other"}}
    response = _post(open_cluster, path, elsewhere)
    assert (response.status_code, response.json()["message"]) == (
        400,
        "the namespace of the provided object does not match the namespace sent on the request",
    )
    body["spec"]["resourceAttributes"]["namespace"] = "default"
    response = _post(open_cluster, path, body)
    assert response.status_code == 201
    assert response.json()["metadata"] == {"namespace": "default", "creationTimestamp": None}
    assert response.json()["status"] == {"allowed": True}


def test_rules_review_needs_a_namespace(open_cluster: Cluster) -> None:
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {}}
    response = _post(open_cluster, AUTHZ + "/selfsubjectrulesreviews", body)
    assert (response.status_code, response.json()["reason"], response.json()["message"]) == (
        400,
        "BadRequest",
        "no namespace on request",
    )


# ---- with --auth: tokens and RBAC ------------------------------------------------------------


def test_whoami_prints_the_tokens_user(auth_kubectl: Kubectl) -> None:
    assert auth_kubectl.run("auth", "whoami", "--token=alice-token").stdout == (
        "ATTRIBUTE   VALUE\nUsername    alice\nUID         1001\nGroups      [system:authenticated]\n"
    )
    assert auth_kubectl.run("auth", "whoami").stdout == (
        "ATTRIBUTE   VALUE\n"
        "Username    admin\n"
        "UID         a1\n"
        "Groups      [system:masters system:authenticated]\n"
    )


def test_can_i_and_the_rules_of_a_user_and_of_an_admin(auth_kubectl: Kubectl) -> None:
    done = auth_kubectl.run("auth", "can-i", "list", "pods", "--token=alice-token")
    assert (done.returncode, done.stdout) == (1, "no\n")
    assert auth_kubectl.run("auth", "can-i", "list", "pods").stdout == "yes\n"
    assert auth_kubectl.run("auth", "can-i", "--list", "--token=alice-token").stdout == (
        HEADER + OWN_RULES
    )
    # system:masters: RBAC's rules for the user (cluster-admin's and system:authenticated's).
    assert auth_kubectl.run("auth", "can-i", "--list").stdout == (
        HEADER
        + "*.*                                             []                  []               [*]\n"
        + "                                                [*]                 []               [*]\n"
        + OWN_RULES
    )


def test_creating_a_review_is_authorized_like_any_create(auth_kubectl: Kubectl) -> None:
    body: dict[str, Any] = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": "alice", "resourceAttributes": {"verb": "get", "resource": "pods"}},
    }
    done = auth_kubectl.run(
        "create", "--validate=false", "--token=alice-token", "-f", "-", stdin=json.dumps(body)
    )
    assert done.stderr == (
        'Error from server (Forbidden): error when creating "STDIN": subjectaccessreviews'
        '.authorization.k8s.io is forbidden: User "alice" cannot create resource '
        '"subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope\n'
    )
    assert auth_kubectl.create(body)["status"] == {"allowed": False}
    body["spec"]["groups"] = ["system:masters"]
    assert auth_kubectl.create(body)["status"] == {"allowed": True}


def test_token_review_authenticates_with_the_token_file(auth_kubectl: Kubectl) -> None:
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview"}
    known = auth_kubectl.create({**review, "spec": {"token": "alice-token"}})
    assert known["status"] == {
        "authenticated": True,
        "user": {"username": "alice", "uid": "1001", "groups": ["system:authenticated"]},
    }
    unknown = auth_kubectl.create({**review, "spec": {"token": "nope"}})
    assert unknown["status"] == {"user": {}, "error": "invalid bearer token"}


def test_rules_review_reports_bindings_to_missing_roles(auth_kubectl: Kubectl) -> None:
    for name, role in (("b1", "nope"), ("b2", "nope2")):
        done = auth_kubectl.run(
            "create", "clusterrolebinding", name, f"--clusterrole={role}", "--user=alice"
        )
        assert done.returncode == 0, done.stderr
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": "default"},
    }
    answer = auth_kubectl.create(body, "--token=alice-token")
    assert answer["spec"] == {}
    assert answer["status"]["incomplete"] is False
    assert answer["status"]["evaluationError"] == (
        '[clusterrole.rbac.authorization.k8s.io "nope" not found, '
        'clusterrole.rbac.authorization.k8s.io "nope2" not found]'
    )
    for name in ("b1", "b2"):
        auth_kubectl.run("delete", "clusterrolebinding", name)
