"""Conflicts inside an eviction are retried as upstream's EvictionsRetry: 500 ms apart (plus
up to 10 % jitter), 20 attempts in all, then the last conflict is the answer; the waits are on
the request clock (a virtual one here, so the instants are exact)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from taintplane.apiserver.app import APIServer
from taintplane.apiserver.status import APIError
from taintplane.clock import VirtualClock
from taintplane.store.sqlite import SqliteStore

PODS = "/api/v1/namespaces/default/pods"
PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
MERGE = {"Content-Type": "application/merge-patch+json"}


@asynccontextmanager
async def _api(tmp: Path) -> AsyncIterator[tuple[APIServer, httpx.AsyncClient, VirtualClock]]:
    store = await SqliteStore(tmp / "store.db").open()
    server = APIServer(store, VirtualClock())
    request_clock = VirtualClock()
    # Advancing waits for the store's worker threads, so a retry's sleep is always begun
    # before the clock moves past it.
    request_clock.add_quiescence_check(store.drained)
    server.handlers.request_clock = request_clock
    await server.bootstrap()
    transport = httpx.ASGITransport(app=server.app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            yield server, http, request_clock
    finally:
        await server.close()
        await store.close()


async def _pod(http: httpx.AsyncClient, name: str, *, running: bool) -> None:
    body = {
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]},
    }
    assert (await http.post(PODS, json=body)).status_code == 201
    if running:
        status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        patched = await http.patch(f"{PODS}/{name}/status", json={"status": status}, headers=MERGE)
        assert patched.status_code == 200


def _conflicting(
    server: APIServer, method: str, times: int, clock: VirtualClock, calls: list[float]
) -> None:
    """The registry's ``method`` answers 409 the first ``times`` calls (then works)."""
    registry = server.handlers.registry
    real: Callable[..., Awaitable[Any]] = getattr(registry, method)
    pods = registry.scheme.lookup("", "v1", "pods")
    assert pods is not None

    async def flaky(*args: Any, **kwargs: Any) -> Any:
        calls.append(clock.monotonic())
        if len(calls) <= times:
            raise APIError.conflict(pods, "p", "the object has been modified")
        return await real(*args, **kwargs)

    setattr(registry, method, flaky)


async def _evict(
    http: httpx.AsyncClient, clock: VirtualClock, name: str, wait: float
) -> httpx.Response:
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}
    answer = asyncio.create_task(http.post(f"{PODS}/{name}/eviction", json=body))
    await clock.advance(wait)
    return await answer


def _gaps(calls: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(calls)]


def test_a_deletion_that_conflicts_is_tried_again_500_ms_later(tmp_path: Path) -> None:
    async def main() -> None:
        async with _api(tmp_path) as (server, http, clock):
            await _pod(http, "p", running=False)  # Pending: deleted without the budget
            calls: list[float] = []
            _conflicting(server, "delete", 3, clock, calls)
            answer = await _evict(http, clock, "p", 5)
            assert answer.status_code == 201, answer.text
            assert len(calls) == 4
            assert all(0.5 <= gap <= 0.55 for gap in _gaps(calls)), calls

    asyncio.run(main())


def test_twenty_conflicts_and_the_last_one_is_the_answer(tmp_path: Path) -> None:
    async def main() -> None:
        async with _api(tmp_path) as (server, http, clock):
            await _pod(http, "p", running=False)
            calls: list[float] = []
            _conflicting(server, "delete", 1000, clock, calls)
            answer = await _evict(http, clock, "p", 60)
            assert answer.status_code == 409
            assert answer.json()["reason"] == "Conflict"
            assert len(calls) == 20
            assert 19 * 0.5 <= calls[-1] - calls[0] <= 19 * 0.55

    asyncio.run(main())


def test_a_budget_status_that_conflicts_is_read_again_500_ms_later(tmp_path: Path) -> None:
    async def main() -> None:
        async with _api(tmp_path) as (server, http, clock):
            await _pod(http, "p", running=True)
            budget = {
                "metadata": {"name": "b"},
                "spec": {"selector": {"matchLabels": {"app": "web"}}},
            }
            assert (await http.post(PDBS, json=budget)).status_code == 201
            status = {
                "observedGeneration": 1,
                "disruptionsAllowed": 1,
                "currentHealthy": 1,
                "desiredHealthy": 0,
                "expectedPods": 1,
            }
            patched = await http.patch(f"{PDBS}/b/status", json={"status": status}, headers=MERGE)
            assert patched.status_code == 200
            calls: list[float] = []
            _conflicting(server, "update", 2, clock, calls)
            answer = await _evict(http, clock, "p", 5)
            assert answer.status_code == 201, answer.text
            assert len(calls) == 3
            assert all(0.5 <= gap <= 0.55 for gap in _gaps(calls)), calls
            after = (await http.get(f"{PDBS}/b")).json()["status"]
            assert after["disruptionsAllowed"] == 0
            assert list(after["disruptedPods"]) == ["p"]

    asyncio.run(main())


def test_only_a_pending_pod_is_deleted_as_it_was_looked_at(tmp_path: Path) -> None:
    """shouldEnforceResourceVersion: a finished pod's deletion names no resourceVersion, so a
    status write that lands meanwhile is no conflict."""

    async def main() -> None:
        async with _api(tmp_path) as (server, http, clock):
            await _pod(http, "done", running=False)
            await _pod(http, "waiting", running=False)
            finished = {"status": {"phase": "Succeeded"}}
            patched = await http.patch(f"{PODS}/done/status", json=finished, headers=MERGE)
            assert patched.status_code == 200
            registry = server.handlers.registry
            real = registry.delete
            pinned: dict[str, Any] = {}

            async def recording(*args: Any, **kwargs: Any) -> Any:
                pinned[args[2]] = (kwargs.get("preconditions") or {}).get("resourceVersion")
                return await real(*args, **kwargs)

            registry.delete = recording  # type: ignore[method-assign]
            for name in ("done", "waiting"):
                assert (await _evict(http, clock, name, 0)).status_code == 201
            assert pinned["done"] is None
            assert pinned["waiting"]

    asyncio.run(main())
