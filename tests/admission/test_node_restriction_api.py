"""NodeRestriction through the API server with ``--auth`` tokens: a node's own Node object
(ownerReferences, CVE-2025-5187) and the mirror pods it creates (owner reference, uid, other
API objects), with upstream's status codes and messages."""

from __future__ import annotations

import asyncio
import copy
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
}
MIRROR = "kubernetes.io/config.mirror"

Call = Callable[..., Awaitable[httpx.Response]]


@asynccontextmanager
async def _api(tmp: Path) -> AsyncIterator[Call]:
    store = await SqliteStore(tmp / "store.db").open()
    server = APIServer(store, VirtualClock(), tokens=TOKENS)
    await server.bootstrap()
    transport = httpx.ASGITransport(app=server.app)
    async with httpx.AsyncClient(transport=transport, base_url="https://test") as http:

        async def call(method: str, path: str, body: Any = None, token: str = NODE) -> Any:
            headers = {"Authorization": f"Bearer {token}"}
            if method == "PATCH":
                headers["Content-Type"] = "application/merge-patch+json"
            return await http.request(method, path, json=body, headers=headers)

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


def refusal(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json()["message"]


def owner(uid: str, **changes: Any) -> dict[str, Any]:
    reference = {"apiVersion": "v1", "kind": "Node", "name": "node-1", "uid": uid}
    return {**reference, "controller": True, **changes}


def mirror_pod(owners: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "static-node-1",
            "annotations": {MIRROR: "hash"},
            "ownerReferences": owners,
        },
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "i"}], **spec},
    }


OTHER_OWNER = {"apiVersion": "v1", "kind": "ConfigMap", "name": "gone", "uid": "1234"}


