"""The Deployment controller on virtual time, with the ReplicaSet controller: the hashed
ReplicaSet, annotations, events, rolling updates within surge/unavailability bounds,
Recreate, scaling, history cleanup, conditions and the progress deadline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from taintplane.controllers.deploymentutil import ALPHANUMS, compute_hash
from tests.controllers.harness import Sim, simulate
from tests.controllers.workload_builders import (
    DEPLOYMENTS,
    REPLICASETS,
    make_deployment,
    pods,
    run_all,
    warm_up,
)

ONLY = ("replicaset-controller", "deployment-controller")
WEB = {"app": "web"}


async def deployment(sim: Sim, name: str = "web") -> dict[str, Any]:
    return await sim.client.get(DEPLOYMENTS, name, "default")


async def replicasets(sim: Sim) -> list[dict[str, Any]]:
    items, _ = await sim.client.list(REPLICASETS, "default")
    return sorted(items, key=lambda rs: int(rs["metadata"]["annotations"][REVISION]))


async def scaling_messages(sim: Sim) -> list[str]:
    return [e["message"] for e in await sim.events("ScalingReplicaSet")]


def condition(d: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in d["status"]["conditions"] if c["type"] == kind)


REVISION = "deployment.kubernetes.io/revision"


def test_pod_template_hash_uses_the_safe_alphabet_and_the_collision_count() -> None:
    template = {"metadata": {"labels": WEB}, "spec": {"containers": [{"name": "c"}]}}
    plain = compute_hash(template, None)
    assert 1 <= len(plain) <= 10
    assert set(plain) <= set(ALPHANUMS[21:]) | set("bcdfg")  # digits 0-9 encode to these
    assert compute_hash(template, None) == plain
    assert compute_hash(template, 1) != plain
    assert compute_hash(template, 1) != compute_hash(template, 2)


def test_creates_a_hashed_replicaset_with_revision_and_replica_annotations(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        created = await sim.client.create(
            DEPLOYMENTS, make_deployment("web", 3, WEB), namespace="default"
        )
        spec = created["spec"]
        assert spec["strategy"] == {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
        }
        assert spec["revisionHistoryLimit"] == 10
        assert spec["progressDeadlineSeconds"] == 600
        await sim.advance(0)
        (rs,) = await replicasets(sim)
        pod_hash = compute_hash(spec["template"], None)
        assert rs["metadata"]["name"] == f"web-{pod_hash}"
        assert rs["metadata"]["labels"] == {**WEB, "pod-template-hash": pod_hash}
        assert rs["spec"]["selector"] == {"matchLabels": {**WEB, "pod-template-hash": pod_hash}}
        assert rs["spec"]["replicas"] == 3
        assert rs["metadata"]["annotations"] == {
            "deployment.kubernetes.io/revision": "1",
            "deployment.kubernetes.io/desired-replicas": "3",
            "deployment.kubernetes.io/max-replicas": "4",
        }
        ref = rs["metadata"]["ownerReferences"][0]
        assert (ref["kind"], ref["name"], ref["controller"]) == ("Deployment", "web", True)
        assert all(
            p["metadata"]["labels"]["pod-template-hash"] == pod_hash for p in await pods(sim)
        )
        assert await scaling_messages(sim) == [f"Scaled up replica set web-{pod_hash} from 0 to 3"]
        events = await sim.events("ScalingReplicaSet")
        assert events[0]["source"] == {"component": "deployment-controller"}
        d = await deployment(sim)
        assert d["metadata"]["annotations"] == {REVISION: "1"}
        assert d["metadata"]["generation"] == 1

    simulate(tmp_path, scenario, controllers=ONLY)


def test_status_and_conditions_once_pods_are_available(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        await sim.client.create(DEPLOYMENTS, make_deployment("web", 3, WEB), namespace="default")
        await sim.advance(0)
        (rs,) = await replicasets(sim)
        name = rs["metadata"]["name"]
        d = await deployment(sim)
        assert d["status"]["unavailableReplicas"] == 3
        assert condition(d, "Available")["reason"] == "MinimumReplicasUnavailable"
        assert condition(d, "Progressing")["reason"] == "ReplicaSetUpdated"
        await sim.advance_to(10)
        await run_all(sim)
        d = await deployment(sim)
        status = {k: v for k, v in d["status"].items() if k != "conditions"}
        assert status == {
            "observedGeneration": 1,
            "replicas": 3,
            "updatedReplicas": 3,
            "readyReplicas": 3,
            "availableReplicas": 3,
            "terminatingReplicas": 0,
        }
        assert condition(d, "Available") == {
            "type": "Available",
            "status": "True",
            "lastUpdateTime": "2026-01-01T00:00:10Z",
            "lastTransitionTime": "2026-01-01T00:00:10Z",
            "reason": "MinimumReplicasAvailable",
            "message": "Deployment has minimum availability.",
        }
        progressing = condition(d, "Progressing")
        assert progressing["status"] == "True"
        assert progressing["reason"] == "NewReplicaSetAvailable"
        assert progressing["message"] == f'ReplicaSet "{name}" has successfully progressed.'
        assert progressing["lastTransitionTime"] == "2026-01-01T00:00:00Z"

    simulate(tmp_path, scenario, controllers=ONLY)


def test_rolling_update_stays_within_surge_and_unavailability(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        await sim.client.create(DEPLOYMENTS, make_deployment("web", 4, WEB), namespace="default")
        await sim.advance(0)
        await run_all(sim)
        (old,) = await replicasets(sim)
        patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "v2"}]}}}}
        await sim.client.patch(DEPLOYMENTS, "web", patch, namespace="default")
        await sim.advance(0)
        for _ in range(20):
            rss = await replicasets(sim)
            sizes = [rs["spec"]["replicas"] for rs in rss]
            available = sum((rs.get("status") or {}).get("availableReplicas", 0) for rs in rss)
            assert sum(sizes) <= 5  # replicas + maxSurge (25% of 4, rounded up)
            assert available >= 3  # replicas - maxUnavailable (25% of 4, rounded down)
            if sizes == [0, 4] and available == 4:
                break
            await sim.advance(1)
            await run_all(sim)
        else:
            raise AssertionError(f"rollout did not finish: {sizes}")
        new = rss[1]
        assert new["metadata"]["annotations"][REVISION] == "2"
        assert rss[0]["metadata"]["name"] == old["metadata"]["name"]
        old_name, new_name = old["metadata"]["name"], new["metadata"]["name"]
        messages = await scaling_messages(sim)
        assert messages[:3] == [
            f"Scaled up replica set {old_name} from 0 to 4",
            f"Scaled up replica set {new_name} from 0 to 1",
            f"Scaled down replica set {old_name} from 4 to 3",
        ]
        assert messages[-1] == f"Scaled down replica set {old_name} from 1 to 0"
        d = await deployment(sim)
        assert d["metadata"]["annotations"][REVISION] == "2"
        assert d["metadata"]["generation"] == 2
        assert d["status"]["updatedReplicas"] == 4
        assert condition(d, "Progressing")["reason"] == "NewReplicaSetAvailable"
        live = [p for p in await pods(sim) if not p["metadata"].get("deletionTimestamp")]
        assert {p["spec"]["containers"][0]["image"] for p in live} == {"v2"}

    simulate(tmp_path, scenario, controllers=ONLY)


def test_recreate_scales_the_old_down_before_creating_the_new(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        body = make_deployment("web", 2, WEB, strategy={"type": "Recreate"})
        created = await sim.client.create(DEPLOYMENTS, body, namespace="default")
        assert created["spec"]["strategy"] == {"type": "Recreate"}
        await sim.advance(0)
        await run_all(sim)
        patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "v2"}]}}}}
        await sim.client.patch(DEPLOYMENTS, "web", patch, namespace="default")
        await sim.advance(0)
        old, new = await replicasets(sim)
        assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (0, 2)
        assert await scaling_messages(sim) == [
            f"Scaled up replica set {old['metadata']['name']} from 0 to 2",
            f"Scaled down replica set {old['metadata']['name']} from 2 to 0",
            f"Scaled up replica set {new['metadata']['name']} from 0 to 2",
        ]

    simulate(tmp_path, scenario, controllers=ONLY)


def test_scaling_the_deployment_scales_its_replicaset(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        await sim.client.create(DEPLOYMENTS, make_deployment("web", 3, WEB), namespace="default")
        await sim.advance(0)
        await sim.client.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 5}}, namespace="default")
        await sim.advance(0)
        (rs,) = await replicasets(sim)
        assert rs["spec"]["replicas"] == 5
        assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "5"
        assert rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "7"
        name = rs["metadata"]["name"]
        assert (await scaling_messages(sim))[-1] == f"Scaled up replica set {name} from 3 to 5"
        assert len(await pods(sim)) == 5

    simulate(tmp_path, scenario, controllers=ONLY)


def test_old_replicasets_beyond_the_history_limit_are_deleted(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        body = make_deployment("web", 1, WEB, revisionHistoryLimit=1)
        await sim.client.create(DEPLOYMENTS, body, namespace="default")
        await sim.advance(0)
        await run_all(sim)
        for version in ("v2", "v3", "v4"):
            patch = {
                "spec": {"template": {"spec": {"containers": [{"name": "c", "image": version}]}}}
            }
            await sim.client.patch(DEPLOYMENTS, "web", patch, namespace="default")
            for _ in range(5):
                await sim.advance(1)
                await run_all(sim)
        rss = await replicasets(sim)
        assert [rs["metadata"]["annotations"][REVISION] for rs in rss] == ["3", "4"]
        assert [rs["spec"]["replicas"] for rs in rss] == [0, 1]

    simulate(tmp_path, scenario, controllers=ONLY)


def test_progress_deadline_exceeded_when_pods_never_become_ready(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        body = make_deployment("web", 2, WEB, progressDeadlineSeconds=60)
        await sim.client.create(DEPLOYMENTS, body, namespace="default")
        await sim.advance(0)
        (rs,) = await replicasets(sim)
        await sim.advance_to(60)
        assert condition(await deployment(sim), "Progressing")["status"] == "True"
        await sim.advance_to(62)
        d = await deployment(sim)
        progressing = condition(d, "Progressing")
        assert progressing["status"] == "False"
        assert progressing["reason"] == "ProgressDeadlineExceeded"
        assert progressing["message"] == (
            f'ReplicaSet "{rs["metadata"]["name"]}" has timed out progressing.'
        )
        assert condition(d, "Available") == {
            "type": "Available",
            "status": "False",
            "lastUpdateTime": "2026-01-01T00:00:00Z",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "reason": "MinimumReplicasUnavailable",
            "message": "Deployment does not have minimum availability.",
        }

    simulate(tmp_path, scenario, controllers=ONLY)


def test_scaling_mid_rollout_is_proportional_and_pausing_is_marked(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await warm_up(sim)
        await sim.client.create(DEPLOYMENTS, make_deployment("web", 10, WEB), namespace="default")
        await sim.advance(0)
        await run_all(sim)
        patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "v2"}]}}}}
        await sim.client.patch(DEPLOYMENTS, "web", patch, namespace="default")
        await sim.advance(0)  # new pods never become ready: the rollout stalls at 8 + 5
        assert [rs["spec"]["replicas"] for rs in await replicasets(sim)] == [8, 5]
        await sim.client.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 15}}, namespace="default")
        await sim.advance(0)
        old, new = await replicasets(sim)
        # 15 + maxSurge 4 = 19 shared in proportion to 8:5 of the 13 allowed before.
        assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (12, 7)
        assert old["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "19"
        assert (await scaling_messages(sim))[-2:] == [
            f"Scaled up replica set {old['metadata']['name']} from 8 to 12",
            f"Scaled up replica set {new['metadata']['name']} from 5 to 7",
        ]
        await sim.client.patch(DEPLOYMENTS, "web", {"spec": {"paused": True}}, namespace="default")
        await sim.advance(0)
        progressing = condition(await deployment(sim), "Progressing")
        assert (progressing["status"], progressing["reason"], progressing["message"]) == (
            "Unknown",
            "DeploymentPaused",
            "Deployment is paused",
        )
        await sim.client.patch(DEPLOYMENTS, "web", {"spec": {"paused": False}}, namespace="default")
        await sim.advance(0)
        progressing = condition(await deployment(sim), "Progressing")
        assert progressing["reason"] in ("DeploymentResumed", "ReplicaSetUpdated")

    simulate(tmp_path, scenario, controllers=ONLY)
