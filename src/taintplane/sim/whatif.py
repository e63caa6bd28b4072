"""``what-if``: what a taint would do, found by doing it to a copy of the cluster on virtual time.

The copy starts from a snapshot (a file, or the live cluster read over its API) restored into a
scratch store and runs every component the real cluster runs: the scheduler, the controller
manager (taint eviction, ReplicaSets, Deployments, DaemonSets, disruption budgets, …) and a
simulated kubelet for every node that is Ready in the snapshot. A node that is not Ready gets
none: it stays as silent as it is. The taint is applied as ``kubectl taint`` applies it (one
node at a time, the cluster reacting in between), the clock is moved to the end of the window,
and what happens to pods and nodes is written down at the instant it happens.

Where a pod is scheduled is one sample: the scheduler picks at random among the nodes that score
best, as upstream's ``selectHost`` does, so the report says so rather than present it as certain.
"""

from __future__ import annotations

import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from taintplane.agents.nodes import NodeShape
from taintplane.api.decoding import format_time, parse_timestamp
from taintplane.api.duration import format_duration
from taintplane.api.features import FeatureGates
from taintplane.api.podconditions import find_condition
from taintplane.api.scheme import SCHEME
from taintplane.api.selectors import LabelSelector, SelectorError, label_selector_from_dict
from taintplane.api.taint_spec import TaintChanges, TaintSpecError, apply_taint_changes
from taintplane.api.taints import Taint, TaintEffect
from taintplane.api.tolerations import (
    Toleration,
    matching_tolerations,
    min_toleration_seconds,
)
from taintplane.client import Client, object_key
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster
from taintplane.sim.recorder import NODES, Happening, Recorder, node_taints, owner_of
from taintplane.sim.snapshot import not_restored

__all__ = [
    "NODE_RESOURCE_NAMES",
    "PLACEMENT_NOTE",
    "Happening",
    "PodOutcome",
    "Replacement",
    "TaintPlan",
    "WhatIfError",
    "WhatIfReport",
    "apply_plan",
    "default_window",
    "node_shape",
    "resolve_plan",
    "run_what_if",
]


#: Time left after the last eviction the taint causes, for replacements to be scheduled and start.
SETTLE_SECONDS = 300.0
#: The kubelet's grace period when a pod sets none.
DEFAULT_GRACE_SECONDS = 30
#: How many steps the clock takes through the window (each one reports progress).
STEPS = 100


#: Said once with every report: a placement is one outcome of the scheduler's random tie-break.
PLACEMENT_NOTE = (
    "where pods are scheduled is one possible outcome: nodes that score equally are chosen "
    "at random, as the scheduler does"
)
#: The taint eviction controller's DisruptionTarget reason (PDBs do not hold it back).
TAINT_EVICTION_REASON = "DeletionByTaintManager"

#: What ``kubectl taint`` accepts as the resource type.
NODE_RESOURCE_NAMES = frozenset({"node", "nodes", "no"})


class WhatIfError(ValueError):
    """The question cannot be asked of this snapshot (worded as kubectl words it)."""


@dataclass(frozen=True)
class TaintPlan:
    """The taint changes of the question, and the nodes they are made to."""

    nodes: tuple[str, ...]
    changes: TaintChanges
    overwrite: bool = False


@dataclass(frozen=True)
class PodOutcome:
    """What became of a pod that ran on one of the tainted nodes."""

    namespace: str
    name: str
    node: str
    #: evicted (by the taint eviction controller or the Eviction API: a DisruptionTarget
    #: condition), deleted (by anyone else, e.g. its DaemonSet), terminating (its deletion
    #: began before the taint), or stays
    outcome: str
    at: datetime | None
    detail: str
    #: The PodDisruptionBudgets covering a pod the taint eviction controller evicted: upstream
    #: does not consult them, so they did not hold the eviction back.
    budgets_not_applied: tuple[str, ...] = ()


@dataclass(frozen=True)
class Replacement:
    """A pod created during the window (by a ReplicaSet, a DaemonSet, …), and where it went."""

    namespace: str
    name: str
    owner: str
    #: The node it was scheduled to (last), or "" if it never was.
    node: str
    detail: str
    #: Deleted before the window ended.
    gone: bool = False

    @property
    def pending(self) -> bool:
        return not self.node and not self.gone


