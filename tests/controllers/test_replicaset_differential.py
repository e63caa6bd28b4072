"""The ReplicaSet controller's sync from kept counts decides, writes and records exactly what
its sync over every pod (upstream's algorithm, the one it falls back to for adoption, release
and scale-down) does: one scenario run both ways, compared step by step."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from taintplane.controllers.replicaset import ReplicaSetController
from taintplane.controllers.replicaset_handlers import selector_of
from taintplane.controllers.workloads import OWNER_INDEX, is_pod_active
from tests.controllers.harness import PODS, Sim, simulate
from tests.controllers.workload_builders import (
    REPLICASETS,
    bind,
    make_orphan,
    make_rs,
    pods,
    run_all,
    set_phase,
    warm_up,
)

WEB = {"app": "web"}


async def walking_sync(self: ReplicaSetController, key: str) -> None:
    """Every sync over the pods themselves."""
    rs = self.replicasets.get(key)
    if rs is None:
        self.expectations.forget(key)
        return
    needs_sync = self.expectations.satisfied(key)
    selector = selector_of(rs)
    if selector is None or selector.is_empty():
        return
    namespace = rs["metadata"]["namespace"]
    adoptable = [
        p
        for p in self.pods.by_index(OWNER_INDEX, f"orphan/{namespace}")
        if is_pod_active(p) and selector.matches(p["metadata"].get("labels") or {})
    ]
    await self._sync_walking(key, rs, selector, adoptable, needs_sync)


async def snapshot(sim: Sim) -> dict[str, Any]:
    """What can be compared between runs (pod names are generated, so pods are counted by
    what they are, and events by reason and how many)."""
    rs = await sim.client.get(REPLICASETS, "web", "default")
    shapes: Counter[tuple[Any, ...]] = Counter()
    for pod in await pods(sim):
        meta = pod["metadata"]
        shapes[
            (
                tuple(sorted((meta.get("labels") or {}).items())),
                bool(meta.get("ownerReferences")),
                (pod.get("status") or {}).get("phase"),
                bool(meta.get("deletionTimestamp")),
            )
        ] += 1
    events: Counter[str] = Counter()
    for reason in ("SuccessfulCreate", "SuccessfulDelete", "FailedCreate"):
        events[reason] = sum(int(e.get("count") or 1) for e in await sim.events(reason))
    status = dict(rs.get("status") or {})
    for condition in status.get("conditions") or []:
        condition.pop("lastTransitionTime", None)
    return {"status": status, "pods": sorted(shapes.items()), "events": dict(events)}


def run_scenario(tmp_path: Path) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        for name, labels in (("o1", WEB), ("o2", WEB), ("db", {"app": "db"})):
            await sim.create_pod(make_orphan(name, labels))
        await set_phase(sim, (await sim.pod("o1")) or {}, "Running", ready=True)
        await sim.client.create(REPLICASETS, make_rs("web", 4, WEB, min_ready=5), "default")
        await sim.advance(0)
        seen.append(await snapshot(sim))
        await sim.advance_to(1)
        await run_all(sim, "app=web")
        seen.append(await snapshot(sim))
        for instant in (5.5, 6.01, 7):
            await sim.advance_to(instant)
            seen.append(await snapshot(sim))
        owned = [p for p in await pods(sim, "app=web") if p["metadata"].get("ownerReferences")]
        await sim.client.patch(
            PODS,
            owned[0]["metadata"]["name"],
            {"metadata": {"labels": {"app": "x"}}},
            namespace="default",
        )
        await sim.advance(0)
        seen.append(await snapshot(sim))
        await set_phase(sim, owned[1], "Failed")
        await sim.advance(0)
        seen.append(await snapshot(sim))
        await bind(sim, owned[2], "n1")
        await sim.client.delete(PODS, owned[2]["metadata"]["name"], "default")
        await sim.advance(0)
        seen.append(await snapshot(sim))
        for replicas in (2, 6):
            patch = {"spec": {"replicas": replicas}}
            await sim.client.patch(REPLICASETS, "web", patch, namespace="default")
            await sim.advance(0)
            seen.append(await snapshot(sim))
        for pod in await pods(sim, "app=web"):
            if pod["status"].get("phase") == "Pending" and not pod["metadata"].get(
                "deletionTimestamp"
            ):
                await set_phase(sim, pod, "Running", ready=True)
        await sim.advance(30)
        seen.append(await snapshot(sim))

    simulate(tmp_path, scenario, controllers=("replicaset-controller",))
    return seen


def test_counted_syncs_match_walking_syncs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counted = run_scenario(tmp_path / "counted")
    monkeypatch.setattr(ReplicaSetController, "sync", walking_sync)
    walked = run_scenario(tmp_path / "walked")
    assert len(counted) == len(walked) == 11
    for step, (ours, theirs) in enumerate(zip(counted, walked, strict=True)):
        assert ours == theirs, f"step {step}"
    # The scenario did what it is meant to exercise.
    assert counted[0]["events"]["SuccessfulCreate"] == 2  # two orphans adopted, two created
    assert counted[4]["status"]["availableReplicas"] == 4
    assert counted[8]["events"]["SuccessfulDelete"] >= 2
