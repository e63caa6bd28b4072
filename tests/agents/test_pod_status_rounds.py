"""The simulated kubelets sync the pods queued together and send their status writes as one
batch, as a cluster's kubelets write side by side: one status patch per pod, the same statuses
as one pod at a time, and the ReplicaSet and Deployment above them see the burst in one sync
instead of one per pod (upstream writes their status once per sync that changes it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from taintplane.agents import pod_rounds
from taintplane.agents.nodes import NodeShape
from taintplane.client import ApiError, Client
from taintplane.client.client import Op
from tests.controllers.harness import PODS, Sim, simulate
from tests.scheduler.builders import make_pod

NODES = [NodeShape(f"node-{i}") for i in range(1, 4)]
NAMES = [f"p{i}" for i in range(9)]


class Counting:
    """The kubelets' client, counting their pod writes: batches and the patches in them, and
    single patches."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.batches: list[int] = []
        self.single: list[str] = []
        #: Refuse the first batched write of this pod once, with this code.
        self.refuse: tuple[str, int] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    async def batch(self, ops: list[Op]) -> list[Any]:
        pod_ops = [op for op in ops if "/pods/" in op.path]
        if pod_ops:
            self.batches.append(len(pod_ops))
        refused = -1
        if self.refuse is not None:
            name, code = self.refuse
            for at, op in enumerate(ops):
                if op.path.endswith(f"/pods/{name}/status"):
                    self.refuse, refused = None, at
        answers = await self.client.batch([op for at, op in enumerate(ops) if at != refused])
        if refused >= 0:
            answers.insert(refused, ApiError({"code": code, "message": "refused"}))
        return answers

    async def patch(self, rt: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        if rt.plural == "pods":
            self.single.append(name)
        return await self.client.patch(rt, name, *args, **kwargs)


def bound(name: str, node: str) -> dict[str, Any]:
    made = make_pod(name, node_name=node)
    made["spec"]["containers"] = [{"name": "web", "image": "nginx:1.27"}]
    return made


def statuses(
    tmp_path: Path, refuse: tuple[str, int] | None = None
) -> tuple[dict[str, Any], Counting]:
    """Nine pods bound to three nodes in one instant, run a second: their statuses."""
    found: dict[str, Any] = {}
    counting: list[Counting] = []

    async def scenario(sim: Sim) -> None:
        client = Counting(sim.kubelets.client)
        client.refuse = refuse
        counting.append(client)
        sim.kubelets.client = client  # type: ignore[assignment]
        # One batch: the pods' watch events reach the kubelets together.
        await sim.client.batch(
            [
                Op.create(PODS, bound(name, NODES[at % 3].name), "default")
                for at, name in enumerate(NAMES)
            ]
        )
        await sim.advance(1)
        for name in NAMES:
            pod = await sim.pod(name)
            assert pod is not None
            found[name] = pod["status"]

    simulate(tmp_path, scenario, components=("agents",), nodes=NODES)
    return found, counting[0]


def test_pods_queued_together_write_their_statuses_in_one_batch(tmp_path: Path) -> None:
    found, client = statuses(tmp_path)
    # One status patch a pod, all of them batched; how the burst's watch events spread over
    # the rounds follows the store's writer thread (two or three rounds, never one a pod).
    assert sum(client.batches) == len(NAMES)
    assert len(client.batches) <= 3
    assert client.single == []
    assert {s["phase"] for s in found.values()} == {"Running"}


def test_the_statuses_are_those_written_one_pod_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    together, _ = statuses(tmp_path / "together")
    monkeypatch.setattr(pod_rounds, "STATUS_BATCH", 1)
    alone, client = statuses(tmp_path / "alone")
    assert client.batches == [1] * len(NAMES)
    assert together == alone


def test_a_refused_status_write_is_retried_and_a_pod_gone_is_not(tmp_path: Path) -> None:
    found, client = statuses(tmp_path, refuse=("p4", 500))
    assert sum(client.batches) == len(NAMES) + 1  # p4 again, after the retry's 5 ms
    assert found["p4"]["phase"] == "Running"
    found, client = statuses(tmp_path / "gone", refuse=("p4", 404))
    # A pod deleted meanwhile: nothing to retry (its status is then left as it was).
    assert sum(client.batches) == len(NAMES)
    assert "phase" not in found["p4"] or found["p4"]["phase"] == "Pending"