@dataclass
class WhatIfReport:
    start: datetime
    end: datetime
    plan: TaintPlan
    timeline: list[Happening] = field(default_factory=list)
    affected: list[PodOutcome] = field(default_factory=list)
    replacements: list[Replacement] = field(default_factory=list)
    #: Pods Pending before the change that were scheduled in the window (e.g. once a taint
    #: that kept them off a node is removed), and where they went.
    scheduled_pending: list[Replacement] = field(default_factory=list)
    #: Kinds of the snapshot the copy runs without (``apiVersion Kind``): nothing of theirs
    #: happens in it (a StatefulSet does not replace its pods, a Job does not finish).
    not_simulated: list[str] = field(default_factory=list)
    #: Where the copy may differ from the cluster (e.g. NoExecute countdowns restarted).
    warnings: list[str] = field(default_factory=list)

    def offset(self, moment: datetime) -> float:
        return (moment - self.start).total_seconds()

    def to_json(self) -> dict[str, Any]:
        def when(moment: datetime | None) -> dict[str, Any]:
            if moment is None:
                return {"at": None, "offsetSeconds": None}
            return {"at": format_time(moment), "offsetSeconds": self.offset(moment)}

        def placed(pods: list[Replacement]) -> list[dict[str, Any]]:
            return [
                {
                    "namespace": r.namespace,
                    "name": r.name,
                    "owner": r.owner,
                    "node": r.node,
                    "detail": r.detail,
                    "deleted": r.gone,
                }
                for r in pods
            ]

        return {
            "start": format_time(self.start),
            "until": format_time(self.end),
            "nodes": list(self.plan.nodes),
            "taints": [t.to_string() for t in self.plan.changes.add],
            "removedTaints": [t.to_string() for t in self.plan.changes.remove],
            "notSimulated": self.not_simulated,
            "warnings": self.warnings,
            "placementNote": PLACEMENT_NOTE,
            "timeline": [
                {
                    **when(h.at),
                    "event": h.event,
                    "kind": h.kind,
                    "namespace": h.namespace,
                    "name": h.name,
                    "detail": h.detail,
                }
                for h in self.timeline
            ],
            "pods": [
                {
                    "namespace": p.namespace,
                    "name": p.name,
                    "node": p.node,
                    "outcome": p.outcome,
                    **when(p.at),
                    "detail": p.detail,
                    "podDisruptionBudgetsNotApplied": list(p.budgets_not_applied),
                }
                for p in self.affected
            ],
            "replacements": placed(self.replacements),
            "scheduledPending": placed(self.scheduled_pending),
        }


# ---- the snapshot's nodes and pods ----------------------------------------------------------


def _is_ready(node: dict[str, Any]) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def node_shape(node: dict[str, Any]) -> NodeShape:
    """The simulated kubelet that takes over a node of the snapshot: same name, labels,
    capacity and address (registration finds the node there and keeps its spec)."""
    metadata = node["metadata"]
    status = node.get("status") or {}
    labels = dict(metadata.get("labels") or {})
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    shape = NodeShape(
        name=metadata["name"],
        labels=labels,
        zone=labels.get("topology.kubernetes.io/zone", ""),
        region=labels.get("topology.kubernetes.io/region", ""),
        address=str(addresses.get("InternalIP") or ""),
    )
    if status.get("capacity"):
        shape.capacity = {str(k): str(v) for k, v in status["capacity"].items()}
    return shape


def _tolerations(pod: dict[str, Any]) -> list[Toleration]:
    return [Toleration.from_dict(t) for t in (pod.get("spec") or {}).get("tolerations") or []]


def _running_on(pod: dict[str, Any], nodes: Sequence[str]) -> bool:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    return (
        spec.get("nodeName") in nodes
        and not pod["metadata"].get("deletionTimestamp")
        and status.get("phase") not in ("Succeeded", "Failed")
    )


def _terminating_on(pod: dict[str, Any], nodes: Sequence[str]) -> bool:
    """A pod whose deletion began before the question: the taint eviction controller still
    marks it (and deletes it again), whatever its phase."""
    return bool(
        (pod.get("spec") or {}).get("nodeName") in nodes
        and pod["metadata"].get("deletionTimestamp")
    )


def _eviction_delay(pod: dict[str, Any], taints: Sequence[Taint]) -> int | None:
    """Seconds after the taints are seen until the taint eviction controller deletes ``pod``
    (0: at once), or None when it tolerates them for good or none of them is NoExecute."""
    no_execute = [t for t in taints if t.effect == TaintEffect.NO_EXECUTE]
    if not no_execute:
        return None
    matched = matching_tolerations(no_execute, _tolerations(pod))
    return 0 if matched is None else min_toleration_seconds(matched)


def resolve_plan(
    objects: Sequence[dict[str, Any]],
    resources: Sequence[str],
    changes: TaintChanges,
    *,
    selector: LabelSelector | None = None,
    all_nodes: bool = False,
    overwrite: bool = False,
    allow_no_match: bool = False,
) -> TaintPlan:
    """The nodes ``kubectl taint RESOURCES… CHANGES…`` would change in this snapshot, in the
    order kubectl visits them (the names as given; for ``-l`` and ``--all``, the order the
    server lists them in: by name), checked as kubectl checks them against the server (missing
    nodes, taints already there). A selector matching no node makes kubectl change nothing and
    succeed: with ``allow_no_match`` the plan is then empty rather than an error."""
    kind, names = resources[0], list(resources[1:])
    if kind.partition(".")[0] not in NODE_RESOURCE_NAMES:
        raise WhatIfError(f"invalid resource type {kind}, only node types are supported")
    nodes = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "Node"}
    if all_nodes or selector is not None:
        chosen = sorted(
            name
            for name, node in nodes.items()
            if selector is None or selector.matches(node["metadata"].get("labels"))
        )
        if not chosen and not allow_no_match:
            raise WhatIfError("no nodes found to taint")
    else:
        missing = [name for name in names if name not in nodes]
        if missing:
            raise WhatIfError(f'nodes "{missing[0]}" not found')
        chosen = list(dict.fromkeys(names))
    for name in chosen:
        try:
            apply_taint_changes(name, node_taints(nodes[name]), changes, overwrite=overwrite)
        except TaintSpecError as error:
            raise WhatIfError(error.message) from error
    return TaintPlan(tuple(chosen), changes, overwrite)


def default_window(objects: Sequence[dict[str, Any]], plan: TaintPlan) -> float:
    """Long enough for every eviction the taint causes, the evicted pods' grace periods, and
    :data:`SETTLE_SECONDS` more for their replacements to be scheduled and start."""
    nodes = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "Node"}
    longest = 0.0
    for obj in objects:
        if obj.get("kind") != "Pod" or not _running_on(obj, plan.nodes):
            continue
        node = nodes[obj["spec"]["nodeName"]]
        _, taints = apply_taint_changes(
            node["metadata"]["name"], node_taints(node), plan.changes, overwrite=True
        )
        delay = _eviction_delay(obj, taints)
        if delay is None:
            continue
        grace = (obj.get("spec") or {}).get("terminationGracePeriodSeconds")
        grace = DEFAULT_GRACE_SECONDS if grace is None else grace
        longest = max(longest, float(delay + grace))
    return longest + SETTLE_SECONDS


# ---- the run ------------------------------------------------------------------------------------


async def apply_plan(
    client: Client, plan: TaintPlan, between: Callable[[], Awaitable[None]] | None = None
) -> None:
    """The taint changes, as ``kubectl taint`` makes them: one node after another (its
    ``RunTaint`` visits them in turn, one request each), a node's whole new taint list.
    ``between`` runs after each node, so the cluster can react before the next one changes
    (a replacement may land on a node tainted a moment later, as on a real cluster)."""
    for name in plan.nodes:
        node = await client.get(NODES, name)
        _, taints = apply_taint_changes(
            name, node_taints(node), plan.changes, overwrite=plan.overwrite
        )
        node.setdefault("spec", {})["taints"] = [t.to_dict() for t in taints]
        await client.update(NODES, node)
        if between is not None:
            await between()


def restarted_countdowns(objects: Sequence[dict[str, Any]], plan: TaintPlan) -> list[str]:
    """A warning for each NoExecute taint a changed node already has and keeps: the copy's
    taint eviction controller first sees it when the copy starts and times tolerations from
    then (as upstream's does after a restart), so its evictions may come earlier for real."""
    nodes = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "Node"}
    warnings = []
    for name in plan.nodes:
        before = node_taints(nodes[name])
        _, after = apply_taint_changes(name, before, plan.changes, overwrite=True)
        kept = {(t.key, t.value, t.effect) for t in after}
        for taint in before:
            if taint.effect != TaintEffect.NO_EXECUTE:
                continue
            if (taint.key, taint.value, taint.effect) not in kept:
                continue
            since = f" (added {format_time(taint.time_added)})" if taint.time_added else ""
            warnings.append(
                f"node {name} already has {taint.to_string()}{since}: the copy times "
                "tolerations of it from the start of the simulation, so evictions it causes "
                "may come earlier than shown"
            )
    return warnings


