"""Leader election on a Lease, two candidates, on virtual time."""

from __future__ import annotations

import asyncio
from pathlib import Path

from taintplane.client import resource
from taintplane.client.leaderelection import LeaderElector
from tests.controllers.harness import Sim, simulate

LEASES = resource("coordination.k8s.io", "v1", "leases")


def test_one_leads_and_the_other_takes_over_after_the_lease_expires(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        runs: list[str] = []

        def candidate(identity: str) -> LeaderElector:
            return LeaderElector(sim.client, sim.clock, name="kube-scheduler", identity=identity)

        async def work(identity: str) -> None:
            runs.append(identity)
            await asyncio.Event().wait()  # runs until cancelled

        first, second = candidate("a"), candidate("b")
        task_a = asyncio.create_task(first.run(lambda: work("a")))
        await sim.advance(0)
        task_b = asyncio.create_task(second.run(lambda: work("b")))
        await sim.advance(30)
        assert (first.leading, second.leading, runs) == (True, False, ["a"])
        lease = await sim.client.get(LEASES, "kube-scheduler", "kube-system")
        assert lease["spec"]["holderIdentity"] == "a"
        assert lease["spec"]["leaseDurationSeconds"] == 15
        task_a.cancel()  # the leader dies without releasing
        await sim.advance(0)
        died = sim.elapsed
        await sim.advance(14)
        assert not second.leading
        await sim.advance(4)
        assert second.leading
        assert runs == ["a", "b"]
        lease = await sim.client.get(LEASES, "kube-scheduler", "kube-system")
        assert lease["spec"]["holderIdentity"] == "b"
        assert lease["spec"]["leaseTransitions"] == 1
        assert sim.elapsed - died == 18
        task_b.cancel()
        await asyncio.gather(task_a, task_b, return_exceptions=True)

    simulate(tmp_path, scenario, components=())
