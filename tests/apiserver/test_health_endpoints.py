"""``/healthz``, ``/livez`` and ``/readyz`` as k8s.io/apiserver's healthz package serves them
(handleRootHealth, adaptCheckToHandler), with the checks taintplane has under kube-apiserver's
names; and the generic 404 and 405 Statuses (NewGenericServerResponse) with their empty
details, which kubectl debug needs to say ephemeral containers are disabled."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from taintplane.apiserver.app import APIServer
from taintplane.clock import VirtualClock
from taintplane.store.sqlite import SqliteStore

TEXT = "text/plain; charset=utf-8"
HOOKS = (
    "[+]poststarthook/start-system-namespaces-controller ok\n"
    "[+]poststarthook/scheduling/bootstrap-system-priority-classes ok\n"
)
LIVEZ = "[+]ping ok\n[+]log ok\n[+]etcd ok\n" + HOOKS
READYZ = "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n" + HOOKS + "[+]shutdown ok\n"
GENERIC_404 = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "the server could not find the requested resource",
    "reason": "NotFound",
    "details": {},
    "code": 404,
}


@pytest.fixture(scope="module")
def api(cluster: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/readyz?verbose", READYZ + "readyz check passed\n"),
        ("/livez?verbose", LIVEZ + "livez check passed\n"),
        ("/healthz?verbose", LIVEZ + "healthz check passed\n"),
        ("/readyz", "ok"),
        ("/livez", "ok"),
        ("/healthz", "ok"),
        ("/livez/ping", "ok"),
        ("/readyz/ping", "ok"),
        ("/healthz/ping", "ok"),
        ("/readyz/etcd", "ok"),
        ("/livez/etcd", "ok"),
        ("/readyz/shutdown", "ok"),
        ("/readyz/poststarthook/scheduling/bootstrap-system-priority-classes", "ok"),
    ],
)
def test_health_endpoints(api: httpx.Client, path: str, body: str) -> None:
    response = api.get(path)
    assert (response.status_code, response.text) == (200, body)
    assert response.headers["content-type"] == TEXT


def test_excluded_checks_and_unknown_names(api: httpx.Client) -> None:
    response = api.get("/readyz", params=[("verbose", ""), ("exclude", "etcd"), ("exclude", "x")])
    assert response.status_code == 200
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.text == (
        "[+]ping ok\n[+]log ok\n[+]etcd excluded: ok\n[+]etcd-readiness ok\n"
        + HOOKS
        + "[+]shutdown ok\n"
        'warn: some health checks cannot be excluded: no matches for "x"\n'
        "readyz check passed\n"
    )


def test_a_check_an_endpoint_does_not_have_is_not_found(api: httpx.Client) -> None:
    # shutdown is a readiness check only, as in kube-apiserver.
    for path in ("/livez/shutdown", "/readyz/informer-sync", "/healthz/nope"):
        response = api.get(path)
        assert (response.status_code, response.json()) == (404, GENERIC_404)


@pytest.mark.parametrize(
    "path",
    [
        "/nothing-here",
        "/apis/no.such.group",
        "/api/v1/widgets",
        "/api/v1/namespaces/default/pods/p/ephemeralcontainers",
    ],
)
def test_paths_the_server_does_not_serve_are_a_generic_404(api: httpx.Client, path: str) -> None:
    response = api.get(path)
    assert (response.status_code, response.json()) == (404, GENERIC_404)


def test_a_method_the_server_does_not_serve_is_a_generic_405(api: httpx.Client) -> None:
    response = api.post("/version", json={})
    assert response.status_code == 405
    assert response.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "the server does not allow this method on the requested resource",
        "reason": "MethodNotAllowed",
        "details": {},
        "code": 405,
    }


def test_kubectl_reads_readyz_and_debug_reports_no_ephemeral_containers(kubectl: Any) -> None:
    assert kubectl("get", "--raw", "/readyz?verbose") == READYZ + "readyz check passed\n"
    kubectl("run", "dbg", "--image=busybox", "--restart=Never")
    debug = kubectl.run("debug", "dbg", "--image=busybox")
    # kubectl names the debug container itself (a random suffix) before asking the server.
    assert debug.stdout.startswith("Defaulting debug container name to debugger-")
    # Before it, kubectl's own deprecation warning about --profile=legacy.
    assert debug.returncode == 1
    assert debug.stderr.splitlines()[-1] == (
        "error: ephemeral containers are disabled for this cluster (error from server: "
        '"the server could not find the requested resource")'
    )


Call = Callable[[str], Awaitable[httpx.Response]]


def run(tmp: Path, scenario: Callable[[APIServer, SqliteStore, Call], Awaitable[None]]) -> None:
    async def main() -> None:
        store = await SqliteStore(tmp / "store.db").open()
        server = APIServer(store, VirtualClock())
        transport = httpx.ASGITransport(app=server.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:

            async def get(path: str) -> httpx.Response:
                return await http.get(path)

            try:
                await scenario(server, store, get)
            finally:
                await server.close()
                await store.close()

    asyncio.run(main())


def test_unfinished_start_up_fails_every_endpoint(tmp_path: Path) -> None:
    async def scenario(server: APIServer, store: SqliteStore, get: Call) -> None:
        response = await get("/livez")
        assert response.status_code == 500
        assert response.headers["content-type"] == TEXT
        assert response.text == (
            "[+]ping ok\n[+]log ok\n[+]etcd ok\n"
            "[-]poststarthook/start-system-namespaces-controller failed: reason withheld\n"
            "[-]poststarthook/scheduling/bootstrap-system-priority-classes failed: reason "
            "withheld\n"
            "livez check failed\n"
        )
        one = await get("/readyz/poststarthook/start-system-namespaces-controller")
        assert (one.status_code, one.text) == (500, "internal server error: not finished\n")
        await server.bootstrap()
        assert (await get("/livez")).text == "ok"

    run(tmp_path, scenario)


def test_a_closed_store_and_shutdown_fail_readiness(tmp_path: Path) -> None:
    async def scenario(server: APIServer, store: SqliteStore, get: Call) -> None:
        await server.bootstrap()
        await server.close()
        response = await get("/readyz?verbose")
        assert response.status_code == 500
        assert response.text == (
            "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n"
            + HOOKS
            + "[-]shutdown failed: reason withheld\nreadyz check failed\n"
        )
        assert (await get("/livez")).status_code == 200
        await store.close()
        failed = await get("/readyz?exclude=shutdown")
        assert failed.status_code == 500
        assert failed.text.splitlines()[2:4] == [
            "[-]etcd failed: reason withheld",
            "[-]etcd-readiness failed: reason withheld",
        ]
        etcd = await get("/livez/etcd")
        assert etcd.status_code == 500
        assert etcd.text.startswith("internal server error: ")

    run(tmp_path, scenario)