def _flag_unsimulated_owner(outcome: PodOutcome, pod: dict[str, Any]) -> PodOutcome:
    """A pod whose controller the copy does not run (a StatefulSet, a Job): nobody replaces
    it there, so the report says so rather than suggest it is simply gone."""
    for ref in pod["metadata"].get("ownerReferences") or []:
        if (
            ref.get("controller")
            and SCHEME.by_kind(str(ref.get("apiVersion")), str(ref.get("kind"))) is None
        ):
            owner = f"{ref.get('kind')}/{ref.get('name')}"
            note = f"its owner {owner} is not simulated: a replacement is not shown"
            return replace(outcome, detail=f"{outcome.detail}; {note}" if outcome.detail else note)
    return outcome


def _countdown_start(pod: dict[str, Any], taints: Sequence[Taint], fallback: datetime) -> datetime:
    """When the taint eviction controller began timing ``pod``'s tolerations, as well as the
    snapshot says: it saw the pod on the node with the NoExecute taint, so the later of the
    earliest such taint's timeAdded and the pod's scheduling."""
    added = [
        t.time_added
        for t in taints
        if t.effect == TaintEffect.NO_EXECUTE and t.time_added is not None
    ]
    scheduled = (find_condition(pod, "PodScheduled") or {}).get("lastTransitionTime")
    landed = pod["metadata"].get("creationTimestamp") if scheduled is None else scheduled
    instants = [min(added)] if added else []
    try:
        parsed = parse_timestamp(str(landed)) if landed else None
    except ValueError:
        parsed = None
    if parsed is not None:
        instants.append(parsed)
    return max(instants) if instants else fallback


def _why_it_stays(
    pod: dict[str, Any],
    before: Sequence[Taint],
    node: dict[str, Any] | None,
    end: datetime,
    started: datetime,
) -> str:
    taints = node_taints(node) if node is not None else []
    pending = _eviction_delay(pod, before)
    if pending is not None and _eviction_delay(pod, taints) is None:
        due = _countdown_start(pod, before, started) + timedelta(seconds=pending)
        return (
            f"its pending eviction (due at {format_time(due)}) is cancelled: the taint is removed"
        )
    if not any(t.effect == TaintEffect.NO_EXECUTE for t in taints):
        return "no NoExecute taint on its node: NoSchedule and PreferNoSchedule do not evict"
    delay = _eviction_delay(pod, taints)
    if delay is None:
        return "tolerates every NoExecute taint on its node with no time limit"
    due = started + timedelta(seconds=delay)
    if due > end:
        return f"tolerationSeconds {delay}: due at {format_time(due)}, after the window"
    return "not evicted in the window"


def _budgets_covering(objects: Sequence[dict[str, Any]], pod: dict[str, Any]) -> tuple[str, ...]:
    """The PodDisruptionBudgets whose selector matches ``pod`` in its namespace (one with an
    empty selector matches nothing, as the disruption controller reads it)."""
    namespace = pod["metadata"].get("namespace")
    labels = pod["metadata"].get("labels") or {}
    names = []
    for pdb in objects:
        if pdb.get("kind") != "PodDisruptionBudget":
            continue
        if pdb["metadata"].get("namespace", "default") != namespace:
            continue
        try:
            selector = label_selector_from_dict((pdb.get("spec") or {}).get("selector"))
        except SelectorError:
            continue
        if not selector.is_empty() and selector.matches(labels):
            names.append(str(pdb["metadata"]["name"]))
    return tuple(sorted(names))


def _not_held_back(outcome: PodOutcome, budgets: tuple[str, ...]) -> PodOutcome:
    """An eviction by the taint eviction controller, which (as upstream) deletes without asking
    the PodDisruptionBudgets that cover the pod: the report names them."""
    if not budgets or not outcome.detail.startswith(TAINT_EVICTION_REASON):
        return outcome
    if len(budgets) == 1:
        note = f"its PodDisruptionBudget {budgets[0]} does not apply to taint eviction"
    else:
        note = f"its PodDisruptionBudgets {', '.join(budgets)} do not apply to taint eviction"
    return replace(outcome, detail=f"{outcome.detail}; {note}", budgets_not_applied=budgets)


def _deletion_outcome(pod: dict[str, Any], recorder: Recorder) -> PodOutcome | None:
    """A pod whose deletion began in the window: evicted or deleted, when and by whom."""
    key = object_key(pod)
    deleting = recorder.deletion(key)
    if deleting is None:
        return None
    detail = deleting[2]
    if key not in recorder.deleted:
        # Its deletion began but nothing finished it: a kubelet that is not running (a node
        # already down in the snapshot) leaves it Terminating.
        detail += "; still Terminating at the end (its kubelet did not stop it)"
    outcome = "evicted" if deleting[1] else "deleted"
    metadata = pod["metadata"]
    return PodOutcome(
        metadata["namespace"],
        metadata["name"],
        pod["spec"]["nodeName"],
        outcome,
        deleting[0],
        detail,
    )


