"""The what-if window runs in one advance of the copy's clock, progress told from a sleeper on
it: the prediction is the one the old hundred advances gave, for a fraction of the writes (each
rest of the clock writes down every node's elided heartbeats)."""

from __future__ import annotations

import asyncio
import random
import types
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from taintplane.agents.nodes import NodeShape
from taintplane.api.selectors import parse_label_selector
from taintplane.apiserver import registry
from taintplane.clock import VirtualClock
from taintplane.scheduler import cycle
from taintplane.sim.cluster import Cluster, in_process_cluster
from taintplane.sim.snapshot import read_live
from taintplane.sim.whatif import STEPS, WhatIfReport, run_what_if
from tests.controllers.harness import START
from tests.controllers.workload_builders import DEPLOYMENTS, make_deployment
from tests.sim.canonical import canonical
from tests.sim.test_what_if import PODS, pinned_pod, plan

WINDOW = 3600.0


def take_snapshot(tmp_path: Path) -> list[dict[str, Any]]:
    """Nine nodes in zones a, b, c; a Deployment of 12; a pod on node-3 (zone a) tolerating
    ``outage`` for 600 s; read after a minute."""

    async def main() -> list[dict[str, Any]]:
        clock = VirtualClock(START)
        nodes = [NodeShape(f"node-{i}", zone="abc"[i % 3]) for i in range(1, 10)]
        async with in_process_cluster(tmp_path / "source", clock, nodes=nodes) as cluster:
            client = cluster.client
            assert client is not None
            await client.create(DEPLOYMENTS, make_deployment("web", 12, {"app": "web"}), "default")
            patient = [
                {
                    "key": "outage",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 600,
                }
            ]
            await client.create(PODS, pinned_pod("patient", "node-3", patient), "default")
            await clock.advance(60)
            return await read_live(client)

    return asyncio.run(main())


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return take_snapshot(tmp_path_factory.mktemp("snapshot"))


def predict(
    objects: list[dict[str, Any]], stops: int, monkeypatch: pytest.MonkeyPatch
) -> tuple[WhatIfReport, list[float], int]:
    """The report with the scheduler's tie-breaks and generated names fixed, the progress
    told, and the revisions the copy wrote in the window."""
    monkeypatch.setattr(cycle, "random", types.SimpleNamespace(Random=lambda _: random.Random(7)))
    monkeypatch.setattr(registry, "_UNIQUE", random.Random(11))
    told: list[float] = []
    revisions: list[int] = []

    async def progress(cluster: Cluster, done: float, total: float) -> None:
        assert total == WINDOW
        assert cluster.store is not None
        told.append(done)
        if done in (0.0, total):
            revisions.append(await cluster.store.current_revision())

    question = plan(
        objects, "outage:NoExecute", selector=parse_label_selector("topology.kubernetes.io/zone=a")
    )
    report = asyncio.run(
        run_what_if(
            objects,
            question,
            start=START + timedelta(seconds=60),
            window=WINDOW,
            progress=progress,
            stops=stops,
        )
    )
    return report, told, revisions[-1] - revisions[0]


def test_one_advance_predicts_what_a_hundred_did_with_fewer_writes(
    snapshot: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    stepped, _, stepped_writes = predict(snapshot, STEPS, monkeypatch)
    once, told, once_writes = predict(snapshot, 1, monkeypatch)
    assert canonical(once.to_json()) == canonical(stepped.to_json())
    zone_a = {"node-3", "node-6", "node-9"}
    on_zone_a = {
        o["metadata"]["name"]
        for o in snapshot
        if o["kind"] == "Pod" and o["spec"].get("nodeName") in zone_a
    }
    assert {p.name: p.outcome for p in once.affected} == dict.fromkeys(on_zone_a, "evicted")
    assert "patient" in on_zone_a
    assert len(once.replacements) >= len(on_zone_a) - 1
    # Each rest of the clock wrote the nine nodes' heartbeats down: a hundred rests, 100 x 9.
    assert stepped_writes - once_writes > 8 * STEPS
    # Progress is still told in STEPS equal parts, and last at the end of the window.
    assert told == [WINDOW * i / STEPS for i in range(STEPS)] + [WINDOW]
