"""The Node authorizer through the API server with ``--auth`` tokens (kube-apiserver's
``--authorization-mode=Node,RBAC``): what ``system:node:node-1`` may read and write, and
upstream's 403 messages for the rest."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from taintplane.admission.chain import UserInfo
from taintplane.apiserver.app import APIServer
from taintplane.clock import VirtualClock
from taintplane.store.sqlite import SqliteStore

ADMIN, NODE = "admin-token", "n1token"
TOKENS = {
    ADMIN: UserInfo("admin", ("system:masters",), "0"),
    NODE: UserInfo("system:node:node-1", ("system:nodes",), "1"),
    "anonymous-node": UserInfo("system:node:", ("system:nodes",), "2"),
}
WHO = 'User "system:node:node-1" cannot'
UNRELATED = "no relationship found between node 'node-1' and this object"

Call = Callable[..., Awaitable[httpx.Response]]


@asynccontextmanager
async def _api(tmp: Path) -> AsyncIterator[Call]:
    store = await SqliteStore(tmp / "store.db").open()
    server = APIServer(store, VirtualClock(), tokens=TOKENS)
    await server.bootstrap()
    transport = httpx.ASGITransport(app=server.app)
    async with httpx.AsyncClient(transport=transport, base_url="https://test") as http:

        async def call(
            method: str, path: str, body: Any = None, token: str = NODE, **params: str
        ) -> httpx.Response:
            headers = {"Authorization": f"Bearer {token}"}
            if method == "PATCH":
                headers["Content-Type"] = "application/merge-patch+json"
            return await http.request(method, path, json=body, headers=headers, params=params)

        try:
            yield call
        finally:
            await server.close()
            await store.close()


def run(tmp: Path, scenario: Callable[[Call], Awaitable[None]]) -> None:
    async def main() -> None:
        async with _api(tmp) as call:
            await _seed(call)
            await scenario(call)

    asyncio.run(main())


def pod(name: str, node: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}], **spec},
    }


def resource_slice(name: str, node: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0"}],
        },
    }


async def _seed(call: Call) -> None:
    """Nodes node-1 and node-2, a pod on each (the one on node-1 using a claim and a secret),
    their slices: written by the administrator."""
    for name in ("node-1", "node-2"):
        created = await call("POST", "/api/v1/nodes", {"metadata": {"name": name}}, ADMIN)
        assert created.status_code == 201, created.text
    mine = pod(
        "mine",
        "node-1",
        resourceClaims=[{"name": "gpu", "resourceClaimName": "my-claim"}],
        volumes=[{"name": "s", "secret": {"secretName": "my-secret"}}],
    )
    for body in (mine, pod("theirs", "node-2"), pod("pending", "")):
        if not body["spec"]["nodeName"]:
            del body["spec"]["nodeName"]
        created = await call("POST", "/api/v1/namespaces/default/pods", body, ADMIN)
        assert created.status_code == 201, created.text
    for claim in ("my-claim", "their-claim"):
        body = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": claim},
            "spec": {},
        }
        path = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
        assert (await call("POST", path, body, ADMIN)).status_code == 201
    for name, node in (("node-1-gpu", "node-1"), ("node-2-gpu", "node-2")):
        path = "/apis/resource.k8s.io/v1/resourceslices"
        created = await call("POST", path, resource_slice(name, node), ADMIN)
        assert created.status_code == 201, created.text


def refusal(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json().get("message", "")


PODS = "/api/v1/namespaces/default/pods"


def test_pods_only_its_own_and_only_with_its_field_selector(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        for path, where in (
            ("/api/v1/pods", "at the cluster scope"),
            (PODS, 'in the namespace "default"'),
        ):
            assert refusal(await call("GET", path)) == (
                403,
                f'pods is forbidden: {WHO} list resource "pods" in API group "" {where}: can '
                "only list/watch pods with spec.nodeName field selector",
            )
        watch = await call("GET", "/api/v1/pods", watch="true")
        assert refusal(watch)[0] == 403
        assert "cannot watch resource" in refusal(watch)[1]
        # Another node's name in the selector is no better.
        assert refusal(await call("GET", PODS, fieldSelector="spec.nodeName=node-2"))[0] == 403
        listed = await call("GET", "/api/v1/pods", fieldSelector="spec.nodeName=node-1")
        assert listed.status_code == 200
        assert [p["metadata"]["name"] for p in listed.json()["items"]] == ["mine"]
        both = "status.phase!=Failed,spec.nodeName==node-1"
        assert (await call("GET", PODS, fieldSelector=both)).status_code == 200
        # A pod bound to it, by name; not another node's, a pending or an unknown one.
        assert (await call("GET", f"{PODS}/mine")).status_code == 200
        for name in ("theirs", "pending", "nobody"):
            assert refusal(await call("GET", f"{PODS}/{name}")) == (
                403,
                f'pods "{name}" is forbidden: {WHO} get resource "pods" in API group "" in '
                f'the namespace "default": {UNRELATED}',
            )
        # One pod by metadata.name is authorized as a get of it.
        assert (await call("GET", PODS, fieldSelector="metadata.name=mine")).status_code == 200
        by_name = await call("GET", PODS, fieldSelector="metadata.name=theirs")
        assert refusal(by_name)[1].endswith(UNRELATED)

    run(tmp_path, scenario)


def test_nodes_only_its_own(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        assert refusal(await call("GET", "/api/v1/nodes")) == (
            403,
            f'nodes is forbidden: {WHO} list resource "nodes" in API group "" at the cluster '
            "scope: node 'node-1' cannot read all nodes, only its own Node object",
        )
        assert refusal(await call("GET", "/api/v1/nodes/node-2")) == (
            403,
            f'nodes "node-2" is forbidden: {WHO} get resource "nodes" in API group "" at the '
            "cluster scope: node 'node-1' cannot read 'node-2', only its own Node object",
        )
        assert (await call("GET", "/api/v1/nodes/node-1")).status_code == 200
        own = await call("GET", "/api/v1/nodes", fieldSelector="metadata.name=node-1")
        assert [n["metadata"]["name"] for n in own.json()["items"]] == ["node-1"]
        # Writes are authorized for any node; NodeRestriction keeps it to its own.
        other = await call("PATCH", "/api/v1/nodes/node-2", {"metadata": {"labels": {"a": "b"}}})
        assert refusal(other) == (
            403,
            'nodes "node-2" is forbidden: node "node-1" is not allowed to modify node "node-2"',
        )
        status = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
        assert (await call("PATCH", "/api/v1/nodes/node-1/status", status)).status_code == 200
        # Deleting a Node is nobody's business but the administrator's.
        deleted = await call("DELETE", "/api/v1/nodes/node-1")
        assert refusal(deleted) == (
            403,
            f'nodes "node-1" is forbidden: {WHO} delete resource "nodes" in API group "" at '
            "the cluster scope",
        )

    run(tmp_path, scenario)


LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"


def test_its_own_lease_only(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        lease = {"metadata": {"name": "node-1"}, "spec": {"holderIdentity": "node-1"}}
        assert (await call("POST", LEASES, lease)).status_code == 201
        assert (await call("GET", f"{LEASES}/node-1")).status_code == 200
        renewed = {"spec": {"leaseDurationSeconds": 40}}
        assert (await call("PATCH", f"{LEASES}/node-1", renewed)).status_code == 200
        assert refusal(await call("GET", f"{LEASES}/node-2")) == (
            403,
            f'leases.coordination.k8s.io "node-2" is forbidden: {WHO} get resource "leases" '
            'in API group "coordination.k8s.io" in the namespace "kube-node-lease": can only '
            "access node lease with the same name as the requesting node",
        )
        assert refusal(await call("GET", LEASES))[1].endswith(
            "can only get, create, update, patch, or delete a node lease"
        )
        other = "/apis/coordination.k8s.io/v1/namespaces/default/leases/node-1"
        assert refusal(await call("GET", other))[1].endswith(
            'can only access leases in the "kube-node-lease" system namespace'
        )
        # Another node's lease by create: NodeRestriction reads the name from the body.
        theirs = {"metadata": {"name": "node-2"}, "spec": {}}
        assert refusal(await call("POST", LEASES, theirs))[1].endswith(
            "can only access node lease with the same name as the requesting node"
        )

    run(tmp_path, scenario)


CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"


def test_what_its_pods_reference_and_nothing_else(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        assert (await call("GET", f"{CLAIMS}/my-claim")).status_code == 200
        assert refusal(await call("GET", f"{CLAIMS}/their-claim")) == (
            403,
            'resourceclaims.resource.k8s.io "their-claim" is forbidden: '
            f'{WHO} get resource "resourceclaims" in API group "resource.k8s.io" in the '
            f'namespace "default": {UNRELATED}',
        )
        assert refusal(await call("GET", CLAIMS))[1].endswith(
            "can only get individual resources of this type"
        )
        # Its pod's secret is authorized (taintplane serves no Secrets: 404), another not.
        assert (
            await call("GET", "/api/v1/namespaces/default/secrets/my-secret")
        ).status_code == 404
        other = await call("GET", "/api/v1/namespaces/default/secrets/other")
        assert refusal(other)[1].endswith(UNRELATED)
        assert refusal(await call("GET", "/api/v1/namespaces/default/secrets"))[1].endswith(
            "No Object name found"
        )
        # Kinds without a rule for nodes: RBAC's plain refusal.
        assert refusal(await call("GET", "/api/v1/namespaces")) == (
            403,
            f'namespaces is forbidden: {WHO} list resource "namespaces" in API group "" at '
            "the cluster scope",
        )
        # What NodeRules give every node: events, for one.
        event = {
            "metadata": {"name": "e1"},
            "involvedObject": {"kind": "Node", "name": "node-1"},
            "reason": "Starting",
            "message": "m",
        }
        created = await call("POST", "/api/v1/namespaces/default/events", event)
        assert created.status_code == 201, created.text

    run(tmp_path, scenario)


def test_resource_slices_of_its_own(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        assert refusal(await call("GET", SLICES)) == (
            403,
            f'resourceslices.resource.k8s.io is forbidden: {WHO} list resource "resourceslices" '
            'in API group "resource.k8s.io" at the cluster scope: can only '
            "list/watch/deletecollection resourceslices with nodeName field selector",
        )
        own = await call("GET", SLICES, fieldSelector="spec.nodeName=node-1")
        assert [s["metadata"]["name"] for s in own.json()["items"]] == ["node-1-gpu"]
        assert (await call("GET", f"{SLICES}/node-1-gpu")).status_code == 200
        assert refusal(await call("GET", f"{SLICES}/node-2-gpu"))[1].endswith(UNRELATED)
        assert refusal(await call("DELETE", f"{SLICES}/node-2-gpu"))[1].endswith(UNRELATED)
        created = await call("POST", SLICES, resource_slice("node-2-x", "node-2"))
        assert refusal(created) == (
            403,
            'resourceslices.resource.k8s.io "node-2-x" is forbidden: can only create '
            "ResourceSlice with the same NodeName as the requesting node",
        )
        assert (await call("POST", SLICES, resource_slice("node-1-x", "node-1"))).status_code == 201
        assert (await call("DELETE", f"{SLICES}/node-1-x")).status_code == 200

    run(tmp_path, scenario)


def test_pod_status_may_not_rename_claims(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        status = {"status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "x"}]}}
        assert refusal(await call("PATCH", f"{PODS}/mine/status", status)) == (
            403,
            'pods "mine" is forbidden: node "node-1" cannot update resource claim statues',
        )
        phase = {"status": {"phase": "Running"}}
        assert (await call("PATCH", f"{PODS}/mine/status", phase)).status_code == 200

    run(tmp_path, scenario)


def test_an_unnamed_node_gets_nothing(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        response = await call("GET", "/api/v1/nodes/node-1", token="anonymous-node")
        assert refusal(response) == (
            403,
            'nodes "node-1" is forbidden: User "system:node:" cannot get resource "nodes" in '
            'API group "" at the cluster scope: unknown node for user "system:node:"',
        )

    run(tmp_path, scenario)


REVIEWS = "/apis/authorization.k8s.io/v1"


def test_access_reviews_ask_the_node_authorizer(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        def review(**attributes: Any) -> dict[str, Any]:
            return {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": {
                    "user": "system:node:node-1",
                    "groups": ["system:nodes", "system:authenticated"],
                    "resourceAttributes": {"verb": "list", "resource": "pods", **attributes},
                },
            }

        denied = await call("POST", f"{REVIEWS}/subjectaccessreviews", review(), ADMIN)
        assert denied.json()["status"] == {
            "allowed": False,
            "reason": "can only list/watch pods with spec.nodeName field selector",
        }
        selected = review(fieldSelector={"rawSelector": "spec.nodeName=node-1"})
        allowed = await call("POST", f"{REVIEWS}/subjectaccessreviews", selected, ADMIN)
        assert allowed.json()["status"]["allowed"] is True
        requirement = {"key": "spec.nodeName", "operator": "In", "values": ["node-1"]}
        selected = review(fieldSelector={"requirements": [requirement]})
        allowed = await call("POST", f"{REVIEWS}/subjectaccessreviews", selected, ADMIN)
        assert allowed.json()["status"]["allowed"] is True
        rules = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectRulesReview",
            "spec": {"namespace": "default"},
        }
        status = (await call("POST", f"{REVIEWS}/selfsubjectrulesreviews", rules)).json()["status"]
        assert status["incomplete"] is True
        assert status["evaluationError"] == "node authorizer does not support user rule resolution"

    run(tmp_path, scenario)


def test_every_reference_of_its_pods(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        body = pod(
            "refs",
            "node-1",
            serviceAccountName="runner",
            containers=[
                {
                    "name": "c",
                    "image": "i",
                    "envFrom": [{"configMapRef": {"name": "env-cm"}}],
                    "env": [
                        {"name": "A", "valueFrom": {"secretKeyRef": {"name": "env-s", "key": "k"}}}
                    ],
                }
            ],
            volumes=[
                {"name": "data", "persistentVolumeClaim": {"claimName": "data-pvc"}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                {
                    "name": "proj",
                    "projected": {"sources": [{"configMap": {"name": "proj-cm"}}]},
                },
            ],
        )
        mirror = pod("static", "node-1", volumes=[{"name": "s", "secret": {"secretName": "mir"}}])
        mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "x"}
        for created in (body, mirror):
            response = await call("POST", PODS, created, ADMIN)
            assert response.status_code == 201, response.text
        core = "/api/v1/namespaces/default"
        # Authorized, then not found: taintplane serves none of these kinds.
        for path in (
            f"{core}/configmaps/env-cm",
            f"{core}/configmaps/proj-cm",
            f"{core}/secrets/env-s",
            f"{core}/persistentvolumeclaims/data-pvc",
            f"{core}/persistentvolumeclaims/refs-scratch",
        ):
            assert (await call("GET", path)).status_code == 404, path
        token = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
        assert (
            await call("POST", f"{core}/serviceaccounts/runner/token", token)
        ).status_code == 404
        for path in (
            f"{core}/configmaps/other",
            f"{core}/persistentvolumeclaims/other",
            f"{core}/secrets/mir",  # a mirror pod grants nothing
            "/api/v1/persistentvolumes/pv-1",
        ):
            assert refusal(await call("GET", path))[1].endswith(UNRELATED), path
        other_token = f"{core}/serviceaccounts/default/token"
        assert refusal(await call("POST", other_token, token))[1].endswith(UNRELATED)
        assert refusal(await call("GET", f"{core}/serviceaccounts/runner"))[1].endswith(
            "can only create tokens for individual service accounts"
        )

    run(tmp_path, scenario)


def test_csinodes_by_its_own_name(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        csinodes = "/apis/storage.k8s.io/v1/csinodes"
        # Its own: authorized (taintplane serves no CSINodes: 404); another's: 403.
        assert (await call("GET", f"{csinodes}/node-1")).status_code == 404
        assert refusal(await call("GET", f"{csinodes}/node-2"))[1].endswith(
            "can only access CSINode with the same name as the requesting node"
        )
        assert refusal(await call("GET", csinodes))[1].endswith(
            "can only get, create, update, patch, or delete a CSINode"
        )

    run(tmp_path, scenario)


def test_the_missing_relation_is_logged_as_upstream(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Upstream returns only "no relationship found …" and logs the graph's finding (V(2)).
    async def scenario(call: Call) -> None:
        await call("GET", f"{PODS}/nobody")
        await call("GET", f"{PODS}/theirs")

    with caplog.at_level(logging.DEBUG, logger="taintplane.apiserver.auth.node"):
        run(tmp_path, scenario)
    assert [r.getMessage() for r in caplog.records if r.name.endswith("auth.node")] == [
        "NODE DENY: node 'node-1' cannot get unknown pod default/nobody",
        "NODE DENY: node 'node-1' cannot get pod default/theirs, no relationship to this object "
        "was found in the node authorizer graph",
    ]


def test_a_data_dir_from_before_loses_the_nodes_group_binding(tmp_path: Path) -> None:
    binding_path = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:node"
    old = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:nodes"}]

    async def before(call: Call) -> None:
        binding = (await call("GET", binding_path, token=ADMIN)).json()
        binding["subjects"] = old  # as taintplane bound it before it had a Node authorizer
        assert (await call("PUT", binding_path, binding, ADMIN)).status_code == 200
        assert (await call("GET", "/api/v1/pods")).status_code == 200  # RBAC let it list

    async def after(call: Call) -> None:
        assert "subjects" not in (await call("GET", binding_path, token=ADMIN)).json()
        assert (await call("GET", "/api/v1/pods")).status_code == 403

    async def main() -> None:
        for scenario in (before, after):  # the second start bootstraps the same store again
            async with _api(tmp_path) as call:
                await scenario(call)

    asyncio.run(main())


def test_the_relation_follows_pods_as_they_come_and_go(tmp_path: Path) -> None:
    secret = "/api/v1/namespaces/default/secrets/late"

    async def scenario(call: Call) -> None:
        assert refusal(await call("GET", secret))[1].endswith(UNRELATED)  # the index is built
        late = pod("late", "node-1", volumes=[{"name": "s", "secret": {"secretName": "late"}}])
        assert (await call("POST", PODS, late, ADMIN)).status_code == 201
        assert (await call("GET", secret)).status_code == 404  # related at once: allowed
        gone = await call("DELETE", f"{PODS}/late", {"gracePeriodSeconds": 0}, ADMIN)
        assert gone.status_code == 200, gone.text
        assert (await call("GET", f"{PODS}/late", token=ADMIN)).status_code == 404
        assert refusal(await call("GET", secret))[1].endswith(UNRELATED)

    run(tmp_path, scenario)


def test_without_the_index_the_namespace_is_read(tmp_path: Path) -> None:
    # The index's watch failed (compaction, the store closing): the same answers, read slowly.
    async def main() -> None:
        store = await SqliteStore(tmp_path / "store.db").open()
        server = APIServer(store, VirtualClock(), tokens=TOKENS)
        await server.bootstrap()
        assert server.guard is not None

        async def no_index(node: str, namespace: str) -> None:
            return None

        server.guard.authorizer.node.graph.pods_on = no_index  # type: ignore[method-assign]
        transport = httpx.ASGITransport(app=server.app)
        async with httpx.AsyncClient(transport=transport, base_url="https://test") as http:

            async def call(method: str, path: str, body: Any = None, token: str = NODE) -> Any:
                headers = {"Authorization": f"Bearer {token}"}
                return await http.request(method, path, json=body, headers=headers)

            await _seed(call)
            core = "/api/v1/namespaces/default"
            assert (await call("GET", f"{core}/secrets/my-secret")).status_code == 404
            assert refusal(await call("GET", f"{core}/secrets/other"))[1].endswith(UNRELATED)
            claims = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
            assert (await call("GET", f"{claims}/my-claim")).status_code == 200
        await server.close()
        await store.close()

    asyncio.run(main())


def test_evictions_of_its_own_pods_only(tmp_path: Path) -> None:
    """The Eviction create goes through admission (CREATE pods/eviction), so NodeRestriction's
    own check answers, with upstream's words, before anything is written."""

    async def scenario(call: Call) -> None:
        def eviction(name: str) -> dict[str, Any]:
            return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}

        refused = await call("POST", f"{PODS}/theirs/eviction", eviction("theirs"))
        assert refusal(refused) == (
            403,
            'pods "theirs" is forbidden: node node-1 can only evict pods with spec.nodeName '
            "set to itself",
        )
        kept = await call("GET", f"{PODS}/theirs", token=ADMIN)
        assert "conditions" not in kept.json().get("status", {})
        missing = await call("POST", f"{PODS}/nobody/eviction", eviction("nobody"))
        assert refusal(missing) == (404, 'pods "nobody" not found')
        evicted = await call("POST", f"{PODS}/mine/eviction", eviction("mine"))
        assert evicted.status_code == 201, evicted.text

    run(tmp_path, scenario)
