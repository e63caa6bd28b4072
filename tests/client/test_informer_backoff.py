"""An informer whose list or watch fails (a 403 for a component without the right, a server
out of reach) waits as client-go's reflector does before listing again, on its clock, and
logs one line per failure in the reflector's words, without a traceback."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest

from taintplane.backoff import Backoff, ExponentialBackoffManager
from taintplane.client import ApiError, Client, Informer, resource
from taintplane.clock import VirtualClock

PODS = resource("", "v1", "pods")
FORBIDDEN = ApiError(
    {
        "code": 403,
        "reason": "Forbidden",
        "message": 'pods is forbidden: User "system:node:n1" cannot list resource "pods" in '
        'API group "" at the cluster scope: can only list/watch pods with spec.nodeName '
        "field selector",
    }
)


class NoJitter(random.Random):
    def random(self) -> float:
        return 0.0


class FlakyServer:
    """Lists fail while ``refusing``; a watch stays open ``watch_for`` seconds, then the
    connection drops."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.refusing = True
        self.watch_for = 200.0
        self.lists: list[float] = []

    async def list(self, *_: Any, **__: Any) -> tuple[list[dict[str, Any]], str]:
        self.lists.append(self.clock.monotonic())
        if self.refusing:
            raise FORBIDDEN
        return [], "5"

    async def watch(self, *_: Any, **__: Any) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        await self.clock.sleep(self.watch_for)
        raise ConnectionError("connection refused")
        yield  # an async generator, as Client.watch


def test_relists_at_the_reflectors_backoff_and_logs_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> FlakyServer:
        clock = VirtualClock()
        server = FlakyServer(clock)
        backoff = ExponentialBackoffManager(clock, rng=NoJitter())
        informer = Informer(cast(Client, server), PODS, clock=clock, backoff=backoff)
        task = asyncio.create_task(informer.run())
        await clock.advance(100)
        # 800 ms doubling, capped at 30 s: 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30, 30 …
        assert server.lists == pytest.approx([0, 0.8, 2.4, 5.6, 12.0, 24.8, 50.4, 80.4])
        server.refusing = False
        # Listed at 110.4, then a watch healthy for 200 s: more than the 2 min after which
        # the back-off starts over, so the relist after the dropped watch is 800 ms later.
        await clock.advance(215)
        assert server.lists[-2:] == pytest.approx([110.4, 311.2])
        assert informer.synced.is_set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return server

    with caplog.at_level(logging.INFO, logger="taintplane.client.informer"):
        asyncio.run(main())
    lines = [r for r in caplog.records if r.name == "taintplane.client.informer"]
    assert all(r.exc_info is None and r.levelno == logging.ERROR for r in lines)
    messages = [r.getMessage() for r in lines]
    assert len(messages) == 9
    assert messages[0] == (
        '"Failed to watch" err="failed to list *v1.Pod: pods is forbidden: User '
        '\\"system:node:n1\\" cannot list resource \\"pods\\" in API group \\"\\" at the '
        'cluster scope: can only list/watch pods with spec.nodeName field selector" '
        'reflector="taintplane/client/informer.py" type="*v1.Pod"'
    )
    assert messages[-1] == (
        '"Failed to watch" err="connection refused" reflector="taintplane/client/informer.py" '
        'type="*v1.Pod"'
    )


def test_jitter_adds_up_to_the_wait_itself() -> None:
    clock = VirtualClock()
    backoff = ExponentialBackoffManager(clock, rng=random.Random(7))
    base = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30, 30, 30]
    waits = [backoff.next_delay() for _ in base]
    assert all(b <= w < 2 * b for b, w in zip(base, waits, strict=True))
    assert waits != base


def test_wait_backoff_steps_as_upstream() -> None:
    """wait.Backoff: the last step's wait is kept once the steps run out."""
    backoff = Backoff(1.0, factor=3.0, steps=3, cap=5.0)
    assert [backoff.step() for _ in range(5)] == [1.0, 3.0, 5.0, 5.0, 5.0]
