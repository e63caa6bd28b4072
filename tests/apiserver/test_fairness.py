"""Fairness (issue 17, item 3): upstream's max-in-flight 429 (filters/maxinflight.go), seats
for expensive requests so cheap ones never wait behind them, work of expensive requests off
the event loop, and large lists and watches cut into steps, with unchanged results.

Deterministic: handlers block on events the test sets, never on time."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from starlette.requests import Request
from starlette.responses import Response

from taintplane.admission.chain import UserInfo
from taintplane.api.scheme import SCHEME
from taintplane.apiserver import fairness, registry_reads, warning, watch_stream
from taintplane.apiserver.app import APIServer
from taintplane.apiserver.auth.guard import CURRENT_USER
from taintplane.apiserver.fairness import Fairness, RequestClass, offload, offloading
from taintplane.apiserver.registry import WatchProgress
from taintplane.apiserver.request_cost import classify
from taintplane.apiserver.requestinfo import RequestInfo, parse_resource_path
from taintplane.apiserver.scopes import SCOPE_IN_PROCESS
from taintplane.clock import VirtualClock
from taintplane.store.sqlite import SqliteStore

READ = RequestClass(mutating=False)
WRITE = RequestClass(mutating=True)
EXPENSIVE = RequestClass(mutating=False, expensive=True)


class Blocked:
    """Handlers that stay in flight until released."""

    def __init__(self) -> None:
        self.entered: list[str] = []
        self.release = asyncio.Event()

    def handler(self, name: str) -> Callable[[], Awaitable[Response]]:
        async def serve() -> Response:
            self.entered.append(name)
            await self.release.wait()
            return Response(name)

        return serve


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def assert_too_many(response: Response) -> None:
    # http.Error's plain text, as upstream's tooManyRequests writes it.
    assert response.status_code == 429
    assert bytes(response.body) == b"Too many requests, please try again later.\n"
    assert response.headers["Retry-After"] == "1"
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_requests_past_max_in_flight_are_refused_with_429_and_retry_after() -> None:
    async def main() -> None:
        gate, blocked = Fairness(max_readonly=2, max_mutating=1), Blocked()
        held = [asyncio.create_task(gate.serve(READ, blocked.handler(f"r{i}"))) for i in (1, 2)]
        writer = asyncio.create_task(gate.serve(WRITE, blocked.handler("w1")))
        await settle()
        assert_too_many(await gate.serve(READ, blocked.handler("r3")))
        assert_too_many(await gate.serve(WRITE, blocked.handler("w2")))
        # Watches are long-running: never counted, never refused.
        watch = RequestClass(mutating=False, long_running=True)
        watching = asyncio.create_task(gate.serve(watch, blocked.handler("watch")))
        # system:masters (and the loopback client) always get an answer.
        master = RequestClass(mutating=False, exempt=True)
        mastering = asyncio.create_task(gate.serve(master, blocked.handler("master")))
        await settle()
        assert blocked.entered == ["r1", "r2", "w1", "watch", "master"]
        blocked.release.set()
        await asyncio.gather(*held, writer, watching, mastering)
        assert (gate.readonly, gate.mutating) == (0, 0)
        assert (await gate.serve(READ, blocked.handler("r4"))).status_code == 200

    asyncio.run(main())


def test_zero_is_no_limit_as_upstream() -> None:
    async def main() -> None:
        gate, blocked = Fairness(max_readonly=0, max_mutating=0), Blocked()
        tasks = [asyncio.create_task(gate.serve(READ, blocked.handler(str(i)))) for i in range(9)]
        await settle()
        assert len(blocked.entered) == 9
        blocked.release.set()
        assert all(r.status_code == 200 for r in await asyncio.gather(*tasks))

    asyncio.run(main())


def test_expensive_requests_wait_their_turn_in_order_and_cheap_ones_never_wait() -> None:
    async def main() -> None:
        gate = Fairness(seats=1, queue_length=2)
        first, rest = Blocked(), Blocked()
        running = asyncio.create_task(gate.serve(EXPENSIVE, first.handler("e1")))
        await settle()
        queued = [
            asyncio.create_task(gate.serve(EXPENSIVE, rest.handler(name))) for name in ("e2", "e3")
        ]
        await settle()
        assert (first.entered, rest.entered) == (["e1"], [])
        # The queue is full: refused at once, as APF rejects when the queues are full.
        assert_too_many(await gate.serve(EXPENSIVE, rest.handler("e4")))
        # A cheap request is served while every expensive one waits.
        cheap = Blocked()
        cheap.release.set()
        assert (await gate.serve(READ, cheap.handler("get"))).status_code == 200
        first.release.set()
        rest.release.set()
        await asyncio.gather(running, *queued)
        assert rest.entered == ["e2", "e3"]  # first come, first served
        assert (gate.seated, len(gate._waiting)) == (0, 0)

    asyncio.run(main())


def test_a_client_that_leaves_the_queue_gives_its_turn_away() -> None:
    async def main() -> None:
        gate = Fairness(seats=1, queue_length=5)
        first, rest = Blocked(), Blocked()
        running = asyncio.create_task(gate.serve(EXPENSIVE, first.handler("e1")))
        await settle()
        leaving = asyncio.create_task(gate.serve(EXPENSIVE, rest.handler("gone")))
        staying = asyncio.create_task(gate.serve(EXPENSIVE, rest.handler("e3")))
        await settle()
        leaving.cancel()
        first.release.set()
        rest.release.set()
        await asyncio.gather(running, staying)
        assert rest.entered == ["e3"]
        assert gate.seated == 0

    asyncio.run(main())


def test_offload_runs_in_the_worker_thread_only_for_seated_or_large_work() -> None:
    def where() -> int:
        warning.add("recorded in the thread")
        return threading.get_ident()

    async def main() -> None:
        loop_thread = threading.get_ident()
        gate = Fairness()

        async def seated() -> Response:
            with warning.recording() as warnings:
                assert await offload(where) != loop_thread
            # The thread's warnings reach the request (contextvars are copied over).
            assert warnings == ["recorded in the thread"]
            return Response("")

        await gate.serve(EXPENSIVE, seated)
        with warning.recording():
            assert await offload(where) == loop_thread  # not seated: inline
            with offloading(True):
                assert await offload(where) != loop_thread
            with offloading(False):
                assert await offload(where) == loop_thread

        async def component() -> Response:
            with warning.recording(), offloading(True):
                # In-process work stays where a virtual clock sees it.
                assert await offload(where) == loop_thread
            return Response("")

        in_process = RequestClass(mutating=True, exempt=True, in_process=True)
        await gate.serve(in_process, component)

    asyncio.run(main())


def request(
    method: str, path: str, headers: dict[str, str] | None = None, **scope: object
) -> tuple[Request, RequestInfo]:
    path, _, query = path.partition("?")
    raw = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    http = {"type": "http", "method": method, "path": path, "query_string": query.encode()}
    built = Request({**http, "headers": raw, **scope})
    segments = [s for s in path.split("/") if s][2:]
    return built, parse_resource_path(SCHEME, "", "v1", segments)


@pytest.mark.parametrize(
    ("method", "path", "headers", "expected"),
    [
        ("GET", "/api/v1/pods", {}, EXPENSIVE),
        ("GET", "/api/v1/pods?limit=500", {}, READ),
        ("GET", "/api/v1/pods?limit=501", {}, EXPENSIVE),
        ("GET", "/api/v1/pods?limit=5&labelSelector=a%3Db", {}, EXPENSIVE),
        ("GET", "/api/v1/pods?limit=5&fieldSelector=spec.nodeName%3Dn", {}, EXPENSIVE),
        ("GET", "/api/v1/namespaces/default/pods/p", {}, READ),
        ("GET", "/api/v1/pods?watch=true", {}, RequestClass(mutating=False, long_running=True)),
        ("POST", "/api/v1/namespaces/default/pods", {"content-length": "65536"}, WRITE),
        (
            "POST",
            "/api/v1/namespaces/default/pods",
            {"content-length": "65537"},
            RequestClass(mutating=True, expensive=True),
        ),
        (
            "PATCH",
            "/api/v1/namespaces/default/pods/p",
            {"content-length": "5000", "content-type": "application/apply-patch+yaml"},
            RequestClass(mutating=True, expensive=True),
        ),
        (
            "DELETE",
            "/api/v1/namespaces/default/pods",
            {},
            RequestClass(mutating=True, expensive=True),
        ),
        ("DELETE", "/api/v1/namespaces/default/pods/p", {}, WRITE),
    ],
)
def test_requests_are_classed_from_their_line_and_headers(
    method: str, path: str, headers: dict[str, str], expected: RequestClass
) -> None:
    built, info = request(method, path, headers)
    assert classify(built, info) == expected


def test_masters_and_the_loopback_client_are_exempt() -> None:
    built, info = request("GET", "/api/v1/pods")
    loopback, info = request("GET", "/api/v1/pods", None, **{SCOPE_IN_PROCESS: True})
    assert classify(loopback, info) == RequestClass(
        mutating=False, expensive=True, exempt=True, in_process=True
    )
    token = CURRENT_USER.set(UserInfo("admin", ("system:masters", "system:authenticated")))
    try:
        assert classify(built, info) == RequestClass(mutating=False, expensive=True, exempt=True)
    finally:
        CURRENT_USER.reset(token)


# ---- through the API server --------------------------------------------------------------

Scenario = Callable[[APIServer, httpx.AsyncClient], Awaitable[None]]


def run(tmp: Path, scenario: Scenario) -> None:
    async def main() -> None:
        store = await SqliteStore(tmp / "store.db").open()
        server = APIServer(store, VirtualClock())
        await server.bootstrap()
        transport = httpx.ASGITransport(app=server.app)
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
                await scenario(server, http)
        finally:
            await server.close()
            await store.close()

    asyncio.run(main())


def pod(i: int) -> dict[str, Any]:
    return {
        "metadata": {"name": f"p-{i:04d}", "labels": {"parity": "even" if i % 2 == 0 else "odd"}},
        "spec": {"nodeName": f"n{i % 3}", "containers": [{"name": "c", "image": "i"}]},
    }


def test_the_server_answers_429_past_its_limit(tmp_path: Path) -> None:
    async def scenario(server: APIServer, http: httpx.AsyncClient) -> None:
        server.fairness.max_readonly = 1
        inside, release = asyncio.Event(), asyncio.Event()
        get = server.registry.get

        async def slow_get(*args: Any, **kwargs: Any) -> Any:
            inside.set()
            await release.wait()
            return await get(*args, **kwargs)

        server.registry.get = slow_get  # type: ignore[method-assign]
        first = asyncio.create_task(http.get("/api/v1/namespaces/default"))
        await inside.wait()
        refused = await http.get("/api/v1/namespaces/default")
        assert refused.status_code == 429
        assert refused.text == "Too many requests, please try again later.\n"
        assert refused.headers["Retry-After"] == "1"
        release.set()
        assert (await first).status_code == 200
        assert (await http.get("/api/v1/namespaces/default")).status_code == 200

    run(tmp_path, scenario)


def test_large_selector_lists_are_matched_in_steps_with_the_same_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    turns: list[int] = []
    real_turn = fairness.yield_turn

    async def counted() -> None:
        turns.append(1)
        await real_turn()

    monkeypatch.setattr(registry_reads, "yield_turn", counted)

    async def scenario(server: APIServer, http: httpx.AsyncClient) -> None:
        pods = server.scheme.lookup("", "v1", "pods")
        assert pods is not None
        for i in range(1100):
            await server.registry.create(pods, "default", pod(i))
        odd = (await http.get("/api/v1/pods", params={"labelSelector": "parity=odd"})).json()
        assert [p["metadata"]["name"] for p in odd["items"]] == [
            f"p-{i:04d}" for i in range(1, 1100, 2)
        ]
        assert len(turns) == 10  # 1100 objects: eleven chunks of 100
        # Paging with a selector: the same items, page by page.
        names, token = [], ""
        while True:
            params = {"fieldSelector": "spec.nodeName=n1", "limit": "200"}
            page = (await http.get("/api/v1/pods", params={**params, "continue": token})).json()
            names += [p["metadata"]["name"] for p in page["items"]]
            token = page["metadata"].get("continue", "")
            if not token:
                break
        assert names == [f"p-{i:04d}" for i in range(1, 1100, 3)]

    run(tmp_path, scenario)


async def aenumerate(items: AsyncIterator[Any]) -> AsyncIterator[tuple[int, Any]]:
    count = 0
    async for item in items:
        yield count, item
        count += 1


def test_a_watch_sends_a_large_initial_state_in_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    turns: list[int] = []
    real_turn = fairness.yield_turn

    async def counted() -> None:
        turns.append(1)
        await real_turn()

    monkeypatch.setattr(watch_stream, "yield_turn", counted)

    async def scenario(server: APIServer, http: httpx.AsyncClient) -> None:
        pods = server.scheme.lookup("", "v1", "pods")
        assert pods is not None
        for i in range(250):
            await server.registry.create(pods, "default", pod(i))
        watch = server.registry.watch(pods, "default", resource_version="0")

        async def initial_state() -> AsyncIterator[Any]:
            async for sent, item in aenumerate(watch):
                yield item
                if sent == 249:
                    return

        lines = watch_stream.watch_lines(
            pods,
            initial_state(),
            WatchProgress(),
            server.clock,
            request_clock=server.clock,
            table=False,
            bookmark_interval=None,
            timeout=None,
            include="Metadata",
        )
        seen = [orjson.loads(line) async for line in lines]
        assert [e["object"]["metadata"]["name"] for e in seen] == [f"p-{i:04d}" for i in range(250)]
        assert {e["type"] for e in seen} == {"ADDED"}
        assert len(turns) == 2  # a turn for others after every 100 events
        await watch.aclose()  # type: ignore[attr-defined]

    run(tmp_path, scenario)


def test_virtual_time_waits_for_work_in_the_thread() -> None:
    started, finish = threading.Event(), threading.Event()

    def work() -> str:
        started.set()
        finish.wait()
        return "done"

    async def main() -> None:
        assert await fairness.drained() is False
        with offloading(True):
            running = asyncio.ensure_future(offload(work))
            await asyncio.to_thread(started.wait)
        waiting = asyncio.ensure_future(fairness.drained())
        await settle()
        assert not waiting.done()
        finish.set()
        assert await waiting is True
        assert await running == "done"

    asyncio.run(main())
