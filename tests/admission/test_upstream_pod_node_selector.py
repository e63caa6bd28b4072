"""plugin/pkg/admission/podnodeselector's TestPodAdmission table and TestHandles (v1.35),
ported through the API server: the namespace's ``scheduler.alpha.kubernetes.io/node-selector``
(else ``clusterDefaultNodeSelector``) merged into new pods, conflicts and the per-namespace
whitelist refused with 403 and upstream's messages, updates left alone."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from taintplane.admission.plugins import AdmissionOptions, AdmissionSetup
from taintplane.admission.pod_node_selector import NAMESPACE_NODE_SELECTOR
from taintplane.apiserver.app import APIServer
from taintplane.clock import VirtualClock
from taintplane.store.sqlite import SqliteStore

NS = "test-namespace"
PODS = f"/api/v1/namespaces/{NS}/pods"
CONFLICT = (
    'pods "test-pod" is forbidden: pod node label selector conflicts with its namespace node '
    "label selector"
)
WHITELIST = (
    'pods "test-pod" is forbidden: pod node label selector labels conflict with its namespace '
    "whitelist"
)
Call = Callable[..., Awaitable[httpx.Response]]


def run(tmp: Path, selectors: dict[str, str], scenario: Callable[[Call], Awaitable[None]]) -> None:
    enabled = AdmissionOptions(enable=("PodNodeSelector",)).load()
    setup = AdmissionSetup(enabled.enabled, enabled.toleration_restriction, selectors)

    async def main() -> None:
        store = await SqliteStore(tmp / "store.db").open()
        server = APIServer(store, VirtualClock(), admission=setup)
        await server.bootstrap()
        transport = httpx.ASGITransport(app=server.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:

            async def call(method: str, path: str, body: Any = None) -> httpx.Response:
                return await http.request(method, path, json=body)

            try:
                await scenario(call)
            finally:
                await server.close()
                await store.close()

    asyncio.run(main())


def namespace(selector: str | None) -> dict[str, Any]:
    annotations = {} if selector is None else {NAMESPACE_NODE_SELECTOR: selector}
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": NS, "annotations": annotations},
    }


def pod(selector: dict[str, str]) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if selector:
        spec["nodeSelector"] = selector
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "test-pod"}, "spec": spec}


# name, cluster default, namespace selector (None: no annotation), whitelist, pod's, merged/error
CASES: list[tuple[str, str, str | None, str, dict[str, str], dict[str, str] | str]] = [
    ("No node selectors", "", None, "", {}, {}),
    ("Default node selector and no conflicts", "infra = false", None, "", {}, {"infra": "false"}),
    (
        "TestNamespace node selector with whitespaces and no conflicts",
        "", " infra = false ", "", {}, {"infra": "false"},
    ),
    (
        "Default and namespace node selector, no conflicts",
        "infra = false", "infra=true", "", {}, {"infra": "true"},
    ),
    ("Empty namespace node selector and no conflicts", "infra = false", "", "", {}, {}),
    (
        "TestNamespace and pod node selector, no conflicts",
        "infra = false", "infra=true", "", {"env": "test"}, {"infra": "true", "env": "test"},
    ),
    (
        "Conflicting pod and namespace node selector, one label",
        "env = test", "infra=true", "", {"infra": "false"}, CONFLICT,
    ),
    (
        "Conflicting pod and namespace node selector, multiple labels",
        "env=dev", "infra=false, env = test", "", {"env": "dev", "color": "blue"}, CONFLICT,
    ),
    (
        "Merged pod node selectors satisfy the whitelist",
        "env=dev", "infra=false, env = dev", "env=dev, infra=false, color=blue",
        {"env": "dev", "color": "blue"}, {"infra": "false", "env": "dev", "color": "blue"},
    ),
    (
        "Merged pod node selectors conflict with the whitelist",
        "env=dev", "infra=false, env = dev", "env=dev, infra=true, color=blue",
        {"env": "dev", "color": "blue"}, WHITELIST,
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("default", "annotation", "whitelist", "own", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_pod_admission(
    tmp_path: Path,
    default: str,
    annotation: str | None,
    whitelist: str,
    own: dict[str, str],
    expected: dict[str, str] | str,
) -> None:
    async def scenario(call: Call) -> None:
        assert (await call("POST", "/api/v1/namespaces", namespace(annotation))).status_code == 201
        created = await call("POST", PODS, pod(own))
        if isinstance(expected, str):
            assert created.status_code == 403, created.text
            status = created.json()
            assert (status["message"], status["reason"]) == (expected, "Forbidden")
            assert status["details"] == {"name": "test-pod", "kind": "pods"}
            return
        assert created.status_code == 201, created.text
        assert created.json()["spec"].get("nodeSelector", {}) == expected

    selectors = {"clusterDefaultNodeSelector": default, NS: whitelist}
    run(tmp_path, selectors, scenario)


def test_handles_create_only(tmp_path: Path) -> None:
    """TestHandles: an update is not checked, even one whose selector now conflicts."""

    async def scenario(call: Call) -> None:
        assert (await call("POST", "/api/v1/namespaces", namespace(None))).status_code == 201
        created = await call("POST", PODS, pod({"env": "dev"}))
        assert created.status_code == 201, created.text
        fenced = namespace("env=prod")
        assert (await call("PUT", f"/api/v1/namespaces/{NS}", fenced)).status_code == 200
        body = created.json()
        body["metadata"]["labels"] = {"updated": "yes"}
        updated = await call("PUT", f"{PODS}/test-pod", body)
        assert updated.status_code == 200, updated.text
        assert updated.json()["spec"]["nodeSelector"] == {"env": "dev"}

    run(tmp_path, {}, scenario)
