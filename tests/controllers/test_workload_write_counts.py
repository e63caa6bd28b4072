"""How many syncs and writes the Deployment and ReplicaSet controllers spend on a pod that goes
and its replacement, on virtual time: upstream's count.

Upstream writes a ReplicaSet's status once per sync and only when it changed, and syncs a
Deployment on each change of one of its ReplicaSets and of itself. A sync must not act on the
cached copy from before the controller's own last write (its watch event still on its way):
that re-wrote what was stored through a 409 and a GET, queued the Deployment once more for each
such write, and put a Deployment sync 5 ms later (the 409's rate-limited retry)."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import pytest

from taintplane.client import ApiError, Client
from taintplane.controllers.deployment import DeploymentController
from taintplane.controllers.own_writes import OwnWrites
from taintplane.controllers.replicaset import ReplicaSetController
from tests.controllers.harness import PODS, Sim, simulate
from tests.controllers.workload_builders import (
    DEPLOYMENTS,
    REPLICASETS,
    make_deployment,
    pods,
    run_all,
    set_phase,
    warm_up,
)

ONLY = ("replicaset-controller", "deployment-controller")
WEB = {"app": "web"}


class Counting:
    """Wraps a controller's client: counts its writes by (verb, resource, subresource) and
    their 409s."""

    def __init__(self, client: Client, counts: collections.Counter[Any]) -> None:
        self.client = client
        self.counts = counts

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    async def _counted(self, verb: str, rt: Any, *args: Any, **kwargs: Any) -> Any:
        tag = (verb, rt.plural, kwargs.get("subresource"))
        self.counts[tag] += 1
        try:
            return await getattr(self.client, verb)(rt, *args, **kwargs)
        except ApiError as error:
            self.counts[(*tag, error.code)] += 1
            raise

    async def update(self, rt: Any, *args: Any, **kwargs: Any) -> Any:
        return await self._counted("update", rt, *args, **kwargs)

    async def get(self, rt: Any, *args: Any, **kwargs: Any) -> Any:
        return await self._counted("get", rt, *args, **kwargs)


def instrument(
    sim: Sim, monkeypatch: pytest.MonkeyPatch
) -> tuple[collections.Counter[Any], list[float]]:
    """The two controllers' requests, and the instants of the Deployment's syncs."""
    assert sim.cluster.controller_manager is not None
    controllers = sim.cluster.controller_manager.controllers
    deployments = controllers["deployment-controller"]
    replicasets = controllers["replicaset-controller"]
    assert isinstance(deployments, DeploymentController)
    assert isinstance(replicasets, ReplicaSetController)
    counts: collections.Counter[Any] = collections.Counter()
    for controller in (deployments, replicasets):
        monkeypatch.setattr(controller, "client", Counting(controller.client, counts))
    instants: list[float] = []
    sync = deployments.sync

    async def counted(key: str) -> None:
        instants.append(sim.elapsed)
        await sync(key)

    monkeypatch.setattr(deployments, "sync", counted)
    return counts, instants


async def replace_one_pod(sim: Sim) -> None:
    """Delete one of the running pods (no node: gone at once); the replacement is created,
    then reported Running and Ready."""
    before = {p["metadata"]["name"] for p in await pods(sim)}
    victim = sorted(before)[0]
    await sim.client.delete(PODS, victim, "default")
    await sim.advance(0)
    (replacement,) = [p for p in await pods(sim) if p["metadata"]["name"] not in before]
    await set_phase(sim, replacement, "Running", ready=True)
    await sim.advance(0)


def test_a_replaced_pod_costs_one_write_per_status_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        await sim.client.create(DEPLOYMENTS, make_deployment("web", 3, WEB), namespace="default")
        await sim.advance(0)
        await run_all(sim)
        await sim.advance(1)
        counts, instants = instrument(sim, monkeypatch)
        await replace_one_pod(sim)
        await sim.advance(60)
        # The ReplicaSet's status went 3/3 ready -> 2 replicas -> 3 replicas, 2 ready -> 3
        # ready: three changes, three writes, none refused and none re-read.
        assert counts[("update", "replicasets", "status")] == 3
        assert counts[("update", "replicasets", "status", 409)] == 0
        assert counts[("get", "replicasets", None)] == 0
        # The Deployment's status follows each of them once.
        assert counts[("update", "deployments", "status")] == 3
        assert counts[("update", "deployments", "status", 409)] == 0
        # Synced on those three ReplicaSet updates and its own three status updates, at most
        # (the queue folds a key added again before it is processed), all at that instant.
        assert 3 <= len(instants) <= 6
        assert set(instants) == {1.0}
        d = await sim.client.get(DEPLOYMENTS, "web", "default")
        assert d["status"]["readyReplicas"] == d["status"]["availableReplicas"] == 3
        (rs,) = (await sim.client.list(REPLICASETS, "default"))[0]
        assert rs["status"]["readyReplicas"] == rs["status"]["availableReplicas"] == 3

    simulate(tmp_path, scenario, controllers=ONLY)


def test_own_writes_read_the_newer_of_the_cache_and_the_last_write() -> None:
    writes = OwnWrites()
    cached: dict[str, Any] = {"metadata": {"resourceVersion": "10"}, "status": {"replicas": 1}}
    assert writes.newer("ns/a", cached) is cached
    written: dict[str, Any] = {"metadata": {"resourceVersion": "12"}, "status": {"replicas": 2}}
    writes.wrote("ns/a", written)
    written["status"]["replicas"] = 99  # the caller's copy; ours is kept as stored
    assert writes.newer("ns/a", cached)["status"] == {"replicas": 2}
    writes.wrote("ns/a", {"metadata": {"resourceVersion": "11"}})  # older: ignored
    assert writes.newer("ns/a", cached)["metadata"]["resourceVersion"] == "12"
    caught_up = {"metadata": {"resourceVersion": "12"}, "status": {"replicas": 2}}
    assert writes.newer("ns/a", caught_up) is caught_up
    assert len(writes) == 0  # forgotten once the cache has it
    writes.wrote("ns/b", {"metadata": {"resourceVersion": "not-a-number"}})
    assert len(writes) == 0
    writes.wrote("ns/c", {"metadata": {"resourceVersion": "5"}})
    writes.forget("ns/c")
    assert len(writes) == 0


def test_a_recreate_deployment_is_queued_by_a_pod_deletion_only_when_no_pod_is_left(
    tmp_path: Path,
) -> None:
    """Upstream's ``deletePod``: a Recreate Deployment is queued when the last pod of its
    ReplicaSets goes; any other pod's going changes a ReplicaSet's status, which queues it."""

    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        body = make_deployment("web", 2, WEB, strategy={"type": "Recreate"})
        await sim.client.create(DEPLOYMENTS, body, namespace="default")
        await sim.advance(0)
        await run_all(sim)
        await sim.advance(1)
        assert sim.cluster.controller_manager is not None
        controller = sim.cluster.controller_manager.controllers["deployment-controller"]
        assert isinstance(controller, DeploymentController)
        first, second = await pods(sim)
        assert len(controller.queue) == 0
        controller._pod_deleted(first)  # the other pod is still there
        assert len(controller.queue) == 0
        await sim.client.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 0}}, namespace="default")
        await sim.advance(0)
        assert await pods(sim) == []
        controller._pod_deleted(second)  # the last one
        assert len(controller.queue) == 1

    simulate(tmp_path, scenario, controllers=ONLY)
