"""How often the Deployment controller looks again at a Deployment that is not progressing
(upstream's ``requeueStuckDeployment``), and the work queue's rate limiter that bounds it
(client-go's ``DefaultControllerRateLimiter``): on virtual time, counting syncs."""

from __future__ import annotations

import asyncio
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from taintplane.client.workqueue import TokenBucket, WorkQueue
from taintplane.clock import VirtualClock
from taintplane.controllers import deployment as deployment_module
from taintplane.controllers.deployment import DeploymentController
from taintplane.sim.scenario import parse_scenario
from taintplane.sim.simulate import run_scenario
from tests.controllers.harness import Sim, simulate
from tests.controllers.workload_builders import (
    DEPLOYMENTS,
    make_deployment,
    pods,
    run_all,
    set_phase,
    warm_up,
)

ONLY = ("replicaset-controller", "deployment-controller")
WEB = {"app": "web"}
DEADLINE = 600  # progressDeadlineSeconds' default


def count_syncs(sim: Sim, monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The instants (seconds from the start) at which the Deployment controller syncs."""
    assert sim.cluster.controller_manager is not None
    controller = sim.cluster.controller_manager.controllers["deployment-controller"]
    assert isinstance(controller, DeploymentController)
    instants: list[float] = []
    sync = controller.sync

    async def counted(key: str) -> None:
        instants.append(sim.elapsed)
        await sync(key)

    monkeypatch.setattr(controller, "sync", counted)
    return instants


async def progressing(sim: Sim) -> dict[str, Any]:
    d = await sim.client.get(DEPLOYMENTS, "web", "default")
    return next(c for c in d["status"]["conditions"] if c["type"] == "Progressing")


def between(instants: list[float], start: float, end: float) -> int:
    return sum(1 for t in instants if start <= t < end)


# ---- the rate limiter ----------------------------------------------------------------------


def test_token_bucket_lends_its_burst_then_one_token_every_tenth_of_a_second() -> None:
    async def main() -> None:
        clock = VirtualClock()
        bucket = TokenBucket(clock, qps=10, burst=100)
        assert [bucket.reserve() for _ in range(100)] == [0.0] * 100
        assert bucket.reserve() == pytest.approx(0.1)
        assert bucket.reserve() == pytest.approx(0.2)
        await clock.advance(1)  # ten tokens back: the two borrowed, then eight in hand
        assert [bucket.reserve() for _ in range(8)] == [0.0] * 8
        assert bucket.reserve() == pytest.approx(0.1)
        await clock.advance(3600)  # refills to the burst, no more
        assert [bucket.reserve() for _ in range(100)] == [0.0] * 100
        assert bucket.reserve() == pytest.approx(0.1)

    asyncio.run(main())


def test_a_key_retried_after_every_successful_sync_runs_ten_times_a_second() -> None:
    """The per-key backoff is forgotten after each sync, so it stays at 5 ms; the shared bucket
    is what holds such a key back once its 100 tokens are spent."""

    async def main() -> None:
        clock = VirtualClock()
        queue = WorkQueue(clock, name="test")
        instants: list[float] = []

        async def sync(key: str) -> None:
            instants.append(clock.monotonic())
            queue.retry(key)

        queue.add("k")
        runner = asyncio.create_task(queue.run(sync))
        await clock.advance(0)
        for _ in range(30):
            await clock.advance(1)
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
        gaps = [b - a for a, b in pairwise(instants)]
        assert gaps[:100] == pytest.approx([0.005] * 100)
        assert between(instants, 0, 1) < 120
        for second in range(5, 30):
            assert between(instants, second, second + 1) in (10, 11)

    asyncio.run(main())


# ---- the Deployment controller -------------------------------------------------------------


def test_a_stuck_rollout_times_out_a_second_past_its_deadline_then_rests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No pod ever runs (no kubelets): Progressing stays ReplicaSetUpdated from the creation;
    upstream requeues the Deployment for lastUpdateTime + progressDeadlineSeconds + 1 s (the
    second against clock skew; timing out needs the deadline strictly past), writes
    ProgressDeadlineExceeded then, and looks no more."""

    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        syncs = count_syncs(sim, monkeypatch)
        await sim.client.create(DEPLOYMENTS, make_deployment("web", 2, WEB), namespace="default")
        await sim.advance(0)
        started = await progressing(sim)
        assert (started["status"], started["reason"]) == ("True", "ReplicaSetUpdated")
        assert started["lastUpdateTime"] == "2026-01-01T00:00:00Z"
        await sim.advance_to(DEADLINE + 0.999)
        assert (await progressing(sim))["status"] == "True"
        await sim.advance_to(DEADLINE + 1)
        timed_out = await progressing(sim)
        rs_name = (await pods(sim))[0]["metadata"]["ownerReferences"][0]["name"]
        assert timed_out == {
            "type": "Progressing",
            "status": "False",
            "lastUpdateTime": "2026-01-01T00:10:01Z",
            "lastTransitionTime": "2026-01-01T00:10:01Z",
            "reason": "ProgressDeadlineExceeded",
            "message": f'ReplicaSet "{rs_name}" has timed out progressing.',
        }
        settled = len(syncs)
        await sim.advance_to(20 * 60)
        assert len(syncs) == settled  # timed out: nothing more to estimate
        assert len(syncs) < 50

    simulate(tmp_path, scenario, controllers=ONLY)


def test_a_complete_deployment_is_not_requeued(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The progress checks queued while the rollout went on (for its deadline, a second past)
    still come; finding the Deployment complete, they queue nothing more."""

    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        syncs = count_syncs(sim, monkeypatch)
        await sim.client.create(DEPLOYMENTS, make_deployment("web", 2, WEB), namespace="default")
        await sim.advance(0)
        await run_all(sim)
        await sim.advance(1)
        assert (await progressing(sim))["reason"] == "NewReplicaSetAvailable"
        settled = len(syncs)
        await sim.advance_to(20 * 60)
        assert set(syncs[settled:]) <= {DEADLINE + 1.0}
        assert len(syncs) < 20

    simulate(tmp_path, scenario, controllers=ONLY)


def test_a_complete_deployment_that_loses_its_pods_is_held_to_ten_syncs_a_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upstream keeps Progressing=True/NewReplicaSetAvailable here (it estimates progress only
    during a rollout, issue 106054), so the deadline from that condition's lastUpdateTime
    passes without a timeout, and every sync requeues rate-limited: the queue's bucket allows
    10 a second, where the per-key 5 ms backoff alone (forgotten after each sync) made it 200."""

    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        syncs = count_syncs(sim, monkeypatch)
        await sim.client.create(DEPLOYMENTS, make_deployment("web", 2, WEB), namespace="default")
        await sim.advance(0)
        await run_all(sim)
        await sim.advance_to(60)
        for pod in await pods(sim):
            await set_phase(sim, pod, "Running", ready=False)
        await sim.advance(1)
        assert (await progressing(sim))["reason"] == "NewReplicaSetAvailable"
        before_deadline = len(syncs)
        await sim.advance_to(DEADLINE - 1)
        assert len(syncs) == before_deadline  # requeued for the deadline, not before
        await sim.advance_to(20 * 60)
        condition = await progressing(sim)
        assert (condition["status"], condition["reason"]) == ("True", "NewReplicaSetAvailable")
        assert between(syncs, DEADLINE, DEADLINE + 2) < 130  # the bucket's burst, then 10/s
        for minute in range(11, 20):
            assert 595 <= between(syncs, minute * 60, (minute + 1) * 60) <= 605
        assert len(syncs) < 100 + 10 * (20 * 60 - DEADLINE) + 50

    simulate(tmp_path, scenario, controllers=ONLY)


def test_the_stuck_deployment_scenario_syncs_at_the_rate_limiters_pace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The user's report: a 2-replica Deployment pinned to node-1, whose node gets a NoExecute
    taint, simulated for 20 minutes (it synced every 5 ms past the deadline: ~240 000 times)."""
    instants: list[float] = []
    sync = DeploymentController.sync

    async def counted(self: DeploymentController, key: str) -> None:
        instants.append(self.clock.monotonic())
        await sync(self, key)

    monkeypatch.setattr(deployment_module.DeploymentController, "sync", counted)
    scenario = parse_scenario(
        {
            "name": "stuck deployment",
            "nodes": 3,
            "until": "20m",
            "objects": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": "aff"},
                    "spec": {
                        "replicas": 2,
                        "selector": {"matchLabels": {"app": "aff"}},
                        "template": {
                            "metadata": {"labels": {"app": "aff"}},
                            "spec": {
                                "nodeSelector": {"kubernetes.io/hostname": "node-1"},
                                "containers": [{"name": "c", "image": "busybox"}],
                            },
                        },
                    },
                }
            ],
            "steps": [
                {
                    "at": "1m",
                    "taint": {"nodes": ["node-1"], "taints": ["maintenance=true:NoExecute"]},
                }
            ],
        }
    )
    report = asyncio.run(run_scenario(scenario))
    assert report.counts()["unschedulable"] == 2
    assert between(instants, 0, DEADLINE) < 50
    assert len(instants) < 100 + 10 * (20 * 60 - DEADLINE) + 100


def test_a_deployment_deleted_under_its_sync_is_retried_without_an_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """`kubectl delete deployment` right after a change: the sync's write answers 404. The
    log of `taintplane up` had 'deployment: error syncing "default/web": deployments.apps
    "web" not found, requeuing' for each; upstream logs it at V(2)."""
    from taintplane.client import ApiError

    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        assert sim.cluster.controller_manager is not None
        controller = sim.cluster.controller_manager.controllers["deployment-controller"]
        assert isinstance(controller, DeploymentController)
        sync, calls = controller.sync, []

        async def deleted_once(key: str) -> None:
            calls.append(key)
            if len(calls) == 1:
                raise ApiError(
                    {
                        "code": 404,
                        "reason": "NotFound",
                        "message": 'deployments.apps "web" not found',
                    }
                )
            await sync(key)

        monkeypatch.setattr(controller, "sync", deleted_once)
        await sim.client.create(DEPLOYMENTS, make_deployment("web", 1, WEB), namespace="default")
        await sim.advance(1)
        assert calls[:2] == ["default/web", "default/web"]  # retried

    with caplog.at_level("INFO"):
        simulate(tmp_path, scenario, controllers=ONLY)
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == []
