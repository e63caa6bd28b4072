"""``what-if taint devices``: what a DeviceTaintRule would do, found by making it in a copy of
the cluster on virtual time.

The copy is the one ``what-if taint nodes`` runs (:mod:`taintplane.sim.whatif`): the snapshot
restored into a scratch store with the scheduler, the controller manager (the device taint
eviction controller, the resource claim controller, workloads) and a simulated kubelet per Ready
node. The rule is created at the start (its taint's ``timeAdded`` is that instant, as the API
server stamps it), the clock moves to the end of the window, and the report says

* which running pods use a selected device through an allocated claim, and for each whether
  and when it is evicted (``timeAdded`` plus the claim's matching ``tolerationSeconds``, as
  the controller reckons it) or why it stays;
* which pods were created meanwhile (replacements), where their claims were allocated, and
  which stay Pending with the scheduler's message.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from taintplane.api.decoding import DecodeError, format_time
from taintplane.api.device_taints import (
    DeviceTaint,
    DeviceTaintEffect,
    DeviceTaintSelector,
    DeviceToleration,
)
from taintplane.api.features import FeatureGates
from taintplane.client import Client, object_key, resource
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster
from taintplane.sim.progress import Progress
from taintplane.sim.recorder import Happening, Recorder
from taintplane.sim.snapshot import not_restored
from taintplane.sim.whatif import node_shape, run_window
from taintplane.sim.whatif_outcomes import PodOutcome, Replacement, placement
from taintplane.sim.whatif_plan import DEFAULT_GRACE_SECONDS, SETTLE_SECONDS

__all__ = [
    "RULES",
    "DevicePlan",
    "DeviceWhatIfReport",
    "claim_devices",
    "default_device_window",
    "run_device_what_if",
]

RULES = resource("resource.k8s.io", "v1alpha3", "devicetaintrules")
CLAIMS = resource("resource.k8s.io", "v1", "resourceclaims")
DeviceID = tuple[str, str, str]


@dataclass(frozen=True)
class DevicePlan:
    """The DeviceTaintRule the question is about."""

    rule: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.rule["metadata"]["name"])

    @property
    def selector(self) -> DeviceTaintSelector | None:
        return DeviceTaintSelector.from_dict((self.rule.get("spec") or {}).get("deviceSelector"))

    @property
    def taint(self) -> DeviceTaint:
        return DeviceTaint.from_dict((self.rule.get("spec") or {}).get("taint") or {})

    def selects(self, device: DeviceID) -> bool:
        selector = self.selector
        return selector is not None and selector.matches(*device)


@dataclass
class ClaimUse:
    """A running pod's allocated claim, and the selected devices it holds."""

    pod: dict[str, Any]
    claim: dict[str, Any]
    devices: list[DeviceID]


@dataclass
class DeviceWhatIfReport:
    start: datetime
    end: datetime
    plan: DevicePlan
    #: The published devices the rule selects.
    devices: list[DeviceID] = field(default_factory=list)
    timeline: list[Happening] = field(default_factory=list)
    affected: list[PodOutcome] = field(default_factory=list)
    replacements: list[Replacement] = field(default_factory=list)
    #: pod key -> its claims' allocated devices at the end ("namespace/claim: d/p/dev, …")
    allocations: dict[str, list[str]] = field(default_factory=dict)
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
            "rule": self.plan.rule,
            "devices": ["/".join(d) for d in self.devices],
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
                    "claims": self.allocations.get(f"{r.namespace}/{r.name}", []),
                }
                for r in self.replacements
            ],
        }


# ---- what the snapshot says ---------------------------------------------------------------------


def published_devices(objects: Sequence[dict[str, Any]], plan: DevicePlan) -> list[DeviceID]:
    """The devices of the snapshot's ResourceSlices that the rule selects."""
    found: list[DeviceID] = []
    for obj in objects:
        if obj.get("kind") != "ResourceSlice":
            continue
        spec = obj.get("spec") or {}
        driver, pool = str(spec.get("driver", "")), str((spec.get("pool") or {}).get("name", ""))
        for device in spec.get("devices") or []:
            device_id = (driver, pool, str(device.get("name", "")))
            if plan.selects(device_id) and device_id not in found:
                found.append(device_id)
    return sorted(found)


def claim_devices(claim: dict[str, Any]) -> list[DeviceID]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return [
        (str(r.get("driver", "")), str(r.get("pool", "")), str(r.get("device", "")))
        for r in (allocation.get("devices") or {}).get("results") or []
    ]


def _running(pod: dict[str, Any]) -> bool:
    return bool(
        (pod.get("spec") or {}).get("nodeName")
        and not pod["metadata"].get("deletionTimestamp")
        and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    )


def claim_uses(objects: Sequence[dict[str, Any]], plan: DevicePlan) -> list[ClaimUse]:
    """Running pods holding a selected device through a claim reserved for them."""
    pods = {
        (o["metadata"].get("uid") or ""): o
        for o in objects
        if o.get("kind") == "Pod" and _running(o)
    }
    uses = []
    for claim in (o for o in objects if o.get("kind") == "ResourceClaim"):
        devices = [d for d in claim_devices(claim) if plan.selects(d)]
        if not devices:
            continue
        for reference in (claim.get("status") or {}).get("reservedFor") or []:
            pod = pods.get(str(reference.get("uid") or ""))
            if pod is not None:
                uses.append(ClaimUse(pod, claim, devices))
    return uses


