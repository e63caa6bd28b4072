"""``taintplane simulate SCENARIO.yaml``: a scenario played on a whole in-process cluster on
virtual time, with every change to pods and nodes recorded at its instant and the cluster's
state sampled for a chart.

Steps act as a user or a failing machine would: taints through the API as ``kubectl taint``
makes them, kubelets that stop and start, conditions a kubelet reports, objects created through
the API (admission included). A step that cannot be done (a node that does not exist, a taint
already there) is recorded as ``step-failed`` and the scenario goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from taintplane.agents.dra_driver import UnknownDeviceError
from taintplane.agents.kubelet import UnknownNodeError
from taintplane.api.decoding import format_time
from taintplane.api.features import FeatureGates
from taintplane.api.scheme import SCHEME
from taintplane.client import ApiError, Client
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import Cluster, in_process_cluster
from taintplane.sim.progress import Progress
from taintplane.sim.recorder import NODES, Happening, Recorder, node_taints
from taintplane.sim.scenario import Scenario, Step
from taintplane.sim.whatif_plan import WhatIfError, apply_plan, resolve_plan

__all__ = ["ROUTINE", "SAMPLES", "Sample", "SimulationReport", "run_scenario", "shown_timeline"]

#: Pod happenings left out first when a timeline is too long to show whole.
ROUTINE = frozenset({"created", "scheduled", "running", "succeeded"})
#: Points of the chart over the whole run.
SAMPLES = 200


@dataclass(frozen=True)
class Sample:
    """The cluster at one instant: pods by state, nodes by health and taints."""

    at: datetime
    running: int
    pending: int
    terminating: int
    finished: int
    nodes_ready: int
    nodes_no_execute: int
    nodes_no_schedule: int

    def to_json(self, start: datetime) -> dict[str, Any]:
        return {
            "at": format_time(self.at),
            "offsetSeconds": (self.at - start).total_seconds(),
            "pods": {
                "running": self.running,
                "pending": self.pending,
                "terminating": self.terminating,
                "finished": self.finished,
            },
            "nodes": {
                "ready": self.nodes_ready,
                "noExecuteTainted": self.nodes_no_execute,
                "noScheduleTainted": self.nodes_no_schedule,
            },
        }


@dataclass
class SimulationReport:
    name: str
    start: datetime
    end: datetime
    nodes: int
    steps: list[tuple[datetime, Step]] = field(default_factory=list)
    timeline: list[Happening] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)

    def offset(self, moment: datetime) -> float:
        return (moment - self.start).total_seconds()

    def counts(self) -> dict[str, int]:
        """How often each kind of happening occurred (evicting, deleted, created, …)."""
        return dict(sorted(Counter(h.event for h in self.timeline).items()))

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "start": format_time(self.start),
            "until": format_time(self.end),
            "nodes": self.nodes,
            "steps": [
                {
                    "at": format_time(at),
                    "offsetSeconds": self.offset(at),
                    "action": step.action,
                    "summary": step.summary,
                }
                for at, step in self.steps
            ],
            "counts": self.counts(),
            "timeline": [
                {
                    "at": format_time(h.at),
                    "offsetSeconds": self.offset(h.at),
                    "event": h.event,
                    "kind": h.kind,
                    "namespace": h.namespace,
                    "name": h.name,
                    "detail": h.detail,
                }
                for h in self.timeline
            ],
            "samples": [s.to_json(self.start) for s in self.samples],
        }


def shown_timeline(timeline: list[Happening], limit: int) -> tuple[list[Happening], int, int]:
    """At most ``limit`` happenings to show: all of them if they fit, else the ones that are
    news first (steps, nodes, evictions, deletions, failures) and routine pod start-up only
    if room is left. Also how many routine ones and how many others were left out."""
    if len(timeline) <= limit:
        return timeline, 0, 0
    notable = [h for h in timeline if not (h.kind == "Pod" and h.event in ROUTINE)]
    shown = notable[:limit]
    return shown, len(timeline) - len(notable), len(notable) - len(shown)


def _sample(recorder: Recorder, at: datetime) -> Sample:
    running = pending = terminating = finished = 0
    for pod in recorder.pods.cache.values():
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            finished += 1
        elif pod["metadata"].get("deletionTimestamp"):
            terminating += 1
        elif phase == "Running":
            running += 1
        else:
            pending += 1
    ready = no_execute = no_schedule = 0
    for node in recorder.nodes.cache.values():
        conditions = (node.get("status") or {}).get("conditions") or []
        ready += any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        effects = {t.effect for t in node_taints(node)}
        no_execute += "NoExecute" in effects
        no_schedule += "NoSchedule" in effects
    return Sample(at, running, pending, terminating, finished, ready, no_execute, no_schedule)


async def _create(client: Client, obj: dict[str, Any]) -> None:
    rt = SCHEME.by_kind(str(obj["apiVersion"]), str(obj["kind"]))
    if rt is None:
        raise WhatIfError(f"no kind {obj['kind']} in {obj['apiVersion']} is served")
    namespace = str(obj["metadata"].get("namespace") or "default") if rt.namespaced else ""
    await client.create(rt, obj, namespace)


async def _act(cluster: Cluster, step: Step) -> None:
    client, kubelets = cluster.client, cluster.kubelets
    assert client is not None
    assert kubelets is not None
    if step.action == "taint":
        nodes, _ = await client.list(NODES)
        plan = resolve_plan(
            nodes,
            ["nodes", *step.nodes],
            step.changes,
            selector=step.selector,
            all_nodes=step.all_nodes,
            overwrite=step.overwrite,
        )
        clock = cluster.clock
        assert isinstance(clock, VirtualClock)
        # One node after another, the cluster reacting in between, as kubectl taint does.
        await apply_plan(client, plan, between=lambda: clock.advance(0))
    elif step.action in ("stop", "start"):
        names = kubelets.zone_nodes(step.zone) if step.zone else list(step.nodes)
        if not names:
            raise WhatIfError(f"no simulated node is in zone {step.zone!r}")
        for name in names:
            if step.action == "stop":
                kubelets.stop(name)
            else:
                await kubelets.start(name)
    elif step.action == "condition":
        await kubelets.set_condition(step.nodes[0], *step.condition)
    elif step.action == "deviceHealth":
        driver, pool, device = step.device.split("/")
        health, effect = step.health
        try:
            await kubelets.dra.set_health(driver, pool, device, health, effect or None)
        except UnknownDeviceError as error:
            raise WhatIfError(f"device {error.args[0]} is not a simulated device") from error
    elif step.action == "apply":
        for obj in step.objects:
            await _apply(client, obj)
    else:
        for obj in step.objects:
            await _create(client, obj)


async def _apply(client: Client, obj: dict[str, Any]) -> None:
    """Create the object, or give the existing one the manifest's labels, annotations and
    spec (a merge patch: what ``kubectl apply`` of the whole manifest changes)."""
    try:
        await _create(client, obj)
        return
    except ApiError as error:
        if error.code != 409:
            raise
    rt = SCHEME.by_kind(str(obj["apiVersion"]), str(obj["kind"]))
    assert rt is not None
    metadata = obj["metadata"]
    namespace = str(metadata.get("namespace") or "default") if rt.namespaced else ""
    patch: dict[str, Any] = {"metadata": {}}
    for key in ("labels", "annotations"):
        if key in metadata:
            patch["metadata"][key] = metadata[key]
    if "spec" in obj:
        patch["spec"] = obj["spec"]
    await client.patch(rt, str(metadata["name"]), patch, namespace=namespace, patch_type="merge")


async def run_scenario(
    scenario: Scenario,
    *,
    features: FeatureGates | None = None,
    progress: Progress | None = None,
    rest_at_samples: bool = False,
) -> SimulationReport:
    """Play ``scenario`` on a fresh cluster in a scratch directory; the report.
    ``rest_at_samples``: the clock also stops at each sample, as it once did (the same
    report for a write per node per sample more; tests compare the two)."""
    clock = VirtualClock(scenario.start)
    report = SimulationReport(scenario.name, scenario.start, scenario.start, len(scenario.nodes))
    with tempfile.TemporaryDirectory(prefix="taintplane-simulate-") as scratch:
        async with in_process_cluster(
            Path(scratch), clock, nodes=scenario.nodes, features=features
        ) as cluster:
            assert cluster.client is not None
            recorder = Recorder(cluster.client, clock, cluster.informers)
            await recorder.start()
            if progress is not None:
                await progress(cluster, 0.0, scenario.until)
            failures: list[Happening] = []

            def failed(step: Step, message: str) -> None:
                failures.append(
                    Happening(clock.now(), "step-failed", "Step", step.action, "", message)
                )

            async def perform(step: Step) -> None:
                report.steps.append((clock.now(), step))
                try:
                    await _act(cluster, step)
                except UnknownNodeError as error:
                    failed(step, f"node {error.args[0]!r} is not a simulated node")
                except (ApiError, WhatIfError) as error:
                    failed(step, str(error))
                await clock.advance(0)

            for obj in scenario.objects:
                await perform(Step(0.0, "create", objects=(obj,), summary=_created(obj)))
            pending = list(scenario.steps)
            interval = scenario.until / SAMPLES if scenario.until > 0 else 0.0
            next_sample = 0.0

            async def sample_on_the_way(upcoming: float) -> None:
                """Samples due before ``upcoming``, each from a sleeper that runs after
                everything else due at its instant: the clock does not stop for them (every
                rest writes down each node's elided heartbeats, sim.steady)."""
                nonlocal next_sample
                while interval and next_sample < upcoming:
                    await clock.sleep_until(next_sample, last=True)
                    report.samples.append(_sample(recorder, clock.now()))
                    next_sample = clock.monotonic() + interval
                    if progress is not None:
                        await progress(cluster, clock.monotonic(), scenario.until)

            while True:
                elapsed = clock.monotonic()
                while pending and pending[0].at <= elapsed:
                    await perform(pending.pop(0))
                if next_sample <= elapsed:
                    report.samples.append(_sample(recorder, clock.now()))
                    next_sample = elapsed + interval if interval else scenario.until + 1
                if elapsed >= scenario.until:
                    break
                # The clock stops only for steps (they act as a user does, at rest).
                rests = [next_sample] if rest_at_samples else []
                upcoming = min([scenario.until, *rests, *(s.at for s in pending[:1])])
                sampler = asyncio.ensure_future(sample_on_the_way(upcoming))
                try:
                    await clock.advance(upcoming - elapsed)
                finally:
                    sampler.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await sampler
                if progress is not None:
                    await progress(cluster, clock.monotonic(), scenario.until)
            report.end = clock.now()
            report.timeline = sorted([*recorder.named_deleters(), *failures], key=lambda h: h.at)
            await recorder.stop()
    return report


def _created(obj: dict[str, Any]) -> str:
    return f"create {obj['kind']}/{obj['metadata']['name']}"
