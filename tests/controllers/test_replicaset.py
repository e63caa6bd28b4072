"""The ReplicaSet controller on virtual time: pods from the template, replacement of deleted
and failed pods, adoption and release, the scale-down order, events and status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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

ONLY = ("replicaset-controller",)
WEB = {"app": "web"}


async def rs_status(sim: Sim, name: str = "web") -> dict[str, Any]:
    return (await sim.client.get(REPLICASETS, name, "default")).get("status") or {}


def test_creates_pods_from_the_template_owned_by_the_replicaset(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        rs = await sim.client.create(REPLICASETS, make_rs("web", 3, WEB), namespace="default")
        await sim.advance(0)
        created = await pods(sim)
        assert len(created) == 3
        for pod in created:
            meta = pod["metadata"]
            assert meta["generateName"] == "web-"
            assert meta["name"].startswith("web-")
            assert meta["labels"] == WEB
            assert meta["ownerReferences"] == [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web",
                    "uid": rs["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
        events = await sim.events("SuccessfulCreate")
        assert sorted(e["message"] for e in events) == [
            f"Created pod: {p['metadata']['name']}" for p in created
        ]
        assert {e["source"]["component"] for e in events} == {"replicaset-controller"}
        assert {e["involvedObject"]["kind"] for e in events} == {"ReplicaSet"}
        assert await rs_status(sim) == {
            "replicas": 3,
            "fullyLabeledReplicas": 3,
            "observedGeneration": 1,
            "terminatingReplicas": 0,
        }

    simulate(tmp_path, scenario, controllers=ONLY)


def test_defaults_replicas_to_one(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        body = make_rs("web", 1, WEB)
        del body["spec"]["replicas"]
        created = await sim.client.create(REPLICASETS, body, namespace="default")
        assert created["spec"]["replicas"] == 1
        assert created["spec"]["template"]["spec"]["restartPolicy"] == "Always"
        await sim.advance(0)
        assert len(await pods(sim)) == 1

    simulate(tmp_path, scenario, controllers=ONLY)


def test_ready_and_available_honour_min_ready_seconds(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        await sim.client.create(REPLICASETS, make_rs("web", 2, WEB, min_ready=10), "default")
        await sim.advance(0)
        await sim.advance_to(5)
        await run_all(sim)
        status = await rs_status(sim)
        assert status["readyReplicas"] == 2
        assert "availableReplicas" not in status
        await sim.advance_to(15)  # ready for exactly 10 s: not yet (strictly more is needed)
        assert "availableReplicas" not in await rs_status(sim)
        await sim.advance_to(15.01)
        assert (await rs_status(sim))["availableReplicas"] == 2

    simulate(tmp_path, scenario, controllers=ONLY)


def test_a_deleted_pod_is_replaced_at_once_and_counted_as_terminating(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        await sim.client.create(REPLICASETS, make_rs("web", 2, WEB), namespace="default")
        await sim.advance(0)
        for pod in await pods(sim):
            await bind(sim, pod, "n1")  # a bound pod's deletion waits for its kubelet
        first = (await pods(sim))[0]["metadata"]["name"]
        await sim.client.delete(PODS, first, "default")  # graceful: 30 s terminating
        await sim.advance(0)
        live = [p for p in await pods(sim) if not p["metadata"].get("deletionTimestamp")]
        assert len(live) == 2
        assert first not in {p["metadata"]["name"] for p in live}
        status = await rs_status(sim)
        assert status["replicas"] == 2
        assert status["terminatingReplicas"] == 1

    simulate(tmp_path, scenario, controllers=ONLY)


def test_failed_and_succeeded_pods_are_replaced(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        await sim.client.create(REPLICASETS, make_rs("web", 2, WEB), namespace="default")
        await sim.advance(0)
        first, second = await pods(sim)
        await set_phase(sim, first, "Failed")  # e.g. evicted by the kubelet
        await set_phase(sim, second, "Succeeded")
        await sim.advance(0)
        all_pods = await pods(sim)
        assert len(all_pods) == 4
        active = [p for p in all_pods if p["status"]["phase"] == "Pending"]
        assert len(active) == 2
        assert (await rs_status(sim))["replicas"] == 2

    simulate(tmp_path, scenario, controllers=ONLY)


def test_adopts_matching_orphans_and_scales_down_by_upstream_rank(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        for name, node in (("ready", "n1"), ("unready", "n1"), ("pending", ""), ("other", "")):
            labels = WEB if name != "other" else {"app": "db"}
            await sim.create_pod(make_orphan(name, labels, node))
        await set_phase(sim, (await sim.pod("ready")) or {}, "Running", ready=True)
        await set_phase(sim, (await sim.pod("unready")) or {}, "Running", ready=False)
        await sim.client.create(REPLICASETS, make_rs("web", 1, WEB), namespace="default")
        await sim.advance(0)
        remaining = {
            p["metadata"]["name"]: p
            for p in await pods(sim)
            if not p["metadata"].get("deletionTimestamp")
        }
        # Unscheduled goes first, then not-ready; the ready one stays and is adopted.
        assert set(remaining) == {"ready", "other"}
        assert remaining["ready"]["metadata"]["ownerReferences"][0]["name"] == "web"
        assert "ownerReferences" not in remaining["other"]["metadata"]
        events = await sim.events("SuccessfulDelete")
        assert sorted(e["message"] for e in events) == [
            "Deleted pod: pending",
            "Deleted pod: unready",
        ]

    simulate(tmp_path, scenario, controllers=ONLY)


def test_releases_a_pod_whose_labels_stop_matching_and_replaces_it(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        await sim.client.create(REPLICASETS, make_rs("web", 1, WEB), namespace="default")
        await sim.advance(0)
        (pod,) = await pods(sim)
        name = pod["metadata"]["name"]
        await sim.client.patch(
            PODS, name, {"metadata": {"labels": {"app": "debug"}}}, namespace="default"
        )
        await sim.advance(0)
        released = await sim.pod(name)
        assert released is not None
        assert not released["metadata"].get("ownerReferences")
        assert len(await pods(sim, "app=web")) == 1

    simulate(tmp_path, scenario, controllers=ONLY)


def test_scaling_up_and_down_follows_spec_replicas(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        await sim.client.create(REPLICASETS, make_rs("web", 2, WEB), namespace="default")
        await sim.advance(0)
        await sim.client.patch(REPLICASETS, "web", {"spec": {"replicas": 5}}, namespace="default")
        await sim.advance(0)
        assert len(await pods(sim)) == 5
        await sim.client.patch(REPLICASETS, "web", {"spec": {"replicas": 1}}, namespace="default")
        await sim.advance(0)
        live = [p for p in await pods(sim) if not p["metadata"].get("deletionTimestamp")]
        assert len(live) == 1
        status = await rs_status(sim)
        assert status["replicas"] == 1
        assert status["observedGeneration"] == 3

    simulate(tmp_path, scenario, controllers=ONLY)
