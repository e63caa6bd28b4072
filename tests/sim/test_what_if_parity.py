"""``what-if`` against what the same ``kubectl taint`` does to a real cluster: nodes tainted
one after another, placements said to be one sample, removals that cancel evictions and let
Pending pods in, PodDisruptionBudgets the taint eviction controller does not heed, pods already
terminating, and NoExecute countdowns the copy restarts."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from taintplane.agents.nodes import NodeShape
from taintplane.api.decoding import format_time
from taintplane.api.selectors import parse_label_selector
from taintplane.cli.whatif import render_text
from taintplane.client import resource
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster
from taintplane.sim.recorder import NODES
from taintplane.sim.snapshot import read_live
from taintplane.sim.whatif import PLACEMENT_NOTE, WhatIfReport
from tests.controllers.harness import START
from tests.controllers.workload_builders import DEPLOYMENTS, make_deployment
from tests.sim.test_what_if import EVICTED_BY_TAINT, pinned_pod, plan, what_if

PODS = resource("", "v1", "pods")
PDBS = resource("policy", "v1", "poddisruptionbudgets")
MAINTENANCE_ADDED = START + timedelta(seconds=5)


def pool_deployment(name: str, pool: str, **pod_spec: Any) -> dict[str, Any]:
    deployment = make_deployment(name, 1, {"app": name})
    deployment["spec"]["template"]["spec"].update(nodeSelector={"pool": pool}, **pod_spec)
    return deployment


def take_snapshot(tmp_path: Path) -> list[dict[str, Any]]:
    """Pool a (a-1, a-2) and pool b (b-1, tainted maintenance=true:NoExecute at +5s):

    - ``pinned``: one pod of pool a, preferring a-1 (so it starts there, and a replacement can
      only go to a-2);
    - ``guarded``: one pod that only fits a-1, covered by the PodDisruptionBudget ``guarded``;
    - ``stuck``: a pod on a-1 whose deletion a finalizer holds up (Terminating);
    - ``patient``: on b-1, tolerating ``maintenance`` for 600 s (its eviction is due at +605s);
    - ``waiting``: Pending, for pool b, not tolerating ``maintenance``.
    """

    async def main() -> list[dict[str, Any]]:
        clock = VirtualClock(START)
        nodes = [
            NodeShape("a-1", labels={"pool": "a"}),
            NodeShape("a-2", labels={"pool": "a"}),
            NodeShape("b-1", labels={"pool": "b"}),
        ]
        async with in_process_cluster(tmp_path / "source", clock, nodes=nodes) as cluster:
            client = cluster.client
            assert client is not None
            prefer_a_1 = {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 100,
                            "preference": {
                                "matchExpressions": [
                                    {
                                        "key": "kubernetes.io/hostname",
                                        "operator": "In",
                                        "values": ["a-1"],
                                    }
                                ]
                            },
                        }
                    ]
                }
            }
            await client.create(
                DEPLOYMENTS, pool_deployment("pinned", "a", affinity=prefer_a_1), "default"
            )
            guarded = pool_deployment("guarded", "a")
            guarded["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "a-1"}
            await client.create(DEPLOYMENTS, guarded, "default")
            budget = {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "guarded", "namespace": "default"},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
            }
            await client.create(PDBS, budget, "default")
            stuck = pinned_pod("stuck", "a-1", [])
            stuck["metadata"]["finalizers"] = ["example.com/hold"]
            await client.create(PODS, stuck, "default")
            await clock.advance(5)
            await client.delete(PODS, "stuck", "default")
            node = await client.get(NODES, "b-1")
            node["spec"]["taints"] = [
                {
                    "key": "maintenance",
                    "value": "true",
                    "effect": "NoExecute",
                    "timeAdded": format_time(MAINTENANCE_ADDED),
                }
            ]
            await client.update(NODES, node)
            patient = [
                {
                    "key": "maintenance",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 600,
                }
            ]
            await client.create(PODS, pinned_pod("patient", "b-1", patient), "default")
            waiting = pinned_pod("waiting", "", [])
            del waiting["spec"]["nodeName"]
            waiting["spec"]["nodeSelector"] = {"pool": "b"}
            await client.create(PODS, waiting, "default")
            await clock.advance(25)
            return await read_live(client)

    return asyncio.run(main())


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return take_snapshot(tmp_path_factory.mktemp("snapshot"))


def name_of(objects: list[dict[str, Any]], prefix: str) -> str:
    [name] = [
        o["metadata"]["name"]
        for o in objects
        if o["kind"] == "Pod" and o["metadata"]["name"].startswith(prefix)
    ]
    return str(name)


def rows(report: WhatIfReport) -> list[tuple[float, str, str, str]]:
    return [(report.offset(h.at), h.event, h.object, h.detail) for h in report.timeline]


def line_of(text: str, pod: str) -> list[str]:
    return next(line.split(None, 5) for line in text.splitlines() if f" {pod} " in line)


def test_nodes_are_tainted_one_after_another_as_kubectl_does(
    snapshot: list[dict[str, Any]],
) -> None:
    """kubectl taint -l pool=a patches a-1, then a-2: in between, pinned's replacement lands
    on a-2, and is evicted when a-2's turn comes."""
    question = plan(snapshot, "maintenance=true:NoExecute", selector=parse_label_selector("pool=a"))
    assert question.nodes == ("a-1", "a-2")
    report = what_if(snapshot, question, 60)
    pinned = name_of(snapshot, "pinned-")
    first, second = (r for r in report.replacements if r.owner.startswith("ReplicaSet/pinned"))
    timeline = rows(report)
    mine = [
        (at, event, obj, detail)
        for at, event, obj, detail in timeline
        if obj.startswith(("node/", "pod/default/pinned-"))
        and event in ("tainted", "evicting", "scheduled", "unschedulable")
    ]
    # b-1 has its own NoExecute taint: the TaintToleration filter turns it away first.
    unschedulable = (
        "0/3 nodes are available: 3 node(s) had untolerated taint(s). no new claims to "
        "deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for "
        "scheduling."
    )
    assert mine == [
        (0.0, "tainted", "node/a-1", "maintenance=true:NoExecute"),
        (0.0, "evicting", f"pod/default/{pinned}", EVICTED_BY_TAINT),
        (0.0, "scheduled", f"pod/default/{first.name}", "to a-2"),
        (0.0, "tainted", "node/a-2", "maintenance=true:NoExecute"),
        (0.0, "evicting", f"pod/default/{first.name}", EVICTED_BY_TAINT),
        (0.0, "unschedulable", f"pod/default/{second.name}", unschedulable),
    ]
    assert (first.node, first.gone, first.detail) == ("a-2", True, "deleted at +0s")
    assert (second.node, second.pending) == ("", True)


def test_placements_are_said_to_be_one_sample(snapshot: list[dict[str, Any]]) -> None:
    report = what_if(snapshot, plan(snapshot, "a-1", "maintenance=true:NoExecute"), 60)
    assert report.to_json()["placementNote"] == PLACEMENT_NOTE
    lines = render_text(report).splitlines()
    assert lines[-3:] == [
        "Note: where pods are scheduled is one possible outcome: nodes that score equally are "
        "chosen at random, as the scheduler does.",
        "",
        lines[-1],
    ]
    assert lines[-1].startswith("Summary: ")


def test_a_removal_cancels_pending_evictions_and_lets_pending_pods_in(
    snapshot: list[dict[str, Any]],
) -> None:
    report = what_if(snapshot, plan(snapshot, "b-1", "maintenance-"), 60)
    [patient] = report.affected
    due = format_time(MAINTENANCE_ADDED + timedelta(seconds=600))
    assert due == "2026-01-01T00:10:05Z"
    assert (patient.name, patient.outcome, patient.at) == ("patient", "stays", None)
    assert patient.detail == (
        f"its pending eviction (due at {due}) is cancelled: the taint is removed"
    )
    assert rows(report)[:2] == [
        (0.0, "untainted", "node/b-1", "maintenance=true:NoExecute"),
        (0.0, "scheduled", "pod/default/waiting", "to b-1"),
    ]
    [waiting] = report.scheduled_pending
    assert (waiting.name, waiting.owner, waiting.node, waiting.gone) == (
        "waiting",
        "",
        "b-1",
        False,
    )
    assert report.to_json()["scheduledPending"] == [
        {
            "namespace": "default",
            "name": "waiting",
            "owner": "",
            "node": "b-1",
            "detail": "",
            "deleted": False,
        }
    ]
    text = render_text(report)
    assert line_of(text, "patient") == [
        "default",
        "patient",
        "b-1",
        "stays",
        "-",
        f"its pending eviction (due at {due}) is cancelled: the taint is removed",
    ]
    assert "Pending pods scheduled meanwhile:" in text.splitlines()
    assert line_of(text, "waiting") == ["default", "waiting", "-", "b-1"]
    assert text.splitlines()[-1] == (
        "Summary: of 1 pod on the tainted nodes, 0 evicted, 0 deleted; 0 pods created, "
        "0 scheduled, 0 pending; 1 Pending pod scheduled (b-1: 1)."
    )


