"""Proportional scaling between ReplicaSets of equal size: scaling up gives the leftover
replica to the newest (``ReplicaSetsBySizeNewer``), scaling down takes it from the oldest
(``ReplicaSetsBySizeOlder``), as upstream's sync.go scale() sorts them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.controllers.harness import Sim, simulate
from tests.controllers.workload_builders import (
    DEPLOYMENTS,
    REPLICASETS,
    make_deployment,
    run_all,
    warm_up,
)

ONLY = ("replicaset-controller", "deployment-controller")
WEB = {"app": "web"}
REVISION = "deployment.kubernetes.io/revision"


async def _old_and_new(sim: Sim) -> list[dict[str, Any]]:
    items, _ = await sim.client.list(REPLICASETS, "default")
    return sorted(items, key=lambda rs: int(rs["metadata"]["annotations"][REVISION]))


async def _stalled_at_two_and_two(sim: Sim) -> tuple[str, str]:
    """4 replicas, maxSurge 0, maxUnavailable 2, rolled to a template whose pods never get
    ready: the old and the new ReplicaSet stay at 2 each."""
    await warm_up(sim)
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 2}}
    web = make_deployment("web", 4, WEB, strategy=strategy)
    await sim.client.create(DEPLOYMENTS, web, namespace="default")
    await sim.advance(0)
    await run_all(sim)
    await sim.advance(5)  # the new ReplicaSet is created seconds after the old one
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "v2"}]}}}}
    await sim.client.patch(DEPLOYMENTS, "web", patch, namespace="default")
    await sim.advance(0)
    old, new = await _old_and_new(sim)
    assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (2, 2)
    return old["metadata"]["name"], new["metadata"]["name"]


async def _last_scaling(sim: Sim) -> str:
    return str((await sim.events("ScalingReplicaSet"))[-1]["message"])


def test_scaling_up_gives_the_odd_replica_to_the_newer(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        _, new = await _stalled_at_two_and_two(sim)
        await sim.client.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 5}}, namespace="default")
        await sim.advance(0)
        assert await _last_scaling(sim) == f"Scaled up replica set {new} from 2 to 3"
        sizes = [rs["spec"]["replicas"] for rs in await _old_and_new(sim)]
        assert sizes == [2, 3]

    simulate(tmp_path, scenario, controllers=ONLY)


def test_scaling_down_takes_the_odd_replica_from_the_older(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        old, _ = await _stalled_at_two_and_two(sim)
        await sim.client.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 3}}, namespace="default")
        await sim.advance(0)
        assert await _last_scaling(sim) == f"Scaled down replica set {old} from 2 to 1"
        sizes = [rs["spec"]["replicas"] for rs in await _old_and_new(sim)]
        assert sizes == [1, 2]

    simulate(tmp_path, scenario, controllers=ONLY)
