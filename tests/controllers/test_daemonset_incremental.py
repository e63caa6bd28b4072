"""The DaemonSet controller keeps per-node results between syncs and looks again only at nodes
that changed (issue 16). Its decisions stay those of a full pass over every node:

- every DaemonSet scenario of the other test modules runs with a cross-check that rebuilds
  the results from scratch at every pass and records any difference;
- the sums the rollout reads give what ``daemonset_rollout.Plan`` (the full pass) gives, and
  the status counts what a walk over the nodes counts, for any nodes and pods;
- after the rollout, one pod's change costs the sync one node, not every node.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taintplane.agents.nodes import NodeShape
from taintplane.client import resource
from taintplane.controllers import daemonset_util as util
from taintplane.controllers.daemonset_kept import KeptResults
from taintplane.controllers.daemonset_nodes import NodeResults, creation_order, evaluate
from taintplane.controllers.daemonset_rollout import Plan
from tests.controllers import test_daemonset, test_daemonset_history, test_daemonset_surge
from tests.controllers.harness import PODS, Sim, simulate
from tests.controllers.test_daemonset import add_node, create_ds, make_ds, placement, run
from tests.scheduler.builders import make_node

DAEMONSETS = resource("apps", "v1", "daemonsets")
SCENARIOS: list[Callable[[Path], None]] = [
    getattr(module, name)
    for module in (test_daemonset, test_daemonset_history, test_daemonset_surge)
    for name in dir(module)
    if name.startswith("test_")
]


@pytest.fixture
def cross_check() -> Iterator[list[str]]:
    KeptResults.verify = True
    KeptResults.mismatches.clear()
    try:
        yield KeptResults.mismatches
    finally:
        KeptResults.verify = False


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_kept_results_equal_a_full_pass_in_every_scenario(
    scenario: Callable[[Path], None], tmp_path: Path, cross_check: list[str]
) -> None:
    scenario(tmp_path)
    assert cross_check == []


# ---- the sums against the full pass ---------------------------------------------------------

NOW = datetime(2026, 1, 1, 0, 1, 0).astimezone()
NEW, OLD = "new-hash", "old-hash"

pod_strategy = st.tuples(
    st.booleans(),  # new template
    st.booleans(),  # ready
    st.integers(0, 30),  # ready for this many seconds
    st.booleans(),  # being deleted
    st.integers(0, 3),  # created at (order)
)
node_strategy = st.tuples(
    st.booleans(),  # exists
    st.booleans(),  # should run
    st.lists(pod_strategy, max_size=3),
)


def _pod(node: str, at: int, spec: tuple[bool, bool, int, bool, int]) -> dict[str, Any]:
    new, ready, since, deleting, created = spec
    meta: dict[str, Any] = {
        "name": f"{node}-p{at}",
        "namespace": "default",
        "labels": {util.REVISION_HASH_LABEL: NEW if new else OLD},
        "creationTimestamp": f"2026-01-01T00:00:0{created}Z",
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:30Z"
    transition = (NOW - timedelta(seconds=since)).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {"type": "Ready", "status": str(ready), "lastTransitionTime": transition}
    return {
        "metadata": meta,
        "spec": {"nodeName": node},
        "status": {"phase": "Running", "conditions": [condition]},
    }


def _answer(run: bool) -> Callable[[dict[str, Any]], tuple[bool, bool]]:
    return lambda node: (run, run)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(node_strategy, min_size=1, max_size=6),
    st.integers(0, 20),  # minReadySeconds
    st.integers(0, 3),  # maxSurge
    st.integers(0, 3),  # maxUnavailable
)
def test_sums_give_the_full_passes_plan_and_status(
    nodes: list[tuple[bool, bool, list[Any]]], min_ready: int, max_surge: int, max_unavailable: int
) -> None:
    ds: dict[str, Any] = {"metadata": {"uid": "u"}, "spec": {"minReadySeconds": min_ready}}
    by_node: dict[str, list[dict[str, Any]]] = {}
    wanted: set[str] = set()
    kept = NodeResults(("u",))
    for at, (exists, should_run, pods) in enumerate(nodes):
        name = f"n{at}"
        on_node = [_pod(name, i, spec) for i, spec in enumerate(pods)]
        if on_node:
            by_node[name] = on_node
        if exists and should_run:
            wanted.add(name)
            by_node.setdefault(name, [])
        if not exists and not on_node:
            continue
        kept.put(
            name,
            evaluate(
                name,
                {"metadata": {"name": name}} if exists else None,
                on_node,
                ds,
                NEW,
                NOW,
                _answer(should_run),
                lambda *args: (False, ()),
            ),
        )
    plan = Plan(ds, by_node, NEW, min_ready, NOW)
    assert kept.without_surge(max_unavailable) == plan.without_surge(max_unavailable)
    full = plan.with_surge(max_surge, len(wanted), wanted.__contains__)
    sums = kept.with_surge(max_surge, len(wanted))
    assert (sums.create, sums.delete) == (full.create, full.delete)
    # The status, as the full pass counted it over the nodes that exist.
    counts = [0] * 6
    for at, (exists, should_run, _) in enumerate(nodes):
        pods = by_node.get(f"n{at}", [])
        if not exists:
            continue
        if not should_run:
            counts[2] += bool(pods)
            continue
        counts[0] += 1
        if not pods:
            continue
        counts[1] += 1
        pod = sorted(pods, key=creation_order)[0]
        if util.is_pod_ready(pod):
            counts[3] += 1
            counts[5] += util.is_pod_available(pod, min_ready, NOW)
        counts[4] += util.is_pod_updated(pod, NEW, ds)
    assert kept.counts == counts


# ---- what a sync costs -----------------------------------------------------------------------


def test_one_pods_change_costs_the_sync_one_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked_at: list[str] = []
    original = evaluate

    def counting(name: str, *args: Any, **kwargs: Any) -> Any:
        looked_at.append(name)
        return original(name, *args, **kwargs)

    monkeypatch.setattr("taintplane.controllers.daemonset_kept.evaluate", counting)

    async def scenario(sim: Sim) -> None:
        for i in range(30):
            await add_node(sim, make_node(f"n{i:02}"))
        await create_ds(sim, make_ds())
        await sim.advance(1)
        placed = await placement(sim)
        assert len(placed) == 30
        looked_at.clear()
        await sim.client.patch(
            PODS,
            placed["n07"],
            {"status": {"phase": "Running"}},
            namespace="default",
            subresource="status",
        )
        await sim.advance(1)
        assert set(looked_at) == {"n07"}

    run(tmp_path, scenario)


# ---- a rollout on kubelets, time-dependent availability and node churn -----------------------


def test_a_rollout_with_min_ready_seconds_and_node_churn_matches_a_full_pass(
    tmp_path: Path, cross_check: list[str]
) -> None:
    """Simulated kubelets run the pods; ``minReadySeconds`` makes availability change with time
    alone; a node is tainted away and another (without a kubelet) added mid-rollout."""

    async def scenario(sim: Sim) -> None:
        ds = make_ds(terminationGracePeriodSeconds=0)
        ds["spec"]["minReadySeconds"] = 5
        ds["spec"]["updateStrategy"] = {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": 2},
        }
        await create_ds(sim, ds)
        await sim.advance(20)
        assert len(await placement(sim)) == 8
        current = await sim.client.get(DAEMONSETS, "agent", "default")
        current["spec"]["template"]["spec"]["containers"][0]["image"] = "agent:2"
        await sim.client.update(DAEMONSETS, current)
        await sim.advance(3)
        await sim.taint("node-3", [{"key": "gone", "value": "x", "effect": "NoExecute"}])
        await sim.create_node(make_node("node-late"))
        await sim.taint("node-late", None)
        for _ in range(60):
            await sim.advance(1)
            status = (await sim.client.get(DAEMONSETS, "agent", "default"))["status"]
            if status.get("updatedNumberScheduled") == 8 and status.get("numberAvailable") == 7:
                break
        status = (await sim.client.get(DAEMONSETS, "agent", "default"))["status"]
        assert status["desiredNumberScheduled"] == 8  # 8 nodes, one tainted away, one added
        assert status["updatedNumberScheduled"] == 8
        # The added node has no simulated kubelet: its pod is never ready.
        assert (status["numberReady"], status["numberAvailable"]) == (7, 7)
        assert "node-3" not in await placement(sim)

    simulate(
        tmp_path,
        scenario,
        components=("scheduler", "controller-manager", "agents"),
        controllers=("daemonset-controller", "node-lifecycle-controller"),
        nodes=[NodeShape(f"node-{i}") for i in range(1, 9)],
    )
    assert cross_check == []