def test_taint_eviction_says_the_pods_budget_does_not_apply(
    snapshot: list[dict[str, Any]],
) -> None:
    report = what_if(snapshot, plan(snapshot, "a-1", "maintenance=true:NoExecute"), 60)
    guarded = name_of(snapshot, "guarded-")
    [outcome] = [p for p in report.affected if p.name == guarded]
    note = "its PodDisruptionBudget guarded does not apply to taint eviction"
    assert (outcome.outcome, report.offset(outcome.at) if outcome.at else None) == (
        "evicted",
        0.0,
    )
    assert outcome.detail == f"{EVICTED_BY_TAINT}; {note}"
    [entry] = [p for p in report.to_json()["pods"] if p["name"] == guarded]
    assert entry["podDisruptionBudgetsNotApplied"] == ["guarded"]
    assert line_of(render_text(report), guarded)[5] == f"{EVICTED_BY_TAINT}; {note}"
    pinned = name_of(snapshot, "pinned-")
    [other] = [p for p in report.to_json()["pods"] if p["name"] == pinned]
    assert (other["detail"], other["podDisruptionBudgetsNotApplied"]) == (EVICTED_BY_TAINT, [])


def test_a_pod_already_terminating_is_marked_by_the_taint_manager(
    snapshot: list[dict[str, Any]],
) -> None:
    report = what_if(snapshot, plan(snapshot, "a-1", "maintenance=true:NoExecute"), 60)
    [stuck] = [p for p in report.affected if p.name == "stuck"]
    assert (stuck.outcome, report.offset(stuck.at) if stuck.at else None) == ("terminating", 0.0)
    assert stuck.detail == "already terminating; marked by the taint manager at +0s"
    assert (0.0, "marked", "pod/default/stuck", EVICTED_BY_TAINT) in rows(report)
    [entry] = [p for p in report.to_json()["pods"] if p["name"] == "stuck"]
    assert (entry["outcome"], entry["offsetSeconds"], entry["detail"]) == (
        "terminating",
        0.0,
        "already terminating; marked by the taint manager at +0s",
    )
    text = render_text(report)
    assert line_of(text, "stuck") == [
        "default",
        "stuck",
        "a-1",
        "terminating",
        "+0s",
        "already terminating; marked by the taint manager at +0s",
    ]
    assert ", 1 already terminating;" in text.splitlines()[-1]


def test_a_no_execute_taint_the_node_already_has_is_warned_about(
    snapshot: list[dict[str, Any]],
) -> None:
    report = what_if(snapshot, plan(snapshot, "b-1", "gpu=true:NoSchedule"), 0)
    warning = (
        "node b-1 already has maintenance=true:NoExecute (added 2026-01-01T00:00:05Z): the copy "
        "times tolerations of it from the start of the simulation, so evictions it causes may "
        "come earlier than shown"
    )
    assert report.warnings == [warning]
    assert report.to_json()["warnings"] == [warning]
    lines = render_text(report).splitlines()
    assert lines[2] == f"Warning: {warning}"
    assert lines[3] == ""
    # Removing it is no restarted countdown: nothing to warn about.
    assert what_if(snapshot, plan(snapshot, "b-1", "maintenance-"), 0).warnings == []
