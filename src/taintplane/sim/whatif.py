"""``what-if``: what a taint would do, found by doing it to a copy of the cluster on virtual time.

The copy starts from a snapshot (a file, or the live cluster read over its API) restored into a
scratch store and runs every component the real cluster runs: the scheduler, the controller
manager (taint eviction, ReplicaSets, Deployments, DaemonSets, disruption budgets, …) and a
simulated kubelet for every node that is Ready in the snapshot. A node that is not Ready gets
none: it stays as silent as it is. The taint is applied as ``kubectl taint`` applies it, the
clock is moved to the end of the window, and what happens to pods and nodes is written down at
the instant it happens.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from taintplane.agents.nodes import NodeShape
from taintplane.api.decoding import format_time
from taintplane.api.duration import format_duration
from taintplane.api.features import FeatureGates
from taintplane.api.scheme import SCHEME
from taintplane.api.selectors import LabelSelector
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
from taintplane.sim.recorder import NODES, Happening, Recorder, node_taints
from taintplane.sim.snapshot import not_restored

__all__ = [
    "NODE_RESOURCE_NAMES",
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
    #: condition), deleted (by anyone else, e.g. its DaemonSet), or stays
    outcome: str
    at: datetime | None
    detail: str


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
    #: Kinds of the snapshot the copy runs without (``apiVersion Kind``): nothing of theirs
    #: happens in it (a StatefulSet does not replace its pods, a Job does not finish).
    not_simulated: list[str] = field(default_factory=list)

    def offset(self, moment: datetime) -> float:
        return (moment - self.start).total_seconds()

    def to_json(self) -> dict[str, Any]:
        def when(moment: datetime | None) -> dict[str, Any]:
            if moment is None:
                return {"at": None, "offsetSeconds": None}
            return {"at": format_time(moment), "offsetSeconds": self.offset(moment)}

        return {
            "start": format_time(self.start),
            "until": format_time(self.end),
            "nodes": list(self.plan.nodes),
            "taints": [t.to_string() for t in self.plan.changes.add],
            "removedTaints": [t.to_string() for t in self.plan.changes.remove],
            "notSimulated": self.not_simulated,
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
                }
                for p in self.affected
            ],
            "replacements": [
                {
                    "namespace": r.namespace,
                    "name": r.name,
                    "owner": r.owner,
                    "node": r.node,
                    "detail": r.detail,
                    "deleted": r.gone,
                }
                for r in self.replacements
            ],
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
) -> TaintPlan:
    """The nodes ``kubectl taint RESOURCES… CHANGES…`` would change in this snapshot, checked
    as kubectl checks them against the server (missing nodes, taints already there)."""
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
        if not chosen:
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


async def apply_plan(client: Client, plan: TaintPlan) -> None:
    """The taint changes, as ``kubectl taint`` makes them: a node's whole new taint list."""
    for name in plan.nodes:
        node = await client.get(NODES, name)
        _, taints = apply_taint_changes(
            name, node_taints(node), plan.changes, overwrite=plan.overwrite
        )
        node.setdefault("spec", {})["taints"] = [t.to_dict() for t in taints]
        await client.update(NODES, node)


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


def _why_it_stays(
    pod: dict[str, Any], node: dict[str, Any] | None, end: datetime, started: datetime
) -> str:
    taints = node_taints(node) if node is not None else []
    if not any(t.effect == TaintEffect.NO_EXECUTE for t in taints):
        return "no NoExecute taint on its node: NoSchedule and PreferNoSchedule do not evict"
    delay = _eviction_delay(pod, taints)
    if delay is None:
        return "tolerates every NoExecute taint on its node with no time limit"
    due = started + timedelta(seconds=delay)
    if due > end:
        return f"tolerationSeconds {delay}: due at {format_time(due)}, after the window"
    return "not evicted in the window"


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
    with tempfile.TemporaryDirectory(prefix="taintplane-what-if-") as scratch:
        async with in_process_cluster(
            Path(scratch), clock, nodes=ready, seed=list(objects), features=features
        ) as cluster:
            assert cluster.client is not None
            recorder = Recorder(cluster.client, clock)
            await recorder.start()
            began = clock.now()
            before = [p for p in recorder.pods.cache.values() if _running_on(p, plan.nodes)]
            await apply_plan(cluster.client, plan)
            await clock.advance(0)
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
            )
            for pod in before:
                key = object_key(pod)
                node_name = pod["spec"]["nodeName"]
                deleting = recorder.deletion(key)
                if deleting is not None:
                    detail = deleting[2]
                    if key not in recorder.deleted:
                        # Its deletion began but nothing finished it: a kubelet that is not
                        # running (a node already down in the snapshot) leaves it Terminating.
                        detail += "; still Terminating at the end (its kubelet did not stop it)"
                    outcome = PodOutcome(
                        pod["metadata"]["namespace"],
                        pod["metadata"]["name"],
                        node_name,
                        "evicted" if deleting[1] else "deleted",
                        deleting[0],
                        detail,
                    )
                else:
                    now = recorder.pods.get(key) or pod
                    why = _why_it_stays(now, recorder.nodes.get(node_name), end, began)
                    outcome = PodOutcome(
                        pod["metadata"]["namespace"],
                        pod["metadata"]["name"],
                        node_name,
                        "stays",
                        None,
                        why,
                    )
                report.affected.append(_flag_unsimulated_owner(outcome, pod))
            for key, owner in recorder.created.items():
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
                report.replacements.append(
                    Replacement(namespace, name, owner, placed, detail, gone=final is None)
                )
            await recorder.stop()
    return report
