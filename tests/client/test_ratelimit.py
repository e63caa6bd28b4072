"""The client-side token bucket (client-go's QPS/Burst) on a virtual clock."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping

import pytest

from taintplane.client import Client, resource
from taintplane.client.ratelimit import rate_limited
from taintplane.client.transport import RawResponse
from taintplane.clock import VirtualClock

PODS = resource("", "v1", "pods")


class _Recorder:
    """A transport that answers every request at once and notes when it came."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.instants: list[float] = []

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str = "application/json",
    ) -> RawResponse:
        self.instants.append(self.clock.monotonic())
        return RawResponse(200, b'{"kind": "Pod", "metadata": {"name": "p"}}', "application/json")

    def stream(
        self, path: str, params: Mapping[str, str]
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[bytes]]:
        raise NotImplementedError

    async def close(self) -> None:
        return None


def test_requests_beyond_the_burst_wait_for_tokens_at_qps() -> None:
    async def scenario() -> list[float]:
        clock = VirtualClock()
        recorder = _Recorder(clock)
        client = rate_limited(Client(recorder), clock, qps=10, burst=3)
        requests = asyncio.gather(*(client.get(PODS, "p", "default") for _ in range(6)))
        await clock.advance(0)
        assert recorder.instants == [0.0, 0.0, 0.0]
        await clock.advance(1)
        await requests
        # The bucket refills while idle, up to the burst, never beyond.
        await clock.advance(10)
        again = asyncio.gather(*(client.get(PODS, "p", "default") for _ in range(4)))
        await clock.advance(1)
        await again
        return recorder.instants

    instants = asyncio.run(scenario())
    assert instants[:6] == pytest.approx([0.0, 0.0, 0.0, 0.1, 0.2, 0.3])
    assert instants[6:9] == pytest.approx([11.0, 11.0, 11.0])
    assert instants[9] == pytest.approx(11.1)
