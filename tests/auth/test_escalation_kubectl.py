"""Privilege escalation and impersonation with the real kubectl against `taintplane up
--auth`: a namespace admin cannot bind cluster-admin until granted `bind` on it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from tests.auth.test_kubectl_tls import TOKENS, Server, _start, _stop

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("escalation")
    tokens = tmp / "tokens.csv"
    tokens.write_text(TOKENS)
    running = _start(tmp, tokens)
    yield running
    _stop(running)


def test_a_namespace_admin_cannot_bind_cluster_admin(server: Server) -> None:
    server.ok("create", "namespace", "tenant-a")
    server.ok(
        "create", "rolebinding", "alice-admin", "-n", "tenant-a", "--clusterrole=admin",
        "--user=alice",
    )  # fmt: skip
    escalate = (
        "create", "rolebinding", "esc-bind", "-n", "tenant-a", "--clusterrole=cluster-admin",
        "--user=alice",
    )  # fmt: skip
    refused = server.kubectl(*escalate, token="alice-token")
    assert refused.returncode == 1
    assert refused.stderr == (
        "error: failed to create rolebinding: "
        'rolebindings.rbac.authorization.k8s.io "esc-bind" is forbidden: user "alice" '
        '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not '
        "currently held:\n"
        '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n'
        '{NonResourceURLs:["*"], Verbs:["*"]}\n'
    )
    role = server.kubectl(
        "create", "role", "esc", "-n", "tenant-a", "--verb=get,list", "--resource=nodes",
        token="alice-token",
    )  # fmt: skip
    assert role.stderr == (
        "Error from server (Forbidden): "
        'roles.rbac.authorization.k8s.io "esc" is forbidden: user "alice" '
        '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not '
        "currently held:\n"
        '{APIGroups:[""], Resources:["nodes"], Verbs:["get" "list"]}\n'
    )
    server.ok(
        "create", "role", "binder", "-n", "tenant-a", "--verb=bind",
        "--resource=clusterroles.rbac.authorization.k8s.io", "--resource-name=cluster-admin",
    )  # fmt: skip
    server.ok(
        "create", "rolebinding", "alice-binds", "-n", "tenant-a", "--role=binder",
        "--user=alice",
    )  # fmt: skip
    made = server.ok(*escalate, token="alice-token")
    assert made == "rolebinding.rbac.authorization.k8s.io/esc-bind created\n"


def test_impersonating_with_system_unauthenticated(server: Server) -> None:
    done = server.kubectl(
        "get", "--raw", "/api", "--as", "bob", "--as-group", "system:unauthenticated"
    )
    assert done.returncode == 1
    assert done.stderr == (
        'Error from server (Forbidden): forbidden: User "bob" cannot get path "/api"\n'
    )
    robot = server.kubectl("get", "pods", "-n", "x", "--as=system:serviceaccount:x:robot")
    assert robot.stderr == (
        'Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:x:robot" '
        'cannot list resource "pods" in API group "" in the namespace "x"\n'
    )
