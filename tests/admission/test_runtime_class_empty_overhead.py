"""An empty ``overhead: {}`` through the API server: it is set (a non-nil map in Go), so
validateOverhead refuses it without a class overhead; setOverhead, which refuses only a
non-empty one (``len(pod.Spec.Overhead) > 0``), replaces it with the class's podFixed."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from taintplane.admission.plugins import AdmissionOptions
from taintplane.apiserver.app import APIServer
from taintplane.clock import VirtualClock
from taintplane.store.sqlite import SqliteStore

PODS = "/api/v1/namespaces/default/pods"
CLASSES = "/apis/node.k8s.io/v1/runtimeclasses"
MISMATCH = "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
WITHOUT_CLASS = "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
Call = Callable[..., Awaitable[httpx.Response]]


def _class(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": name},
        "handler": "h",
        **fields,
    }


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "i"}], **spec},
    }


def run(tmp: Path, scenario: Callable[[Call], Awaitable[None]]) -> None:
    async def main() -> None:
        store = await SqliteStore(tmp / "store.db").open()
        setup = AdmissionOptions(enable=("RuntimeClass",)).load()
        server = APIServer(store, VirtualClock(), admission=setup)
        await server.bootstrap()
        transport = httpx.ASGITransport(app=server.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:

            async def call(method: str, path: str, body: Any = None) -> httpx.Response:
                return await http.request(method, path, json=body)

            try:
                for runtime_class in (
                    _class("kata", overhead={"podFixed": {"cpu": "250m"}}),
                    _class("plain"),
                    _class("free", overhead={}),
                ):
                    assert (await call("POST", CLASSES, runtime_class)).status_code == 201
                await scenario(call)
            finally:
                await server.close()
                await store.close()

    asyncio.run(main())


@pytest.mark.parametrize(
    ("class_name", "message"),
    [("plain", WITHOUT_CLASS), (None, WITHOUT_CLASS)],
)
def test_empty_overhead_is_refused(tmp_path: Path, class_name: str | None, message: str) -> None:
    spec: dict[str, Any] = {"overhead": {}}
    if class_name:
        spec["runtimeClassName"] = class_name

    async def scenario(call: Call) -> None:
        refused = await call("POST", PODS, _pod("p", **spec))
        assert refused.status_code == 403
        assert refused.json()["message"] == f'pods "p" is forbidden: {message}'

    run(tmp_path, scenario)


def test_empty_overhead_matches_a_class_without_pod_fixed(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        created = await call("POST", PODS, _pod("p", runtimeClassName="free", overhead={}))
        assert created.status_code == 201
        assert "overhead" not in created.json()["spec"]
        kata = await call("POST", PODS, _pod("k", runtimeClassName="kata"))
        assert kata.json()["spec"]["overhead"] == {"cpu": "250m"}
        # An empty overhead is no different from none: the class's is set.
        empty = await call("POST", PODS, _pod("e", runtimeClassName="kata", overhead={}))
        assert empty.status_code == 201, empty.text
        assert empty.json()["spec"]["overhead"] == {"cpu": "250m"}
        # A non-empty one must match.
        other = await call("POST", PODS, _pod("o", runtimeClassName="kata", overhead={"cpu": "1"}))
        assert other.status_code == 403
        assert other.json()["message"] == f'pods "o" is forbidden: {MISMATCH}'

    run(tmp_path, scenario)