def test_a_node_may_not_change_its_own_owner_references(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        created = await call("POST", "/api/v1/nodes", {"metadata": {"name": "node-1"}})
        assert created.status_code == 201
        node = created.json()
        patch = {"metadata": {"ownerReferences": [OTHER_OWNER]}}
        expected = (
            403,
            'nodes "node-1" is forbidden: node "node-1" is not allowed to modify ownerReferences',
        )
        assert refusal(await call("PATCH", "/api/v1/nodes/node-1", patch)) == expected
        changed = copy.deepcopy(node)
        changed["metadata"]["ownerReferences"] = [OTHER_OWNER]
        assert refusal(await call("PUT", "/api/v1/nodes/node-1", changed)) == expected
        # Other writes of its own Node still go through; an empty list is no change.
        labels = {"metadata": {"labels": {"rack": "r1"}, "ownerReferences": []}}
        assert (await call("PATCH", "/api/v1/nodes/node-1", labels)).status_code == 200
        # An administrator may set them, and the node may not take them away.
        assert (await call("PATCH", "/api/v1/nodes/node-1", patch, ADMIN)).status_code == 200
        removed = {"metadata": {"ownerReferences": None}}
        assert refusal(await call("PATCH", "/api/v1/nodes/node-1", removed)) == expected

    run(tmp_path, scenario)


def test_a_node_may_register_with_owner_references_as_upstream(tmp_path: Path) -> None:
    # The fix covers updates only: upstream's Create branch does not look at them.
    async def scenario(call: Call) -> None:
        body = {"metadata": {"name": "node-1", "ownerReferences": [OTHER_OWNER]}}
        assert (await call("POST", "/api/v1/nodes", body)).status_code == 201

    run(tmp_path, scenario)


PREFIX = 'pods "static-node-1" is forbidden: node "node-1" '


@pytest.mark.parametrize(
    ("owners", "spec", "message"),
    [
        ([], {}, "can only create pods with an owner reference set to itself"),
        (
            [owner("UID"), owner("UID", name="node-2")],
            {},
            "can only create pods with a single owner reference set to itself",
        ),
        (
            [owner("UID", name="node-2")],
            {},
            "can only create pods with an owner reference set to itself",
        ),
        (
            [owner("UID", kind="Pod")],
            {},
            "can only create pods with an owner reference set to itself",
        ),
        (
            [owner("UID", apiVersion="v2")],
            {},
            "can only create pods with an owner reference set to itself",
        ),
        (
            [owner("UID", controller=False)],
            {},
            "can only create pods with a controller owner reference set to itself",
        ),
        (
            [{k: v for k, v in owner("UID").items() if k != "controller"}],
            {},
            "can only create pods with a controller owner reference set to itself",
        ),
        (
            [owner("UID", blockOwnerDeletion=True)],
            {},
            "must not set blockOwnerDeletion on an owner reference",
        ),
        (
            [owner("UID")],
            {"serviceAccountName": "sa"},
            "can not create pods that reference a service account",
        ),
        (
            [owner("UID")],
            {"imagePullSecrets": [{"name": "pull"}]},
            "can not create pods that reference secrets",
        ),
        (
            [owner("UID")],
            {
                "ephemeralContainers": [
                    {"name": "e", "image": "i", "envFrom": [{"secretRef": {"name": "s"}}]}
                ]
            },
            "can not create pods that reference secrets",
        ),
        (
            [owner("UID")],
            {
                "initContainers": [
                    {
                        "name": "i",
                        "image": "i",
                        "env": [
                            {"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
                        ],
                    }
                ]
            },
            "can not create pods that reference secrets",
        ),
        (
            [owner("UID")],
            {"volumes": [{"name": "v", "secret": {"secretName": "s"}}]},
            "can not create pods that reference secrets",
        ),
        (
            [owner("UID")],
            {
                "volumes": [
                    {"name": "v", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "s"}}}
                ]
            },
            "can not create pods that reference secrets",
        ),
        (
            [owner("UID")],
            {"volumes": [{"name": "v", "projected": {"sources": [{"secret": {"name": "s"}}]}}]},
            "can not create pods that reference secrets",
        ),
        (
            [owner("UID")],
            {
                "containers": [
                    {
                        "name": "c",
                        "image": "i",
                        "env": [
                            {
                                "name": "A",
                                "valueFrom": {"configMapKeyRef": {"name": "m", "key": "k"}},
                            }
                        ],
                    }
                ]
            },
            "can not create pods that reference configmaps",
        ),
        (
            [owner("UID")],
            {"volumes": [{"name": "v", "configMap": {"name": "m"}}]},
            "can not create pods that reference configmaps",
        ),
        (
            [owner("UID")],
            {"volumes": [{"name": "v", "projected": {"sources": [{"configMap": {"name": "m"}}]}}]},
            "can not create pods that reference configmaps",
        ),
        (
            [owner("UID")],
            {
                "volumes": [
                    {
                        "name": "v",
                        "projected": {
                            "sources": [{"clusterTrustBundle": {"name": "b", "path": "p"}}]
                        },
                    }
                ]
            },
            "can not create pods that reference clustertrustbundles",
        ),
        (
            [owner("UID")],
            {"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]},
            "can not create pods that reference persistentvolumeclaims",
        ),
    ],
)
def test_mirror_pods_are_owned_by_their_node_and_refer_to_nothing_else(
    tmp_path: Path, owners: list[dict[str, Any]], spec: dict[str, Any], message: str
) -> None:
    async def scenario(call: Call) -> None:
        node = (await call("POST", "/api/v1/nodes", {"metadata": {"name": "node-1"}})).json()
        uid = node["metadata"]["uid"]
        for reference in owners:
            reference["uid"] = uid
        response = await call("POST", "/api/v1/namespaces/default/pods", mirror_pod(owners, **spec))
        assert refusal(response) == (403, PREFIX + message)

    run(tmp_path, scenario)


def test_a_mirror_pod_owned_by_its_node_is_created(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        node = (await call("POST", "/api/v1/nodes", {"metadata": {"name": "node-1"}})).json()
        pod = mirror_pod([owner(node["metadata"]["uid"], blockOwnerDeletion=False)])
        pod["spec"]["volumes"] = [
            {"name": "v", "emptyDir": {}},
            {"name": "h", "hostPath": {"path": "/"}},
        ]
        response = await call("POST", "/api/v1/namespaces/default/pods", pod)
        assert response.status_code == 201, response.text

    run(tmp_path, scenario)


def test_a_stale_node_uid_and_a_missing_node_are_refused_as_upstream(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        missing = await call(
            "POST", "/api/v1/namespaces/default/pods", mirror_pod([owner("old-uid")])
        )
        assert refusal(missing) == (404, 'nodes "node-1" not found')
        assert missing.json()["reason"] == "NotFound"
        node = (await call("POST", "/api/v1/nodes", {"metadata": {"name": "node-1"}})).json()
        uid = node["metadata"]["uid"]
        stale = await call(
            "POST", "/api/v1/namespaces/default/pods", mirror_pod([owner("old-uid")])
        )
        assert refusal(stale) == (
            403,
            f'pods "static-node-1" is forbidden: node node-1 UID mismatch: expected old-uid got {uid}',
        )

    run(tmp_path, scenario)
