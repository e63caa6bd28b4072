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

This module runs the copy and assembles the report; the change itself (which nodes, which taints,
how long to watch) is :mod:`taintplane.sim.whatif_plan`, and what became of each pod and why is
:mod:`taintplane.sim.whatif_outcomes`.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from taintplane.agents.nodes import NodeShape
from taintplane.api.decoding import format_time
from taintplane.api.features import FeatureGates
from taintplane.client import object_key
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import Cluster, in_process_cluster
from taintplane.sim.progress import Progress
from taintplane.sim.recorder import Happening, Recorder, node_taints, owner_of
from taintplane.sim.snapshot import not_restored
from taintplane.sim.whatif_outcomes import (
    PodOutcome,
    Replacement,
    placement,
    running_pod_outcome,
    terminating_on,
    terminating_outcome,
)
from taintplane.sim.whatif_plan import TaintPlan, apply_plan, restarted_countdowns, running_on

__all__ = [
    "PLACEMENT_NOTE",
    "STEPS",
    "WhatIfReport",
    "node_shape",
    "run_what_if",
    "run_window",
]


#: How many times progress is told through the window.
STEPS = 100

#: Said once with every report: a placement is one outcome of the scheduler's random tie-break.
PLACEMENT_NOTE = (
    "where pods are scheduled is one possible outcome: nodes that score equally are chosen "
    "at random, as the scheduler does"
)


@dataclass
class WhatIfReport:
    """What a ``what-if`` run found between ``start`` (the change about to be made) and ``end``."""

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


# ---- the run ------------------------------------------------------------------------------------


async def run_window(
    clock: VirtualClock,
    window: float,
    cluster: Cluster,
    progress: Progress | None,
    *,
    stops: int = 1,
) -> None:
    """Move the copy's clock ``window`` seconds on, in ``stops`` equal advances, telling
    ``progress`` :data:`STEPS` times on the way.

    The clock comes to rest only where an advance ends: every rest writes down each node's
    elided heartbeats (:mod:`taintplane.sim.steady`), a write per node, so progress is told
    from a sleeper on the clock, which time passes without stopping. One stop (the default)
    writes them once; the prediction is the same with any number (tests/sim/
    test_what_if_window.py runs both), only the cost grows with stops times nodes."""
    if progress is None:
        told = None
    else:
        told = asyncio.ensure_future(_tell_progress(clock, window, cluster, progress))
    try:
        advanced = 0.0
        for stop in range(1, stops + 1):
            until = window * stop / stops
            await clock.advance(until - advanced)
            advanced = until
    finally:
        if told is not None:
            told.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await told
    if progress is not None:
        await progress(cluster, window, window)


async def _tell_progress(
    clock: VirtualClock, window: float, cluster: Cluster, progress: Progress
) -> None:
    began = clock.monotonic()
    step = window / STEPS if window > 0 else 0.0
    if step <= 0:
        return
    for done in range(1, STEPS):
        await clock.sleep_until(began + step * done)
        await progress(cluster, step * done, window)


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


async def run_what_if(
    objects: Sequence[dict[str, Any]],
    plan: TaintPlan,
    *,
    start: datetime,
    window: float,
    features: FeatureGates | None = None,
    progress: Progress | None = None,
    stops: int = 1,
) -> WhatIfReport:
    """Restore ``objects`` into a scratch cluster starting at ``start``, make the taint changes
    of ``plan`` to its nodes, run ``window`` seconds of virtual time and report (``stops``: see
    :func:`run_window`)."""
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
            recorder = Recorder(cluster.client, clock, cluster.informers)
            await recorder.start()
            if progress is not None:
                await progress(cluster, 0.0, window)
            began = clock.now()
            pods = list(recorder.pods.cache.values())
            before = [p for p in pods if running_on(p, plan.nodes)]
            terminating = [p for p in pods if terminating_on(p, plan.nodes)]
            pending = {object_key(p) for p in pods if not (p.get("spec") or {}).get("nodeName")}
            await apply_plan(cluster.client, plan, between=lambda: clock.advance(0))
            await run_window(clock, window, cluster, progress, stops=stops)
            end = clock.now()
            report = WhatIfReport(
                start=began,
                end=end,
                plan=plan,
                timeline=recorder.named_deleters(),
                not_simulated=not_restored(objects),
                warnings=restarted_countdowns(objects, plan),
            )
            # The budgets apart once: each affected pod is matched against them, not against
            # every object of the snapshot.
            budgets = [o for o in objects if o.get("kind") == "PodDisruptionBudget"]
            for pod in before:
                node_taints_before = taints_before[pod["spec"]["nodeName"]]
                report.affected.append(
                    running_pod_outcome(
                        pod, recorder, budgets, node_taints_before, started=began, end=end
                    )
                )
            for pod in terminating:
                report.affected.append(terminating_outcome(pod, recorder, began))
            report.affected.sort(key=lambda p: (p.namespace, p.name))
            for key, owner in recorder.created.items():
                report.replacements.append(placement(recorder, began, key, owner))
            for key in recorder.placed:
                if key in pending:
                    owner = owner_of(recorder.pods.get(key) or {"metadata": {}})
                    report.scheduled_pending.append(placement(recorder, began, key, owner))
            await recorder.stop()
    return report
