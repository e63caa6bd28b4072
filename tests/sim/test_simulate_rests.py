"""``simulate`` samples the cluster for its chart from a sleeper on the virtual clock instead of
stopping the clock at each of the 200 samples (each stop wrote down every node's elided
heartbeats): the same report, for a fraction of the writes."""

from __future__ import annotations

import asyncio
import copy
import random
import types
from typing import Any

import pytest

from taintplane.apiserver import registry
from taintplane.scheduler import cycle
from taintplane.sim.cluster import Cluster
from taintplane.sim.scenario import parse_scenario
from taintplane.sim.simulate import SAMPLES, SimulationReport, run_scenario
from tests.sim.canonical import canonical
from tests.sim.test_simulate import SCENARIO


def play(rest_at_samples: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[SimulationReport, int]:
    """The report, the scheduler's tie-breaks and generated names fixed, and the revisions
    the run wrote."""
    monkeypatch.setattr(cycle, "random", types.SimpleNamespace(Random=lambda _: random.Random(7)))
    monkeypatch.setattr(registry, "_UNIQUE", random.Random(11))
    scenario: dict[str, Any] = copy.deepcopy(SCENARIO)
    scenario["cluster"]["pools"][0]["count"] = 9
    revisions: list[int] = []

    async def progress(cluster: Cluster, done: float, total: float) -> None:
        assert cluster.store is not None
        if done in (0.0, total):
            revisions.append(await cluster.store.current_revision())

    report = asyncio.run(
        run_scenario(parse_scenario(scenario), progress=progress, rest_at_samples=rest_at_samples)
    )
    return report, revisions[-1] - revisions[0]


def test_samples_taken_on_the_way_are_those_taken_at_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    at_rest, rest_writes = play(True, monkeypatch)
    on_the_way, writes = play(False, monkeypatch)
    assert len(on_the_way.samples) == SAMPLES + 1
    assert canonical(on_the_way.to_json()) == canonical(at_rest.to_json())
    # The outage makes zone b's nodes NotReady and the evictions happen in both.
    assert min(s.nodes_ready for s in on_the_way.samples) < 9
    assert on_the_way.counts().get("evicting", 0) > 0
    # 200 rests more (4.5 s apart), each writing down the nine nodes' heartbeats of the last
    # 10-s tick when a steady cluster's elision had left them unwritten.
    assert rest_writes - writes > 100
