"""A DaemonSet's ControllerRevisions on virtual time: one per template, numbered, renumbered
on a rollback instead of duplicated, trimmed beyond ``revisionHistoryLimit`` and renamed on
a hash collision."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from taintplane.client import resource
from taintplane.controllers.deploymentutil import compute_hash
from tests.controllers.harness import PODS, Sim
from tests.controllers.test_daemonset import (
    DAEMONSETS,
    add_node,
    create_ds,
    ds_status,
    make_ds,
    placement,
    run,
    set_phase,
)
from tests.scheduler.builders import make_node

REVISIONS = resource("apps", "v1", "controllerrevisions")
HASH = "controller-revision-hash"


async def revisions(sim: Sim) -> list[dict[str, Any]]:
    items, _ = await sim.client.list(REVISIONS, "default")
    return sorted(items, key=lambda r: int(r["revision"]))


async def numbered(sim: Sim) -> list[tuple[int, str]]:
    """(revision, hash) of every revision, by number."""
    return [(int(r["revision"]), r["metadata"]["labels"][HASH]) for r in await revisions(sim)]


async def set_image(sim: Sim, image: str, name: str = "agent") -> dict[str, Any]:
    ds = await sim.client.get(DAEMONSETS, name, "default")
    ds["spec"]["template"]["spec"]["containers"][0]["image"] = image
    updated = await sim.client.update(DAEMONSETS, ds)
    await sim.advance(0)
    return updated


async def pod_hashes(sim: Sim) -> dict[str, str]:
    """node -> hash of its (not terminating) daemon pod."""
    items, _ = await sim.client.list(PODS, "default", label_selector="app=agent")
    return {
        p["spec"]["nodeName"]: p["metadata"]["labels"][HASH]
        for p in items
        if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")
    }


async def ready_all(sim: Sim) -> None:
    for pod in (await placement(sim)).values():
        await set_phase(sim, pod, "Running", ready=True)


def test_the_current_template_is_recorded_as_a_numbered_revision(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await add_node(sim, make_node("n1"))
        ds = make_ds(terminationGracePeriodSeconds=0)
        ds["metadata"]["annotations"] = {"kubernetes.io/change-cause": "first"}
        created = await create_ds(sim, ds)
        await sim.advance(1)
        template = created["spec"]["template"]
        first_hash = compute_hash(template, None)
        [first] = await revisions(sim)
        assert first["metadata"]["name"] == f"agent-{first_hash}"
        assert first["metadata"]["labels"] == {"app": "agent", HASH: first_hash}
        assert first["metadata"]["annotations"]["kubernetes.io/change-cause"] == "first"
        assert first["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "name": "agent",
                "uid": created["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert first["revision"] == 1
        # The patch that restores the template, keys sorted as Go marshals a map.
        assert first["data"] == {"spec": {"template": {**template, "$patch": "replace"}}}
        assert list(first["data"]["spec"]["template"]) == ["$patch", "metadata", "spec"]
        assert list(first["data"]["spec"]["template"]["spec"]) == sorted(template["spec"])
        assert await pod_hashes(sim) == {"n1": first_hash}

        await ready_all(sim)
        updated = await set_image(sim, "agent:2")
        await sim.advance(1)
        second_hash = compute_hash(updated["spec"]["template"], None)
        assert await numbered(sim) == [(1, first_hash), (2, second_hash)]
        assert await pod_hashes(sim) == {"n1": second_hash}
        assert (await ds_status(sim))["updatedNumberScheduled"] == 1

    run(tmp_path, scenario)


def test_a_rollback_renumbers_the_old_revision_and_keeps_its_pods(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        for name in ("n1", "n2", "n3"):
            await add_node(sim, make_node(name))
        await create_ds(sim, make_ds(terminationGracePeriodSeconds=0))
        await sim.advance(1)
        await ready_all(sim)
        before = await placement(sim)
        [(_, first_hash)] = await numbered(sim)
        await set_image(sim, "agent:2")  # n1 is replaced first; its new pod never gets ready
        await sim.advance(1)
        [_, (_, second_hash)] = await numbered(sim)
        assert await pod_hashes(sim) == {"n1": second_hash, "n2": first_hash, "n3": first_hash}

        await set_image(sim, "agent:1")
        await sim.advance(1)
        # No third revision: the first is the newest again, under its old name and hash.
        assert await numbered(sim) == [(2, second_hash), (3, first_hash)]
        assert [r["metadata"]["name"] for r in await revisions(sim)] == [
            f"agent-{second_hash}",
            f"agent-{first_hash}",
        ]
        after = await placement(sim)
        assert {node: after[node] == before[node] for node in after} == {
            "n1": False,
            "n2": True,
            "n3": True,
        }
        assert await pod_hashes(sim) == {"n1": first_hash, "n2": first_hash, "n3": first_hash}
        status = await ds_status(sim)
        assert (status["updatedNumberScheduled"], status["observedGeneration"]) == (3, 3)

    run(tmp_path, scenario)


def test_revisions_beyond_the_limit_go_oldest_first_unless_a_pod_runs_them(
    tmp_path: Path,
) -> None:
    async def scenario(sim: Sim) -> None:
        await add_node(sim, make_node("n1"))
        ds = make_ds(terminationGracePeriodSeconds=0)
        ds["spec"]["revisionHistoryLimit"] = 1
        ds["spec"]["updateStrategy"] = {"type": "OnDelete"}  # pods keep their revision
        await create_ds(sim, ds)
        await sim.advance(1)
        [(_, first)] = await numbered(sim)
        await set_image(sim, "agent:2")
        [_, (_, second)] = await numbered(sim)
        await set_image(sim, "agent:3")
        # Two old revisions, one allowed: the pod still runs the first, so the second goes.
        third = (await numbered(sim))[-1][1]
        assert await numbered(sim) == [(1, first), (3, third)]
        assert second not in {h for _, h in await numbered(sim)}
        assert await pod_hashes(sim) == {"n1": first}

        await sim.client.delete(PODS, (await placement(sim))["n1"], "default")
        await sim.advance(1)
        assert await pod_hashes(sim) == {"n1": third}
        await set_image(sim, "agent:4")
        # Nothing runs the first any more: it is the oldest beyond the limit.
        fourth = (await numbered(sim))[-1][1]
        assert await numbered(sim) == [(3, third), (4, fourth)]

    run(tmp_path, scenario)


def test_a_name_taken_by_other_data_bumps_the_collision_count(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await add_node(sim, make_node("n1"))
        created = await create_ds(sim, make_ds(terminationGracePeriodSeconds=0))
        await sim.advance(1)
        [(_, first)] = await numbered(sim)
        template = created["spec"]["template"]
        template["spec"]["containers"][0]["image"] = "agent:2"
        squatted = compute_hash(template, None)
        squatter = {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {"name": f"agent-{squatted}", "labels": {"app": "other"}},
            "data": {"not": "ours"},
            "revision": 1,
        }
        await sim.client.create(REVISIONS, squatter, namespace="default")
        await set_image(sim, "agent:2")
        await sim.advance(1)
        assert (await ds_status(sim))["collisionCount"] == 1
        renamed = compute_hash(template, 1)
        assert renamed != squatted
        names = {r["metadata"]["name"]: int(r["revision"]) for r in await revisions(sim)}
        assert names == {f"agent-{first}": 1, f"agent-{squatted}": 1, f"agent-{renamed}": 2}
        assert await pod_hashes(sim) == {"n1": renamed}

    run(tmp_path, scenario)


def test_an_orphan_with_the_current_data_is_adopted_and_kept_as_the_only_current_one(
    tmp_path: Path,
) -> None:
    async def scenario(sim: Sim) -> None:
        await add_node(sim, make_node("n1"))
        created = await create_ds(sim, make_ds(terminationGracePeriodSeconds=0))
        await sim.advance(1)
        [first] = await revisions(sim)
        pod = (await placement(sim))["n1"]
        # Written by someone else, unlabelled, with the same data and a higher number.
        orphan = {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {"name": "agent-copy", "labels": {"app": "agent"}},
            "data": first["data"],
            "revision": 5,
        }
        await sim.client.create(REVISIONS, orphan, namespace="default")
        await sim.advance(0)
        [kept] = await revisions(sim)
        assert kept["metadata"]["name"] == "agent-copy"
        assert kept["revision"] == 5
        # Its name stands in for the hash it lacked; the pods take that hash and stay.
        assert kept["metadata"]["labels"] == {"app": "agent", HASH: "agent-copy"}
        assert kept["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
        assert await pod_hashes(sim) == {"n1": "agent-copy"}
        assert await placement(sim) == {"n1": pod}

    run(tmp_path, scenario)
