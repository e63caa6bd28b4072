"""Evictions due at one instant go out as batches (``Client.batch``): the same condition,
deletion, events and metrics per pod as one by one, one store transaction per step of a
batch, and a pod whose write fails is retried alone without holding the others."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from taintplane.sim.cluster import Cluster
from taintplane.store.sqlite import SqliteStore
from tests.controllers.harness import Sim, simulate
from tests.controllers.test_taint_eviction import ONLY, condition, controller, toleration
from tests.scheduler.builders import make_node, make_pod, taint

NAMES = [f"p{i}" for i in range(10)]


def count_batches(cluster: Cluster, events: list[int] | None = None) -> list[int]:
    """The sizes of the batches of pod writes the store commits (one per ``write_many``;
    the events go in batches of their own)."""
    store = cluster.store
    assert isinstance(store, SqliteStore)
    sizes: list[int] = []
    many = store.write_many

    async def counted(writes: Any) -> Any:
        pods = [w for w in writes if "/pods/" in w.key]
        if pods:
            sizes.append(len(pods))
        elif events is not None:
            events.append(len(writes))
        return await many(writes)

    store.write_many = counted  # type: ignore[method-assign]
    return sizes


async def burst(sim: Sim) -> None:
    await sim.create_node(make_node("n1"))
    for name in NAMES:
        pod = make_pod(name, node_name="n1", tolerations=[toleration("k", seconds=60)])
        await sim.create_pod(pod)
    await sim.advance_to(10)
    await sim.taint("n1", [taint("k", effect="NoExecute")])


def test_a_burst_is_batched_and_each_pod_evicted_as_alone(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await burst(sim)
        event_batches: list[int] = []
        sizes = count_batches(sim.cluster, event_batches)
        await sim.advance_to(70)
        # The status writes, then the deletions: one transaction each.
        assert sizes == [len(NAMES), len(NAMES)]
        # The recorder sends what is queued together too.
        assert sum(event_batches) == len(NAMES)
        assert len(event_batches) < len(NAMES)
        for name in NAMES:
            pod = await sim.pod(name)
            assert pod is not None
            assert pod["metadata"]["deletionTimestamp"] == "2026-01-01T00:01:40Z"
            assert condition(pod) == {
                "type": "DisruptionTarget",
                "status": "True",
                "lastTransitionTime": "2026-01-01T00:01:10Z",
                "reason": "DeletionByTaintManager",
                "message": "Taint manager: deleting due to NoExecute taint",
                "observedGeneration": 1,
                "lastProbeTime": None,
            }
            managers = {e["manager"] for e in pod["metadata"]["managedFields"]}
            assert "kube-controller-manager" in managers
        events = await sim.events("TaintManagerEviction")
        assert sorted(e["message"] for e in events) == sorted(
            f"Marking for deletion Pod default/{n}" for n in NAMES
        )
        assert controller(sim).metrics.deletions._value.get() == len(NAMES)
        assert not controller(sim).workers

    simulate(tmp_path, scenario, controllers=ONLY)


def test_a_pod_whose_status_write_fails_is_retried_alone(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await burst(sim)
        apiserver = sim.cluster.apiserver
        assert apiserver is not None
        registry = apiserver.registry
        admit = registry.validate_admission
        refused: list[str] = []

        async def refuse_p3_once(operation: str, resource: Any, *args: Any) -> None:
            new = args[1]
            if operation == "UPDATE" and new["metadata"]["name"] == "p3" and not refused:
                refused.append("p3")
                from taintplane.apiserver.status import APIError

                raise APIError.make(500, "InternalError", "injected")
            await admit(operation, resource, *args)

        registry.validate_admission = refuse_p3_once
        await sim.advance_to(70)
        assert refused == ["p3"]
        others = [n for n in NAMES if n != "p3"]
        for name in others:
            pod = await sim.pod(name)
            assert pod is not None
            assert pod["metadata"].get("deletionTimestamp"), name
        # As one by one: the failed pod's next try comes 10 ms later.
        await sim.advance_to(70.01)
        for name in NAMES:
            pod = await sim.pod(name)
            assert pod is not None
            assert pod["metadata"].get("deletionTimestamp"), name
            assert condition(pod) is not None
        assert controller(sim).metrics.deletions._value.get() == len(NAMES)
        assert not controller(sim).workers

    simulate(tmp_path, scenario, controllers=ONLY)
