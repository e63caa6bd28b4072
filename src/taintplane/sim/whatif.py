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

import asyncio
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from taintplane.agents.nodes import NodeShape
from taintplane.api.decoding import format_time
from taintplane.api.features import FeatureGates
from taintplane.api.podconditions import find_condition
from taintplane.api.selectors import LabelSelector
from taintplane.api.taint_spec import TaintChanges, TaintSpecError, apply_taint_changes
from taintplane.api.taints import Taint, TaintEffect
from taintplane.api.tolerations import (
    Toleration,
    matching_tolerations,
    min_toleration_seconds,
)
from taintplane.client import Client, Informer, resource
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster

__all__ = [
    "NODE_RESOURCE_NAMES",
    "Happening",
    "PodOutcome",
    "Replacement",
    "TaintPlan",
    "WhatIfError",
    "WhatIfReport",
    "default_window",
    "node_shape",
    "resolve_plan",
    "run_what_if",
]

NODES = resource("", "v1", "nodes")
PODS = resource("", "v1", "pods")
EVENTS = resource("", "v1", "events")

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
class Happening:
    """One thing that happened in the simulation, at the instant it happened."""

    at: datetime
    #: tainted, untainted, node-condition, created, scheduled, unschedulable, evicting,
    #: terminating, running, failed, succeeded, deleted
    event: str
    kind: str
    name: str
    namespace: str = ""
    detail: str = ""

    @property
    def object(self) -> str:
        prefix = self.kind.lower()
        return (
            f"{prefix}/{self.namespace}/{self.name}" if self.namespace else f"{prefix}/{self.name}"
        )


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
    #: The node it was scheduled to, or "" while it is pending.
    node: str
    detail: str


@dataclass
class WhatIfReport:
    start: datetime
    end: datetime
    plan: TaintPlan
    timeline: list[Happening] = field(default_factory=list)
    affected: list[PodOutcome] = field(default_factory=list)
    replacements: list[Replacement] = field(default_factory=list)

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


def _taints(node: dict[str, Any]) -> list[Taint]:
    return [Taint.from_dict(t) for t in (node.get("spec") or {}).get("taints") or []]


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
            apply_taint_changes(name, _taints(nodes[name]), changes, overwrite=overwrite)
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
            node["metadata"]["name"], _taints(node), plan.changes, overwrite=True
        )
        delay = _eviction_delay(obj, taints)
        if delay is None:
            continue
        grace = (obj.get("spec") or {}).get("terminationGracePeriodSeconds")
        grace = DEFAULT_GRACE_SECONDS if grace is None else grace
        longest = max(longest, float(delay + grace))
    return longest + SETTLE_SECONDS


# ---- watching the copy ------------------------------------------------------------------------


def _owner(pod: dict[str, Any]) -> str:
    for ref in pod["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return f"{ref.get('kind')}/{ref.get('name')}"
    return ""


def _pod_changes(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, str]]:
    """What a pod update says happened, as (event, detail)."""
    changes: list[tuple[str, str]] = []
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if new_spec.get("nodeName") and not old_spec.get("nodeName"):
        changes.append(("scheduled", f"to {new_spec['nodeName']}"))
    scheduled = find_condition(new, "PodScheduled") or {}
    before = find_condition(old, "PodScheduled") or {}
    if scheduled.get("reason") == "Unschedulable" and (
        scheduled.get("message") != before.get("message") or before.get("reason") != "Unschedulable"
    ):
        changes.append(("unschedulable", str(scheduled.get("message") or "")))
    if new["metadata"].get("deletionTimestamp") and not old.get("metadata", {}).get(
        "deletionTimestamp"
    ):
        disruption = find_condition(new, "DisruptionTarget")
        if disruption is not None and disruption.get("status") == "True":
            changes.append(("evicting", f"{disruption.get('reason')}: {disruption.get('message')}"))
        else:
            grace = new["metadata"].get("deletionGracePeriodSeconds")
            changes.append(("terminating", f"grace period {grace}s"))
    phase = (new.get("status") or {}).get("phase")
    if phase != (old.get("status") or {}).get("phase"):
        status = new.get("status") or {}
        if phase == "Running":
            changes.append(("running", f"on {new_spec.get('nodeName', '')}"))
        elif phase == "Failed":
            changes.append(("failed", f"{status.get('reason', '')}: {status.get('message', '')}"))
        elif phase == "Succeeded":
            changes.append(("succeeded", ""))
    return changes


def _node_changes(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, str]]:
    changes: list[tuple[str, str]] = []
    before = {(t.key, t.value, t.effect) for t in _taints(old)}
    after = {(t.key, t.value, t.effect) for t in _taints(new)}
    for taint in _taints(new):
        if (taint.key, taint.value, taint.effect) not in before:
            changes.append(("tainted", taint.to_string()))
    for taint in _taints(old):
        if (taint.key, taint.value, taint.effect) not in after:
            changes.append(("untainted", taint.to_string()))
    ready_before = _ready_condition(old)
    ready_after = _ready_condition(new)
    if ready_after.get("status") != ready_before.get("status"):
        changes.append(
            ("node-condition", f"Ready={ready_after.get('status')} ({ready_after.get('reason')})")
        )
    return changes


def _ready_condition(node: dict[str, Any]) -> dict[str, Any]:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return dict(condition)
    return {}


