"""Pod defaulting through the API server: requests from limits (SetDefaults_Pod) at every
decode, before admission — ExtendedResourceToleration sees a limit-only extended resource, and
an update that leaves requests out keeps the defaulted ones rather than changing the spec."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from taintplane.admission.plugins import AdmissionOptions
from taintplane.apiserver.app import APIServer
from taintplane.clock import VirtualClock
from taintplane.store.sqlite import SqliteStore

PODS = "/api/v1/namespaces/default/pods"
Call = Callable[..., Awaitable[httpx.Response]]


def run(tmp: Path, scenario: Callable[[Call], Awaitable[None]]) -> None:
    async def main() -> None:
        store = await SqliteStore(tmp / "store.db").open()
        setup = AdmissionOptions(enable=("ExtendedResourceToleration",)).load()
        server = APIServer(store, VirtualClock(), admission=setup)
        await server.bootstrap()
        transport = httpx.ASGITransport(app=server.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:

            async def call(method: str, path: str, body: Any = None, ctype: str = "") -> Any:
                headers = {"Content-Type": ctype} if ctype else {}
                return await http.request(method, path, json=body, headers=headers)

            try:
                await scenario(call)
            finally:
                await server.close()
                await store.close()

    asyncio.run(main())


def pod(name: str, **resources: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "c", "image": "i", "resources": resources}],
            "initContainers": [{"name": "i", "image": "i", "resources": resources}],
        },
    }


def resources(obj: dict[str, Any], key: str = "containers") -> Any:
    return obj["spec"][key][0]["resources"]


def test_requests_default_to_limits_per_container_and_init_container(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        created = await call(
            "POST", PODS, pod("q", limits={"cpu": "1", "memory": "1Gi"}, requests={"cpu": "500m"})
        )
        assert created.status_code == 201, created.text
        stored = (await call("GET", f"{PODS}/q")).json()
        expected = {
            "limits": {"cpu": "1", "memory": "1Gi"},
            "requests": {"cpu": "500m", "memory": "1Gi"},
        }
        assert resources(stored) == resources(stored, "initContainers") == expected
        assert stored["status"]["qosClass"] == "Burstable"
        only_limits = await call("POST", PODS, pod("g", limits={"cpu": "1", "memory": "1Gi"}))
        assert resources(only_limits.json())["requests"] == {"cpu": "1", "memory": "1Gi"}
        assert only_limits.json()["status"]["qosClass"] == "Guaranteed"
        # Empty limits leave requests unset, as Go's empty map is left out of the JSON.
        empty = (await call("POST", PODS, pod("e", limits={}))).json()
        assert resources(empty).get("requests") in (None, {})

    run(tmp_path, scenario)


def test_extended_resource_toleration_sees_a_limit_only_extended_resource(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        created = (await call("POST", PODS, pod("gpu", limits={"example.com/gpu": "1"}))).json()
        assert resources(created)["requests"] == {"example.com/gpu": "1"}
        assert {"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in (
            created["spec"]["tolerations"]
        )

    run(tmp_path, scenario)


def test_updates_are_defaulted_too(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        created = (await call("POST", PODS, pod("u", limits={"cpu": "1"}))).json()
        # A PUT without the defaulted requests is no spec change: it is defaulted again.
        again = dict(created, metadata={**created["metadata"], "labels": {"a": "b"}})
        for key in ("containers", "initContainers"):
            again["spec"][key][0]["resources"] = {"limits": {"cpu": "1"}}
        put = await call("PUT", f"{PODS}/u", again)
        assert put.status_code == 200, put.text
        assert resources(put.json())["requests"] == {"cpu": "1"}
        # So is a patch result (JSON patch removing the requests).
        remove = [{"op": "remove", "path": "/spec/containers/0/resources/requests"}]
        patched = await call("PATCH", f"{PODS}/u", remove, "application/json-patch+json")
        assert patched.status_code == 200, patched.text
        assert resources(patched.json())["requests"] == {"cpu": "1"}

    run(tmp_path, scenario)
