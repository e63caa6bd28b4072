"""The ReplicaSet controller's pacing, sync by sync: ``burstReplicas`` (500) creations at most
per sync, slow-start batches (1, 2, 4, …) that stop after a failing batch, and expectations
that hold a sync back until the informer has shown the controller its own creations and
deletions (or five minutes have passed).

The controller runs against a real API server, but its informers are refreshed only when a
test says so (``observe``), so "the cache has not seen it yet" is an exact state here."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from taintplane.client import ApiError, Client
from taintplane.client.shared import SharedInformers
from taintplane.clock import VirtualClock
from taintplane.controllers.replicaset import ReplicaSetController
from taintplane.sim.cluster import in_process_cluster
from tests.controllers.harness import PODS, START
from tests.controllers.workload_builders import REPLICASETS, make_rs

WEB = {"app": "web"}
KEY = "default/web"


class Harness:
    def __init__(self, client: Client, clock: VirtualClock) -> None:
        self.client = client
        self.clock = clock
        self.informers = SharedInformers(client)  # never started: refreshed by observe()
        self.controller = ReplicaSetController(client, clock, self.informers)

    async def observe(self) -> None:
        """Let the controller's informers catch up with the server (a relist, which tells
        the handlers of every difference, as a watch would have)."""
        await self.informers.informer("apps", "v1", "replicasets")._list()
        await self.informers.pods._list()

    async def pods(self) -> list[dict[str, Any]]:
        items, _ = await self.client.list(PODS, "default")
        return [p for p in items if not p["metadata"].get("deletionTimestamp")]

    async def sync(self) -> int:
        """One sync of the ReplicaSet; how many pods it added (negative: removed)."""
        before = len(await self.pods())
        await self.controller.sync(KEY)
        return len(await self.pods()) - before


def run(tmp_path: Path, scenario: Callable[[Harness], Awaitable[None]]) -> None:
    async def main() -> None:
        clock = VirtualClock(START)
        async with in_process_cluster(tmp_path, clock, components=()) as cluster:
            assert cluster.client is not None
            harness = Harness(cluster.client, clock)
            await scenario(harness)
            await harness.controller.recorder.flush()

    asyncio.run(main())


def test_creations_are_capped_at_burst_replicas_per_sync_until_observed(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        await h.client.create(REPLICASETS, make_rs("web", 600, WEB), namespace="default")
        await h.observe()
        assert await h.sync() == 500  # burstReplicas
        assert await h.sync() == 0  # its 500 creations are not observed yet
        await h.observe()
        assert await h.sync() == 100
        await h.observe()
        assert await h.sync() == 0
        status = (await h.client.get(REPLICASETS, "web", "default"))["status"]
        assert status["replicas"] == 600
        assert status["fullyLabeledReplicas"] == 600

    run(tmp_path, scenario)


class FailingCreates:
    """Wraps the controller's client: pod creations fail once ``allowed`` have succeeded, as
    a quota or an admission webhook would refuse them. Records each slow-start batch."""

    def __init__(self, client: Client, allowed: int) -> None:
        self.client = client
        self.allowed = allowed
        self.created = 0
        self.finished = 0
        #: Creations attempted, by how many had finished when each began: a batch starts
        #: only after the one before it has finished, so each key is one batch.
        self.started_after: dict[int, int] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    async def create(self, rt: Any, body: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        if rt.plural != "pods":
            return await self.client.create(rt, body, **kwargs)
        self.started_after[self.finished] = self.started_after.get(self.finished, 0) + 1
        await asyncio.sleep(0)  # every creation of a batch starts before any finishes
        try:
            if self.created >= self.allowed:
                raise ApiError(
                    {
                        "kind": "Status",
                        "code": 403,
                        "reason": "Forbidden",
                        "message": 'pods "web-x" is forbidden: exceeded quota: pods',
                    }
                )
            self.created += 1
            return await self.client.create(rt, body, **kwargs)
        finally:
            self.finished += 1

    def batches(self) -> list[int]:
        return [self.started_after[k] for k in sorted(self.started_after)]


def test_slow_start_doubles_batches_and_stops_after_a_failing_one(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        failing = FailingCreates(h.client, allowed=3)
        h.controller.client = failing  # type: ignore[assignment]
        await h.client.create(REPLICASETS, make_rs("web", 10, WEB), namespace="default")
        await h.observe()
        with pytest.raises(ApiError, match="exceeded quota") as refused:
            await h.controller.sync(KEY)
        assert refused.value.code == 403
        # Batches of 1, 2 and 4: the third has four refusals, and the last 3 are not tried.
        assert failing.batches() == [1, 2, 4]
        assert len(await h.pods()) == 3
        status = (await h.client.get(REPLICASETS, "web", "default"))["status"]
        [condition] = status["conditions"]
        assert condition["type"] == "ReplicaFailure"
        assert condition["reason"] == "FailedCreate"
        assert condition["message"] == 'pods "web-x" is forbidden: exceeded quota: pods'
        assert status["replicas"] == 0  # counted before its own creations are observed
        # The 7 refused or skipped creations count as observed; the 3 made are still due.
        assert await h.sync() == 0
        assert failing.batches() == [1, 2, 4]
        failing.allowed = 100
        failing.started_after.clear()
        await h.observe()
        assert await h.sync() == 7
        assert failing.batches() == [1, 2, 4]
        await h.observe()
        assert await h.sync() == 0
        status = (await h.client.get(REPLICASETS, "web", "default"))["status"]
        assert "conditions" not in status  # the failure is over: ReplicaFailure removed
        assert status["replicas"] == 10

    run(tmp_path, scenario)


def test_unobserved_expectations_expire_after_five_minutes(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        await h.client.create(REPLICASETS, make_rs("web", 2, WEB), namespace="default")
        await h.observe()
        assert await h.sync() == 2
        await h.clock.advance(300)  # ExpectationsTimeout: not yet past it
        assert await h.sync() == 0
        await h.clock.advance(1)
        # Expired: the controller acts on its cache, which has never seen the two pods.
        assert await h.sync() == 2

    run(tmp_path, scenario)


def test_deletions_are_expected_until_observed(tmp_path: Path) -> None:
    async def scale(h: Harness, replicas: int) -> None:
        rs = await h.client.get(REPLICASETS, "web", "default")
        rs["spec"]["replicas"] = replicas
        await h.client.update(REPLICASETS, rs)
        await h.informers.informer("apps", "v1", "replicasets")._list()

    async def scenario(h: Harness) -> None:
        await h.client.create(REPLICASETS, make_rs("web", 3, WEB), namespace="default")
        await h.observe()
        assert await h.sync() == 3
        await h.observe()
        await scale(h, 1)
        assert await h.sync() == -2
        # The cache still shows three pods, but two deletions are awaited: no second pick.
        await scale(h, 0)
        assert await h.sync() == 0
        await h.observe()
        assert await h.sync() == -1
        await h.observe()
        assert await h.sync() == 0

    run(tmp_path, scenario)
