"""Admission before name generation, as upstream: mutating plugins see a ``generateName`` pod
without its name, so their refusals name the prefix (admission.NewForbidden) or nothing
(PodNodeSelector's errors.NewForbidden with pod.Name); the strategy's validation and the
validating phase come after the name is generated."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from taintplane.admission.plugins import AdmissionOptions
from taintplane.admission.runtime_class import OVERHEAD_WITHOUT_CLASS
from taintplane.apiserver.app import APIServer
from taintplane.clock import VirtualClock
from taintplane.store.sqlite import SqliteStore

SELECTOR = "scheduler.alpha.kubernetes.io/node-selector"
Call = Callable[..., Awaitable[httpx.Response]]


def run(tmp: Path, scenario: Callable[[Call], Awaitable[None]]) -> None:
    async def main() -> None:
        store = await SqliteStore(tmp / "store.db").open()
        plugins = "PodNodeSelector,PodTolerationRestriction,RuntimeClass"
        setup = AdmissionOptions(enable=(plugins,)).load()
        server = APIServer(store, VirtualClock(), admission=setup)
        await server.bootstrap()
        transport = httpx.ASGITransport(app=server.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:

            async def call(method: str, path: str, body: Any = None) -> Any:
                return await http.request(method, path, json=body)

            try:
                await scenario(call)
            finally:
                await server.close()
                await store.close()

    asyncio.run(main())


def namespace(name: str, annotations: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": annotations}}


def gen_pod(**spec: Any) -> dict[str, Any]:
    spec.setdefault("containers", [{"name": "c", "image": "i"}])
    return {"metadata": {"generateName": "gen-"}, "spec": spec}


def refusal(response: httpx.Response) -> tuple[int, str, str]:
    status = response.json()
    return response.status_code, status["message"], status["details"]["name"]


def test_mutating_refusals_name_the_prefix_or_nothing(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        await call("POST", "/api/v1/namespaces", namespace("sel", {SELECTOR: "env=prod"}))
        pods = "/api/v1/namespaces/sel/pods"
        unknown_class = await call("POST", pods, gen_pod(runtimeClassName="nope"))
        assert refusal(unknown_class) == (
            403,
            'pods "gen-" is forbidden: pod rejected: RuntimeClass "nope" not found',
            "gen-",
        )
        conflict = await call("POST", pods, gen_pod(nodeSelector={"env": "dev"}))
        assert refusal(conflict) == (
            403,
            "pods is forbidden: pod node label selector conflicts with its namespace node label "
            "selector",
            "",
        )
        assert conflict.json()["details"] == {"name": "", "kind": "pods"}
        # A named pod is named in both.
        named = {**gen_pod(nodeSelector={"env": "dev"}), "metadata": {"name": "p"}}
        assert refusal(await call("POST", pods, named))[1].startswith('pods "p" is forbidden: ')

    run(tmp_path, scenario)


def test_validating_refusals_and_validation_see_the_generated_name(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        pods = "/api/v1/namespaces/default/pods"
        # RuntimeClass refuses overhead without a class in its validating phase.
        response = await call("POST", pods, gen_pod(overhead={"cpu": "1"}))
        assert response.status_code == 403
        name = response.json()["details"]["name"]
        assert name.startswith("gen-")
        assert len(name) == len("gen-") + 5
        assert response.json()["message"] == f'pods "{name}" is forbidden: {OVERHEAD_WITHOUT_CLASS}'

        # The strategy's validation (422) comes before the validating phase (403).
        invalid = await call("POST", pods, gen_pod(overhead={"cpu": "1"}, restartPolicy="No"))
        assert invalid.status_code == 422, invalid.text
        assert invalid.json()["details"]["name"].startswith("gen-")

    run(tmp_path, scenario)


def test_a_generated_pod_is_admitted_and_named(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        await call("POST", "/api/v1/namespaces", namespace("ok", {SELECTOR: "env=prod"}))
        created = await call("POST", "/api/v1/namespaces/ok/pods", gen_pod())
        assert created.status_code == 201, created.text
        pod = created.json()
        assert pod["metadata"]["name"].startswith("gen-")
        assert pod["spec"]["nodeSelector"] == {"env": "prod"}
        assert pod["metadata"]["uid"]
        assert pod["status"]["qosClass"] == "BestEffort"

    run(tmp_path, scenario)