def _toleration_seconds(claim: dict[str, Any], taint: DeviceTaint) -> tuple[bool, int | None]:
    """Whether every allocated result's tolerations tolerate the NoExecute taint, and the
    smallest ``tolerationSeconds`` among the matching ones (None: forever)."""
    seconds: list[int] = []
    allocation = (claim.get("status") or {}).get("allocation") or {}
    for result in (allocation.get("devices") or {}).get("results") or []:
        try:
            tolerations = [DeviceToleration.from_dict(t) for t in result.get("tolerations") or []]
        except DecodeError:
            return False, None
        matching = [t for t in tolerations if t.effect == taint.effect and t.tolerates(taint)]
        if not matching:
            return False, None
        seconds += [t.toleration_seconds for t in matching if t.toleration_seconds is not None]
    return True, min(seconds) if seconds else None


def default_device_window(objects: Sequence[dict[str, Any]], plan: DevicePlan) -> float:
    """Until the last eviction the rule causes, its grace period, and time for replacements."""
    taint = plan.taint
    last = 0.0
    if taint.effective_effect is DeviceTaintEffect.NO_EXECUTE:
        for use in claim_uses(objects, plan):
            tolerated, seconds = _toleration_seconds(use.claim, taint)
            if tolerated and seconds is None:
                continue
            grace = (use.pod.get("spec") or {}).get("terminationGracePeriodSeconds")
            delay = max(seconds or 0, 0) + (
                grace if isinstance(grace, int) else DEFAULT_GRACE_SECONDS
            )
            last = max(last, float(delay))
    return last + SETTLE_SECONDS


# ---- the run ------------------------------------------------------------------------------------


def _is_ready(node: dict[str, Any]) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def _why_it_stays(use: ClaimUse, taint: DeviceTaint, window: float) -> str:
    claim = f"claim {object_key(use.claim)}"
    devices = ", ".join("/".join(d) for d in use.devices)
    if taint.effective_effect is not DeviceTaintEffect.NO_EXECUTE:
        return f"{claim} holds {devices}; effect {taint.effect} evicts no pod"
    tolerated, seconds = _toleration_seconds(use.claim, taint)
    if tolerated and seconds is None:
        return f"{claim} tolerates {taint.to_string()} (no tolerationSeconds)"
    if tolerated and seconds is not None and seconds > window:
        return f"{claim} tolerates {taint.to_string()} for {seconds}s, beyond the window"
    return f"{claim} holds {devices}; not evicted within the window"


async def _allocations(client: Client, keys: Sequence[str]) -> dict[str, list[str]]:
    claims, _ = await client.list(CLAIMS)
    out: dict[str, list[str]] = {}
    for claim in claims:
        for reference in (claim.get("status") or {}).get("reservedFor") or []:
            key = f"{claim['metadata'].get('namespace')}/{reference.get('name')}"
            if key in keys:
                held = ", ".join("/".join(d) for d in claim_devices(claim))
                out.setdefault(key, []).append(f"{object_key(claim)}: {held}")
    return out


async def run_device_what_if(
    objects: Sequence[dict[str, Any]],
    plan: DevicePlan,
    *,
    start: datetime,
    window: float,
    features: FeatureGates | None = None,
    progress: Progress | None = None,
) -> DeviceWhatIfReport:
    """Restore ``objects`` into a scratch cluster starting at ``start``, create the rule, run
    ``window`` seconds of virtual time and report."""
    clock = VirtualClock(start)
    ready = [node_shape(o) for o in objects if o.get("kind") == "Node" and _is_ready(o)]
    uses = claim_uses(objects, plan)
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
            rule = {k: v for k, v in plan.rule.items() if k != "status"}
            await cluster.client.create(RULES, rule)
            await clock.advance(0)
            await run_window(clock, window, cluster, progress)
            report = DeviceWhatIfReport(
                start=began,
                end=clock.now(),
                plan=plan,
                devices=published_devices(objects, plan),
                timeline=recorder.named_deleters(),
                not_simulated=not_restored(objects),
            )
            seen: set[str] = set()
            for use in uses:
                key = object_key(use.pod)
                if key in seen:
                    continue
                seen.add(key)
                report.affected.append(_outcome(use, recorder, plan.taint, window))
            report.affected.sort(key=lambda p: (p.namespace, p.name))
            for key, owner in recorder.created.items():
                report.replacements.append(placement(recorder, began, key, owner))
            report.allocations = await _allocations(cluster.client, list(recorder.created))
            await recorder.stop()
    return report


def _outcome(use: ClaimUse, recorder: Recorder, taint: DeviceTaint, window: float) -> PodOutcome:
    metadata = use.pod["metadata"]
    node = str(use.pod["spec"]["nodeName"])
    deleting = recorder.deletion(object_key(use.pod))
    if deleting is None:
        why = _why_it_stays(use, taint, window)
        return PodOutcome(metadata["namespace"], metadata["name"], node, "stays", None, why)
    at, evicted, detail = deleting
    return PodOutcome(
        metadata["namespace"],
        metadata["name"],
        node,
        "evicted" if evicted else "deleted",
        at,
        detail,
    )
