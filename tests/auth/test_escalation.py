"""RBAC privilege-escalation prevention (pkg/registry/rbac/*/policybased, ConfirmNoEscalation),
impersonation of service accounts and anonymous, and Forbidden bodies, through the API
server's HTTP stack with ``--auth`` tokens."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from taintplane.admission.chain import UserInfo
from taintplane.apiserver.app import APIServer
from taintplane.apiserver.auth.rules import breakdown, uncovered
from taintplane.clock import VirtualClock
from taintplane.store.sqlite import SqliteStore

ADMIN, ALICE, BOB = "admin-token", "alice-token", "bob-token"
TOKENS = {
    ADMIN: UserInfo("admin", ("system:masters",), "0"),
    ALICE: UserInfo("alice", (), "1"),
    BOB: UserInfo("bob", (), "2"),
}
RBAC = "/apis/rbac.authorization.k8s.io/v1"
TENANT = f"{RBAC}/namespaces/tenant-a"
REFUSED = 'user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions '
REFUSED += "not currently held:\n"

Call = Callable[..., Awaitable[httpx.Response]]


@asynccontextmanager
async def _api(tmp: Path) -> AsyncIterator[Call]:
    store = await SqliteStore(tmp / "store.db").open()
    server = APIServer(store, VirtualClock(), tokens=TOKENS)
    await server.bootstrap()
    transport = httpx.ASGITransport(app=server.app)
    async with httpx.AsyncClient(transport=transport, base_url="https://test") as http:

        async def call(
            method: str,
            path: str,
            body: Any = None,
            token: str | None = ALICE,
            headers: dict[str, str] | None = None,
            groups: tuple[str, ...] | list[str] = (),
        ) -> httpx.Response:
            sent = list((headers or {}).items())
            sent += [("Impersonate-Group", group) for group in groups]
            if token:
                sent.append(("Authorization", f"Bearer {token}"))
            if method == "PATCH":
                sent.append(("Content-Type", "application/merge-patch+json"))
            return await http.request(method, path, json=body, headers=sent)

        await call("POST", "/api/v1/namespaces", {"metadata": {"name": "tenant-a"}}, ADMIN)
        await call("POST", "/api/v1/namespaces", {"metadata": {"name": "tenant-b"}}, ADMIN)
        made = await call("POST", f"{TENANT}/rolebindings", binding("alice-admin", "admin"), ADMIN)
        assert made.status_code == 201, made.text
        try:
            yield call
        finally:
            await server.close()
            await store.close()


def run(tmp: Path, scenario: Callable[[Call], Awaitable[None]]) -> None:
    async def main() -> None:
        async with _api(tmp) as call:
            await scenario(call)

    asyncio.run(main())


def binding(name: str, role: str, kind: str = "ClusterRole", user: str = "alice") -> Any:
    return {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }


def role(name: str, *rules: Any, **extra: Any) -> Any:
    return {"metadata": {"name": name}, "rules": list(rules), **extra}


def rule(verbs: list[str], resources: list[str], groups: list[str] | None = None, **kw: Any) -> Any:
    return {
        "verbs": verbs,
        "apiGroups": [""] if groups is None else groups,
        "resources": resources,
        **kw,
    }


def refusal(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json()["message"]


def test_a_namespace_admin_cannot_bind_cluster_admin(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        response = await call(
            "POST", f"{TENANT}/rolebindings", binding("esc-bind", "cluster-admin")
        )
        assert response.json() == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": 'rolebindings.rbac.authorization.k8s.io "esc-bind" is forbidden: '
            + REFUSED
            + '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n'
            + '{NonResourceURLs:["*"], Verbs:["*"]}',
            "reason": "Forbidden",
            "details": {
                "name": "esc-bind",
                "group": "rbac.authorization.k8s.io",
                "kind": "rolebindings",
            },
            "code": 403,
        }
        # Roles whose rules she holds she may bind: view and edit are within admin.
        for name in ("view", "edit"):
            made = await call("POST", f"{TENANT}/rolebindings", binding(f"b-{name}", name))
            assert made.status_code == 201, made.text
        # A role that does not exist is the registry's 404.
        missing = await call("POST", f"{TENANT}/rolebindings", binding("b", "nope", "Role"))
        assert refusal(missing) == (404, 'roles.rbac.authorization.k8s.io "nope" not found')

    run(tmp_path, scenario)


def test_bind_on_the_role_allows_binding_it(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        binder = role(
            "binder",
            rule(
                ["bind"], ["clusterroles"], ["rbac.authorization.k8s.io"], resourceNames=["other"]
            ),
        )
        assert (await call("POST", f"{TENANT}/roles", binder, ADMIN)).status_code == 201
        await call(
            "POST", f"{TENANT}/rolebindings", binding("alice-binds", "binder", "Role"), ADMIN
        )
        # resourceNames apply: bind on "other" is not bind on cluster-admin.
        refused = await call("POST", f"{TENANT}/rolebindings", binding("esc-bind", "cluster-admin"))
        assert refused.status_code == 403
        binder["rules"][0]["resourceNames"] = ["cluster-admin"]
        replaced = await call("PUT", f"{TENANT}/roles/binder", binder, ADMIN)
        assert replaced.status_code == 200, replaced.text
        made = await call("POST", f"{TENANT}/rolebindings", binding("esc-bind", "cluster-admin"))
        assert made.status_code == 201, made.text
        # Only in that namespace: as admin of tenant-b too, she may not bind it there.
        admin_b = binding("alice-admin", "admin")
        await call("POST", f"{RBAC}/namespaces/tenant-b/rolebindings", admin_b, ADMIN)
        elsewhere = await call(
            "POST", f"{RBAC}/namespaces/tenant-b/rolebindings", binding("esc2", "cluster-admin")
        )
        assert elsewhere.status_code == 403

    run(tmp_path, scenario)


def test_a_role_with_rules_not_held_is_refused_unless_escalate(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        esc = role(
            "esc",
            rule(["get", "list"], ["nodes"], ["", "apps"]),
            {"verbs": ["get"], "nonResourceURLs": ["/metrics"]},
            rule(["get"], ["pods"]),
        )
        refused = await call("POST", f"{TENANT}/roles", esc)
        assert refusal(refused) == (
            403,
            'roles.rbac.authorization.k8s.io "esc" is forbidden: '
            + REFUSED
            + '{APIGroups:[""], Resources:["nodes"], Verbs:["get" "list"]}\n'
            + '{APIGroups:["apps"], Resources:["nodes"], Verbs:["get" "list"]}\n'
            + '{NonResourceURLs:["/metrics"], Verbs:["get"]}',
        )
        held = await call("POST", f"{TENANT}/roles", role("pods", rule(["get"], ["pods"])))
        assert held.status_code == 201, held.text
        # Raising a role's rules on update is refused too; resourceNames are kept apart.
        raised = role("pods", rule(["get"], ["secrets", "nodes"], resourceNames=["a", "b"]))
        updated = await call("PUT", f"{TENANT}/roles/pods", raised)
        assert refusal(updated)[1].endswith(
            '{APIGroups:[""], Resources:["nodes"], ResourceNames:["a"], Verbs:["get"]}\n'
            '{APIGroups:[""], Resources:["nodes"], ResourceNames:["b"], Verbs:["get"]}'
        )
        escalate = role("escalator", rule(["escalate"], ["roles"], ["rbac.authorization.k8s.io"]))
        await call("POST", f"{TENANT}/roles", escalate, ADMIN)
        grant = binding("alice-escalates", "escalator", "Role")
        await call("POST", f"{TENANT}/rolebindings", grant, ADMIN)
        # (A namespaced role with nonResourceURLs is invalid: refused as an escalation first,
        # since the check runs before validation, as upstream's storage does.)
        del esc["rules"][1]
        made = await call("POST", f"{TENANT}/roles", esc)
        assert made.status_code == 201, made.text

    run(tmp_path, scenario)


def test_resolution_errors_follow_the_missing_rights(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        ghost = binding("ghost", "ghost", "Role")
        assert (await call("POST", f"{TENANT}/rolebindings", ghost, ADMIN)).status_code == 201
        refused = await call("POST", f"{TENANT}/roles", role("esc", rule(["get"], ["nodes"])))
        assert refusal(refused)[1].endswith(
            '{APIGroups:[""], Resources:["nodes"], Verbs:["get"]}'
            '; resolution errors: [roles.rbac.authorization.k8s.io "ghost" not found]'
        )

    run(tmp_path, scenario)


def test_cluster_scoped_writes_and_aggregation(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        writer = role(
            "rbac-writer",
            rule(["create", "update"], ["clusterroles", "clusterrolebindings"], ["*"]),
            rule(["get"], ["pods"]),
        )
        await call("POST", f"{RBAC}/clusterroles", writer, ADMIN)
        await call(
            "POST", f"{RBAC}/clusterrolebindings", binding("bob", "rbac-writer", user="bob"), ADMIN
        )
        crb = await call(
            "POST", f"{RBAC}/clusterrolebindings", binding("esc", "cluster-admin"), BOB
        )
        assert refusal(crb)[1].startswith(
            'clusterrolebindings.rbac.authorization.k8s.io "esc" is forbidden: user "bob" '
            '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not '
            "currently held:\n"
        )
        ok = await call("POST", f"{RBAC}/clusterroles", role("pods", rule(["get"], ["pods"])), BOB)
        assert ok.status_code == 201, ok.text
        aggregated = role(
            "agg", aggregationRule={"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}
        )
        refused = await call("POST", f"{RBAC}/clusterroles", aggregated, BOB)
        assert refusal(refused) == (
            403,
            'clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin '
            "privileges to use the aggregationRule",
        )
        # An unnamed object (generateName) is refused without a name, as NewForbidden words it.
        unnamed = {"metadata": {"generateName": "esc-"}, "rules": [rule(["*"], ["nodes"])]}
        anonymous = await call("POST", f"{RBAC}/clusterroles", unnamed, BOB)
        assert refusal(anonymous)[1].startswith(
            "clusterroles.rbac.authorization.k8s.io is forbidden: user"
        )

    run(tmp_path, scenario)


def test_changing_only_gc_fields_needs_no_grant(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        big = binding("big", "cluster-admin", user="carol")
        assert (await call("POST", f"{TENANT}/rolebindings", big, ADMIN)).status_code == 201
        finalizers = {"metadata": {"finalizers": ["example.com/hold"]}}
        held = await call("PATCH", f"{TENANT}/rolebindings/big", finalizers)
        assert held.status_code == 200, held.text
        labelled = await call(
            "PATCH", f"{TENANT}/rolebindings/big", {"metadata": {"labels": {"a": "b"}}}
        )
        assert refusal(labelled)[0] == 403
        assert refusal(labelled)[1].startswith(
            'rolebindings.rbac.authorization.k8s.io "big" is forbidden: ' + REFUSED
        )

    run(tmp_path, scenario)


FORBIDDEN_API = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": 'forbidden: User "system:anonymous" cannot get path "/api"',
    "reason": "Forbidden",
    "details": {},
    "code": 403,
}


def test_a_forbidden_path_has_empty_details(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        response = await call("GET", "/api", token=None)
        assert response.status_code == 403
        assert response.json() == FORBIDDEN_API
        assert list(response.json()) == list(FORBIDDEN_API)  # details before code

    run(tmp_path, scenario)


def test_impersonated_groups(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        def as_(user: str, *groups: str) -> dict[str, Any]:
            return {"headers": {"Impersonate-User": user}, "groups": groups}

        unauthenticated = await call(
            "GET", "/api", token=ADMIN, **as_("bob", "system:unauthenticated")
        )
        assert refusal(unauthenticated) == (403, 'forbidden: User "bob" cannot get path "/api"')
        assert (await call("GET", "/api", token=ADMIN, **as_("bob"))).status_code == 200
        assert (await call("GET", "/api", token=ADMIN, **as_("bob", "devs"))).status_code == 200
        anonymous = await call("GET", "/api", token=ADMIN, **as_("system:anonymous"))
        assert anonymous.json() == FORBIDDEN_API
        # system:unauthenticated is added: the public-info-viewer binding applies.
        version = await call("GET", "/version", token=ADMIN, **as_("system:anonymous", "x"))
        assert version.status_code == 200

    run(tmp_path, scenario)


def test_impersonating_a_service_account(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        robot = {"Impersonate-User": "system:serviceaccount:tenant-a:robot"}
        # The bootstrap edit role (within alice's admin) may impersonate service accounts of
        # the namespace: the check is on serviceaccounts, not users.
        group_view = binding("sa-view", "view")
        group_view["subjects"] = [
            {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Group",
                "name": "system:serviceaccounts:tenant-a",
            }
        ]
        await call("POST", f"{TENANT}/rolebindings", group_view, ADMIN)
        pods = "/api/v1/namespaces/tenant-a/pods"
        listed = await call("GET", pods, headers=robot)
        assert listed.status_code == 200, listed.text
        # With groups given, the service-account groups are not added.
        devs = await call("GET", pods, token=ADMIN, headers=robot, groups=["devs"])
        assert refusal(devs) == (
            403,
            'pods is forbidden: User "system:serviceaccount:tenant-a:robot" cannot list resource '
            '"pods" in API group "" in the namespace "tenant-a"',
        )
        other = {"Impersonate-User": "system:serviceaccount:tenant-b:robot"}
        refused = await call("GET", pods, headers=other)
        assert refused.json()["message"] == (
            'serviceaccounts "robot" is forbidden: User "alice" cannot impersonate resource '
            '"serviceaccounts" in API group "" in the namespace "tenant-b"'
        )
        assert refused.json()["details"] == {"name": "robot", "kind": "serviceaccounts"}
        user = await call("GET", pods, headers={"Impersonate-User": "bob"})
        assert refusal(user) == (
            403,
            'users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API '
            'group "" at the cluster scope',
        )
        # A malformed service-account name is a plain user name.
        odd = await call("GET", pods, headers={"Impersonate-User": "system:serviceaccount:a:b:c"})
        assert refusal(odd)[1].startswith('users "system:serviceaccount:a:b:c" is forbidden')

    run(tmp_path, scenario)


@pytest.mark.parametrize(
    ("owner", "servant", "missing"),
    [
        ([rule(["*"], ["*"], ["*"])], [rule(["get"], ["pods/log"], ["apps"])], []),
        ([rule(["get"], ["*/status"])], [rule(["get"], ["nodes/status", "nodes"])], [1]),
        ([rule(["get"], ["pods"])], [rule(["get"], ["pods"], resourceNames=["a"])], []),
        ([rule(["get"], ["pods"], resourceNames=["a"])], [rule(["get"], ["pods"])], [0]),
        (
            [{"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}],
            [{"verbs": ["get", "put"], "nonResourceURLs": ["/apis/x", "/api"]}],
            [1, 2, 3],
        ),
        ([rule(["get"], ["pods"])], [rule(["get"], [])], []),
    ],
)
def test_covers(owner: list[Any], servant: list[Any], missing: list[int]) -> None:
    """component-helpers' Covers: what is left are the servant's broken-down rules no owner
    rule covers whole."""
    atoms = [atom for r in servant for atom in breakdown(r)]
    assert uncovered(owner, servant) == [atoms[i] for i in missing]
