"""``what-if``'s engine: a snapshot of a running cluster, a taint applied to a copy of it on
virtual time, and a report of exactly what happened when.

The source cluster is a real in-process one (scheduler, controllers, simulated kubelets) whose
objects are read over its API, as ``what-if`` reads a live cluster.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from taintplane.agents.nodes import NodeShape
from taintplane.api.selectors import parse_label_selector
from taintplane.api.taint_spec import parse_taint_changes
from taintplane.client import resource
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster
from taintplane.sim.snapshot import read_live
from taintplane.sim.whatif import WhatIfReport, run_what_if
from taintplane.sim.whatif_plan import TaintPlan, WhatIfError, default_window, resolve_plan
from tests.controllers.harness import START
from tests.controllers.workload_builders import DEPLOYMENTS, make_daemonset, make_deployment

PODS = resource("", "v1", "pods")
DAEMONSETS = resource("apps", "v1", "daemonsets")
EVICTED_BY_TAINT = "DeletionByTaintManager: Taint manager: deleting due to NoExecute taint"


def pinned_pod(name: str, node: str, tolerations: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": node,
            "tolerations": tolerations,
            "containers": [{"name": "c", "image": "nginx:1.27"}],
        },
    }


def take_snapshot(tmp_path: Path) -> list[dict[str, Any]]:
    """Three nodes running a 3-replica Deployment (one pod on each), a DaemonSet, and two pods
    pinned to node-2: one tolerating ``maintenance`` for an hour, one tolerating everything."""

    async def main() -> list[dict[str, Any]]:
        clock = VirtualClock(START)
        nodes = [NodeShape(f"node-{i}") for i in (1, 2, 3)]
        async with in_process_cluster(tmp_path / "source", clock, nodes=nodes) as cluster:
            client = cluster.client
            assert client is not None
            await client.create(
                DEPLOYMENTS, make_deployment("web", 3, {"app": "web"}), namespace="default"
            )
            await clock.advance(1)
            await client.create(DAEMONSETS, make_daemonset("agent"), namespace="default")
            patient = [
                {
                    "key": "maintenance",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 3600,
                }
            ]
            await client.create(PODS, pinned_pod("patient", "node-2", patient), "default")
            await client.create(
                PODS, pinned_pod("forever", "node-2", [{"operator": "Exists"}]), "default"
            )
            await clock.advance(30)
            return await read_live(client)

    return asyncio.run(main())


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return take_snapshot(tmp_path_factory.mktemp("snapshot"))


def plan(objects: list[dict[str, Any]], *args: str, **kwargs: Any) -> TaintPlan:
    names = [a for a in args if ":" not in a and not a.endswith("-")]
    specs = [a for a in args if a not in names]
    return resolve_plan(objects, ["nodes", *names], parse_taint_changes(specs), **kwargs)


def what_if(objects: list[dict[str, Any]], taint_plan: TaintPlan, window: float) -> WhatIfReport:
    start = START + timedelta(seconds=30)
    return asyncio.run(run_what_if(objects, taint_plan, start=start, window=window))


def pods_on(objects: list[dict[str, Any]], node: str) -> list[str]:
    return sorted(
        o["metadata"]["name"]
        for o in objects
        if o["kind"] == "Pod" and o["spec"].get("nodeName") == node
    )


def test_no_execute_evicts_at_once_and_after_toleration_seconds_and_replaces_elsewhere(
    snapshot: list[dict[str, Any]],
) -> None:
    question = plan(snapshot, "node-2", "maintenance=true:NoExecute")
    # The longest toleration (3600 s), its pod's grace period (30 s) and 5 minutes to settle.
    assert default_window(snapshot, question) == 3930
    report = what_if(snapshot, question, 3930)

    on_node_2 = pods_on(snapshot, "node-2")
    agent = [name for name in on_node_2 if name.startswith("agent-")]
    web = [name for name in on_node_2 if name.startswith("web-")]
    assert sorted([*agent, *web, "forever", "patient"]) == on_node_2
    assert (len(agent), len(web)) == (1, 1)
    outcomes = {p.name: (p.outcome, report.offset(p.at) if p.at else None) for p in report.affected}
    # The DaemonSet's pod goes at once too: its controller deletes a daemon pod from a node
    # whose NoExecute taint it does not tolerate, racing the taint eviction controller.
    assert outcomes.pop(agent[0]) in (("deleted", 0.0), ("evicted", 0.0))
    assert outcomes == {
        web[0]: ("evicted", 0.0),
        "patient": ("evicted", 3600.0),
        "forever": ("stays", None),
    }
    details = {p.name: p.detail for p in report.affected}
    assert details["forever"] == "tolerates every NoExecute taint on its node with no time limit"
    assert details[web[0]] == details["patient"] == EVICTED_BY_TAINT
    assert details[agent[0]] in (EVICTED_BY_TAINT, "by DaemonSet agent, grace period 30s")

    # The Deployment's pods come back on the other nodes; the DaemonSet does not put its pod
    # back on a node whose NoExecute taint it does not tolerate.
    [replacement] = report.replacements
    assert replacement.owner.startswith("ReplicaSet/web-")
    assert replacement.node in ("node-1", "node-3")
    assert replacement.detail == ""

    timeline = [(report.offset(h.at), h.event, h.object) for h in report.timeline]
    assert timeline[0] == (0.0, "tainted", "node/node-2")
    assert report.timeline[0].detail == "maintenance=true:NoExecute"
    assert (3600.0, "evicting", "pod/default/patient") in timeline
    assert (3600.0, "deleted", "pod/default/patient") in timeline
    assert not [t for t in timeline if t[2] == "pod/default/forever"]
    assert report.offset(report.end) == 3930


def test_a_taint_on_every_node_leaves_the_replacements_pending_with_the_schedulers_reason(
    snapshot: list[dict[str, Any]],
) -> None:
    question = plan(snapshot, "maintenance=true:NoExecute", all_nodes=True)
    assert question.nodes == ("node-1", "node-2", "node-3")
    report = what_if(snapshot, question, 60)
    # kubectl taints one node after another: a replacement may land on a node not yet tainted
    # and be evicted from it a moment later; at the end the whole Deployment has nowhere to go.
    landed = [r for r in report.replacements if r.gone]
    pending = [r for r in report.replacements if not r.gone]
    assert {(r.node in question.nodes, r.detail) for r in landed} <= {(True, "deleted at +0s")}
    assert len(pending) == 3
    assert {r.node for r in pending} == {""}
    assert {r.detail for r in pending} == {
        "0/3 nodes are available: 3 node(s) had untolerated taint(s). "
        "no new claims to deallocate, preemption: 0/3 nodes are available: "
        "3 Preemption is not helpful for scheduling."
    }


def test_no_schedule_evicts_nobody(snapshot: list[dict[str, Any]]) -> None:
    question = plan(snapshot, "node-1", "node-3", "gpu=true:NoSchedule")
    assert default_window(snapshot, question) == 300
    report = what_if(snapshot, question, 300)
    assert [(h.event, h.object, h.detail) for h in report.timeline] == [
        ("tainted", "node/node-1", "gpu=true:NoSchedule"),
        ("tainted", "node/node-3", "gpu=true:NoSchedule"),
    ]
    assert report.replacements == []
    assert {p.outcome for p in report.affected} == {"stays"}
    assert {p.detail for p in report.affected} == {
        "no NoExecute taint on its node: NoSchedule and PreferNoSchedule do not evict"
    }
    assert {p.node for p in report.affected} == {"node-1", "node-3"}


def test_a_toleration_longer_than_the_window_says_when_it_would_go(
    snapshot: list[dict[str, Any]],
) -> None:
    report = what_if(snapshot, plan(snapshot, "node-2", "maintenance=true:NoExecute"), 600)
    patient = next(p for p in report.affected if p.name == "patient")
    assert (patient.outcome, patient.at) == ("stays", None)
    assert patient.detail == (
        "tolerationSeconds 3600: due at 2026-01-01T01:00:30Z, after the window"
    )


def test_the_questions_nodes_are_checked_as_kubectl_checks_them(
    snapshot: list[dict[str, Any]],
) -> None:
    with pytest.raises(WhatIfError, match=r'^nodes "nope" not found$'):
        plan(snapshot, "node-1", "nope", "a=b:NoSchedule")
    with pytest.raises(
        WhatIfError, match=r"^invalid resource type pods, only node types are supported$"
    ):
        resolve_plan(snapshot, ["pods", "x"], parse_taint_changes(["a:NoSchedule"]))
    with pytest.raises(WhatIfError, match=r'^taint "absent:NoSchedule" not found$'):
        plan(snapshot, "node-1", "absent:NoSchedule-")
    with pytest.raises(WhatIfError, match=r"^no nodes found to taint$"):
        plan(snapshot, "a:NoSchedule", selector=parse_label_selector("zone=mars"))
    # kubectl itself changes nothing and succeeds: what-if asks for an empty plan instead.
    nothing = plan(
        snapshot, "a:NoSchedule", selector=parse_label_selector("zone=mars"), allow_no_match=True
    )
    assert nothing.nodes == ()
    chosen = plan(
        snapshot, "a:NoSchedule", selector=parse_label_selector("kubernetes.io/hostname=node-3")
    )
    assert chosen.nodes == ("node-3",)


def test_replacements_that_come_and_go_say_where_they_ran_and_when_they_went(
    tmp_path: Path,
) -> None:
    """A Deployment that tolerates the taint for 60 s and may only run on the tainted node:
    each replacement lands there and is evicted 60 s later, as on a real cluster."""

    async def main() -> list[dict[str, Any]]:
        clock = VirtualClock(START)
        nodes = [NodeShape(f"node-{i}") for i in (1, 2)]
        async with in_process_cluster(tmp_path / "source", clock, nodes=nodes) as cluster:
            client = cluster.client
            assert client is not None
            sticky = make_deployment("sticky", 1, {"app": "sticky"})
            sticky["spec"]["template"]["spec"]["nodeSelector"] = {
                "kubernetes.io/hostname": "node-2"
            }
            sticky["spec"]["template"]["spec"]["tolerations"] = [
                {
                    "key": "maintenance",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 60,
                }
            ]
            await client.create(DEPLOYMENTS, sticky, namespace="default")
            await clock.advance(30)
            return await read_live(client)

    objects = asyncio.run(main())
    report = what_if(objects, plan(objects, "node-2", "maintenance=true:NoExecute"), 150)
    [evicted] = report.affected
    assert (evicted.outcome, report.offset(evicted.at) if evicted.at else None) == (
        "evicted",
        60.0,
    )
    first, second = report.replacements
    assert (first.node, first.gone, first.detail) == ("node-2", True, "deleted at +2m0s")
    assert (second.node, second.gone, second.pending) == ("node-2", False, False)
    assert report.to_json()["replacements"][0]["deleted"] is True


def test_a_pod_on_a_silent_node_is_evicted_but_stays_terminating() -> None:
    """A node that is not Ready in the snapshot gets no kubelet in the copy: its evicted pod's
    deletion begins, and nothing finishes it — as on the real cluster."""
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "down", "uid": "00000000-0000-4000-8000-000000000001"},
            "status": {
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "Unknown",
                        "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                    }
                ],
                "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "stuck",
                "namespace": "default",
                "uid": "00000000-0000-4000-8000-000000000002",
            },
            "spec": {"nodeName": "down", "containers": [{"name": "c", "image": "nginx"}]},
            "status": {"phase": "Running"},
        },
    ]
    report = what_if(objects, plan(objects, "down", "k=v:NoExecute"), 120)
    [stuck] = report.affected
    assert (stuck.outcome, report.offset(stuck.at) if stuck.at else None) == ("evicted", 0.0)
    assert stuck.detail == (
        f"{EVICTED_BY_TAINT}; still Terminating at the end (its kubelet did not stop it)"
    )