def _terminating_outcome(
    pod: dict[str, Any], recorder: Recorder, report: WhatIfReport
) -> PodOutcome:
    """A pod already Terminating: the taint eviction controller still marks it (upstream adds
    its DisruptionTarget condition and deletes it again), whether or not it then goes."""
    key = object_key(pod)
    marked = recorder.marked.get(key)
    detail = "already terminating"
    if marked is not None:
        detail += f"; marked by the taint manager at +{format_duration(report.offset(marked[0]))}"
    gone = recorder.deleted.get(key)
    if gone is not None:
        detail += f"; deleted at +{format_duration(report.offset(gone))}"
    metadata = pod["metadata"]
    return PodOutcome(
        metadata["namespace"],
        metadata["name"],
        pod["spec"]["nodeName"],
        "terminating",
        marked[0] if marked is not None else None,
        detail,
    )


def _placed(recorder: Recorder, report: WhatIfReport, key: str, owner: str) -> Replacement:
    """Where a pod scheduled (or created) in the window went, or why it is still pending."""
    final = recorder.pods.get(key)
    namespace, _, name = key.partition("/")
    if final is None:
        # Ran (or waited) and was deleted in the window: where it ran, and when.
        placed = recorder.placed.get(key, "")
        gone = recorder.deleted.get(key)
        detail = f"deleted at +{format_duration(report.offset(gone))}" if gone else ""
    else:
        placed = (final.get("spec") or {}).get("nodeName") or ""
        detail = "" if placed else recorder.unschedulable.get(key, "pending")
    return Replacement(namespace, name, owner, placed, detail, gone=final is None)


async def run_what_if(
    objects: Sequence[dict[str, Any]],
    plan: TaintPlan,
    *,
    start: datetime,
    window: float,
    features: FeatureGates | None = None,
    progress: Callable[[float, float], None] | None = None,
) -> WhatIfReport:
    """Restore ``objects`` into a scratch cluster starting at ``start``, make the taint changes
    of ``plan`` to its nodes, run ``window`` seconds of virtual time and report."""
    clock = VirtualClock(start)
    ready = [node_shape(o) for o in objects if o.get("kind") == "Node" and _is_ready(o)]
    taints_before = {
        o["metadata"]["name"]: node_taints(o) for o in objects if o.get("kind") == "Node"
    }
    with tempfile.TemporaryDirectory(prefix="taintplane-what-if-") as scratch:
        async with in_process_cluster(
            Path(scratch), clock, nodes=ready, seed=list(objects), features=features
        ) as cluster:
            assert cluster.client is not None
            recorder = Recorder(cluster.client, clock)
            await recorder.start()
            began = clock.now()
            pods = list(recorder.pods.cache.values())
            before = [p for p in pods if _running_on(p, plan.nodes)]
            terminating = [p for p in pods if _terminating_on(p, plan.nodes)]
            pending = {object_key(p) for p in pods if not (p.get("spec") or {}).get("nodeName")}
            await apply_plan(cluster.client, plan, between=lambda: clock.advance(0))
            step = window / STEPS if window > 0 else 0
            for done in range(1, STEPS + 1):
                await clock.advance(step)
                if progress is not None:
                    progress(step * done, window)
            end = clock.now()
            report = WhatIfReport(
                start=began,
                end=end,
                plan=plan,
                timeline=recorder.named_deleters(),
                not_simulated=not_restored(objects),
                warnings=restarted_countdowns(objects, plan),
            )
            for pod in before:
                outcome = _deletion_outcome(pod, recorder)
                if outcome is None:
                    node_name = pod["spec"]["nodeName"]
                    now = recorder.pods.get(object_key(pod)) or pod
                    why = _why_it_stays(
                        now, taints_before[node_name], recorder.nodes.get(node_name), end, began
                    )
                    metadata = pod["metadata"]
                    outcome = PodOutcome(
                        metadata["namespace"], metadata["name"], node_name, "stays", None, why
                    )
                outcome = _not_held_back(outcome, _budgets_covering(objects, pod))
                report.affected.append(_flag_unsimulated_owner(outcome, pod))
            for pod in terminating:
                report.affected.append(_terminating_outcome(pod, recorder, report))
            report.affected.sort(key=lambda p: (p.namespace, p.name))
            for key, owner in recorder.created.items():
                report.replacements.append(_placed(recorder, report, key, owner))
            for key in recorder.placed:
                if key in pending:
                    owner = owner_of(recorder.pods.get(key) or {"metadata": {}})
                    report.scheduled_pending.append(_placed(recorder, report, key, owner))
            await recorder.stop()
    return report
