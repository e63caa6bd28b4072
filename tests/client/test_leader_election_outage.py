"""Leader election while the API server cannot be reached (it restarts): as client-go's
tryAcquireOrRenew, the failure is logged and retried; the leader keeps leading through a short
outage and stops once it could not renew for renew_deadline. Virtual time, no sleeps."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import httpx
import pytest

from taintplane.client import Client
from taintplane.client.leaderelection import LeaderElector
from taintplane.client.transport import RawResponse, Transport
from tests.controllers.harness import Sim, simulate


class Outage:
    """A transport that refuses connections while ``down``, as a stopped API server does."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.down = False

    def _refuse(self) -> None:
        if self.down:
            raise httpx.ConnectError("[Errno 111] Connection refused")

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str = "application/json",
    ) -> RawResponse:
        self._refuse()
        return await self.inner.request(
            method, path, params=params, body=body, content_type=content_type
        )

    def stream(
        self, path: str, params: Mapping[str, str]
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[bytes]]:
        self._refuse()
        return self.inner.stream(path, params)

    async def close(self) -> None:
        await self.inner.close()


async def _work() -> None:
    await asyncio.Event().wait()  # runs until cancelled


def test_a_short_outage_keeps_the_leader(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def scenario(sim: Sim) -> None:
        transport = Outage(sim.client.transport)
        elector = LeaderElector(Client(transport), sim.clock, name="kube-scheduler", identity="a")
        task = asyncio.create_task(elector.run(_work))
        await sim.advance(0)
        assert elector.leading
        transport.down = True
        await sim.advance(8)  # renewals at 2, 4, 6, 8 s fail: still within the 10 s deadline
        assert elector.leading
        assert not task.done()
        transport.down = False
        await sim.advance(30)
        assert elector.leading
        assert not elector.lost
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    with caplog.at_level(logging.ERROR, logger="taintplane.client.leaderelection"):
        simulate(tmp_path, scenario, components=())
    assert (
        "error retrieving resource lock kube-system/kube-scheduler: "
        "[Errno 111] Connection refused" in caplog.messages
    )


def test_no_renewal_for_the_renew_deadline_loses_the_lease(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario(sim: Sim) -> None:
        transport = Outage(sim.client.transport)
        elector = LeaderElector(Client(transport), sim.clock, name="kube-scheduler", identity="a")
        task = asyncio.create_task(elector.run(_work))
        await sim.advance(0)
        transport.down = True
        await sim.advance(9)
        assert elector.leading
        await sim.advance(1)  # the renewal at 10 s fails too: 10 s without one
        assert task.done()
        assert task.result() is None  # no traceback: run() returns, having stopped the work
        assert (elector.leading, elector.lost) == (False, True)

    with caplog.at_level(logging.ERROR, logger="taintplane.client.leaderelection"):
        simulate(tmp_path, scenario, components=())
    assert (
        "failed to renew lease kube-system/kube-scheduler: timed out waiting for the condition"
        in caplog.messages
    )


def test_a_candidate_waits_out_an_outage_then_leads(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        transport = Outage(sim.client.transport)
        transport.down = True
        elector = LeaderElector(Client(transport), sim.clock, name="kube-scheduler", identity="a")
        task = asyncio.create_task(elector.run(_work))
        await sim.advance(60)
        assert not elector.leading
        assert not task.done()
        transport.down = False
        await sim.advance(2)
        assert elector.leading
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    simulate(tmp_path, scenario, components=())


def test_the_work_failing_is_not_swallowed(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        async def broken() -> None:
            raise RuntimeError("the scheduler broke")

        elector = LeaderElector(sim.client, sim.clock, name="kube-scheduler", identity="a")
        with pytest.raises(RuntimeError, match="the scheduler broke"):
            await elector.run(broken)
        assert not elector.lost

    simulate(tmp_path, scenario, components=())