class _Recorder:
    """Pods and nodes of the copy, and every change to them once armed."""

    def __init__(self, client: Client, clock: VirtualClock) -> None:
        self.clock = clock
        self.armed = False
        self.timeline: list[Happening] = []
        #: Pods created while armed, in order, with their controller ("Kind/name" or "").
        self.created: dict[str, str] = {}
        #: When each pod's deletion began, whether it was an eviction, and why.
        self.deleting: dict[str, tuple[datetime, bool, str]] = {}
        self.deleted: dict[str, datetime] = {}
        self.unschedulable: dict[str, str] = {}
        self.pods = Informer(
            client,
            PODS,
            on_add=self._pod_added,
            on_update=self._pod_updated,
            on_delete=self._pod_deleted,
        )
        self.nodes = Informer(client, NODES, on_update=self._node_updated)
        #: Events say who deleted a pod when no DisruptionTarget condition does.
        self.events = Informer(client, EVENTS)
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        informers = (self.pods, self.nodes, self.events)
        for informer in informers:
            self._tasks.append(asyncio.create_task(informer.run()))
        await asyncio.gather(*(informer.synced.wait() for informer in informers))
        self.armed = True

    def deleted_by(self, key: str) -> str:
        """The controller whose event says it deleted the pod (``SuccessfulDelete``, as the
        ReplicaSet, DaemonSet and Job controllers record), as "Kind name"; "" if none did."""
        namespace, _, name = key.partition("/")
        for event in self.events.cache.values():
            if (
                event.get("reason") == "SuccessfulDelete"
                and event.get("message") == f"Deleted pod: {name}"
                and event["metadata"].get("namespace") == namespace
            ):
                involved = event.get("involvedObject") or {}
                return f"{involved.get('kind')} {involved.get('name')}"
        return ""

    def named_deleters(self) -> list[Happening]:
        """The timeline, with the deleter named where the pod's update did not say."""
        timeline = []
        for happening in self.timeline:
            if happening.event == "terminating":
                key = f"{happening.namespace}/{happening.name}"
                deleter = self.deleted_by(key)
                if deleter:
                    happening = replace(happening, detail=f"by {deleter}, {happening.detail}")
            timeline.append(happening)
        return timeline

    def deletion(self, key: str) -> tuple[datetime, bool, str] | None:
        """When the pod's deletion began, whether by eviction, and why (with the deleter)."""
        found = self.deleting.get(key)
        if found is None or found[1]:
            return found
        deleter = self.deleted_by(key)
        return (found[0], False, f"by {deleter}, {found[2]}" if deleter else found[2])

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _record(self, event: str, obj: dict[str, Any], detail: str) -> None:
        metadata = obj["metadata"]
        self.timeline.append(
            Happening(
                at=self.clock.now(),
                event=event,
                kind=str(obj.get("kind") or ("Pod" if "namespace" in metadata else "Node")),
                name=metadata["name"],
                namespace=metadata.get("namespace", ""),
                detail=detail,
            )
        )

    def _pod_added(self, pod: dict[str, Any]) -> None:
        if not self.armed:
            return
        owner = self.created[_key(pod)] = _owner(pod)
        self._record("created", pod, f"by {owner.replace('/', ' ')}" if owner else "")
        self._pod_updated({"metadata": {}}, pod)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if not self.armed:
            return
        key = _key(new)
        for event, detail in _pod_changes(old, new):
            self._record(event, new, detail)
            if event in ("evicting", "terminating"):
                self.deleting[key] = (self.clock.now(), event == "evicting", detail)
            elif event == "unschedulable":
                self.unschedulable[key] = detail

    def _pod_deleted(self, pod: dict[str, Any]) -> None:
        if not self.armed:
            return
        self.deleted[_key(pod)] = self.clock.now()
        self._record("deleted", pod, "")

    def _node_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if not self.armed:
            return
        for event, detail in _node_changes(old, new):
            self._record(event, new, detail)


def _key(obj: dict[str, Any]) -> str:
    metadata = obj["metadata"]
    return f"{metadata.get('namespace', '')}/{metadata['name']}"


# ---- the run ------------------------------------------------------------------------------------


async def _apply(client: Client, plan: TaintPlan) -> None:
    """The taint changes, as ``kubectl taint`` makes them: a node's whole new taint list."""
    for name in plan.nodes:
        node = await client.get(NODES, name)
        _, taints = apply_taint_changes(name, _taints(node), plan.changes, overwrite=plan.overwrite)
        node.setdefault("spec", {})["taints"] = [t.to_dict() for t in taints]
        await client.update(NODES, node)


def _why_it_stays(
    pod: dict[str, Any], node: dict[str, Any] | None, end: datetime, started: datetime
) -> str:
    taints = _taints(node) if node is not None else []
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
            recorder = _Recorder(cluster.client, clock)
            await recorder.start()
            began = clock.now()
            before = [p for p in recorder.pods.cache.values() if _running_on(p, plan.nodes)]
            await _apply(cluster.client, plan)
            await clock.advance(0)
            step = window / STEPS if window > 0 else 0
            for done in range(1, STEPS + 1):
                await clock.advance(step)
                if progress is not None:
                    progress(step * done, window)
            end = clock.now()
            report = WhatIfReport(
                start=began, end=end, plan=plan, timeline=recorder.named_deleters()
            )
            for pod in before:
                key = _key(pod)
                node_name = pod["spec"]["nodeName"]
                deleting = recorder.deletion(key)
                if deleting is not None:
                    outcome = PodOutcome(
                        pod["metadata"]["namespace"],
                        pod["metadata"]["name"],
                        node_name,
                        "evicted" if deleting[1] else "deleted",
                        deleting[0],
                        deleting[2],
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
                report.affected.append(outcome)
            for key, owner in recorder.created.items():
                final = recorder.pods.get(key)
                namespace, _, name = key.partition("/")
                if final is None:
                    placed, detail = "", "deleted in the window"
                else:
                    placed = (final.get("spec") or {}).get("nodeName") or ""
                    detail = "" if placed else recorder.unschedulable.get(key, "pending")
                report.replacements.append(Replacement(namespace, name, owner, placed, detail))
            await recorder.stop()
    return report
