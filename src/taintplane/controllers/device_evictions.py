"""What the device taint eviction controller decides, as pure functions over its caches.

Upstream's ``devicetainteviction`` semantics (Kubernetes 1.35):

- A claim's devices are tainted by the NoExecute taints of their ResourceSlice entries (only
  slices of the pool's newest generation count) and by every DeviceTaintRule with effect
  NoExecute whose selector matches ``driver/pool/device`` of the allocation result (a rule
  applies even when the slice is gone).
- Only tolerations with effect ``NoExecute`` that tolerate the taint count: one without
  ``tolerationSeconds`` tolerates it forever; otherwise the smallest ``tolerationSeconds``
  (negative as 0) is added to the taint's ``timeAdded``. An untolerated taint evicts at its
  ``timeAdded`` — possibly in the past, so at once.
- A pod is evicted at the earliest instant of the claims it uses (by name, or through its
  template's generated claim it controls) and is reserved for; the reasons are kept so that
  evictions can be counted per DeviceTaintRule.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from taintplane.api.device_taints import DeviceTaint, DeviceTaintSelector, DeviceToleration

__all__ = [
    "ClaimState",
    "Eviction",
    "Pools",
    "Rule",
    "TrackedTaint",
    "claim_eviction",
    "join",
    "pod_claim_keys",
    "pod_eviction",
]

NO_EXECUTE = "NoExecute"


@dataclass(frozen=True, slots=True)
class Rule:
    """A DeviceTaintRule as the controller reads it."""

    name: str
    uid: str
    generation: int
    selector: DeviceTaintSelector | None
    taint: DeviceTaint

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> Rule:
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        return cls(
            name=str(meta.get("name", "")),
            uid=str(meta.get("uid", "")),
            generation=int(meta.get("generation") or 0),
            selector=DeviceTaintSelector.from_dict(spec.get("deviceSelector")),
            taint=DeviceTaint.from_dict(spec.get("taint") or {}),
        )

    def selects(self, driver: str, pool: str, device: str) -> bool:
        return self.selector is not None and self.selector.matches(driver, pool, device)


@dataclass(frozen=True, slots=True)
class TrackedTaint:
    """A NoExecute taint and where it comes from: a rule, or one slice device's taint."""

    taint: DeviceTaint
    rule: str = ""
    rule_uid: str = ""
    slice: str = ""
    driver: str = ""
    pool: str = ""
    device: str = ""
    index: int = 0

    def sort_key(self) -> tuple[int, str, str, str, str, int]:
        if self.rule:
            return (0, self.rule, "", "", "", 0)  # rules first, by name
        return (1, self.driver, self.pool, self.device, self.slice, self.index)

    def __str__(self) -> str:
        if self.rule:
            return f"DeviceTaintRule {self.rule}"
        where = f"{self.driver}/{self.pool}/{self.device}"
        return f"ResourceSlice {self.slice} {where} taint #{self.index}"


@dataclass(frozen=True, slots=True)
class Eviction:
    when: datetime
    reasons: tuple[TrackedTaint, ...]

    def rule_uids(self) -> list[str]:
        return [r.rule_uid for r in self.reasons if r.rule]


@dataclass(frozen=True, slots=True)
class ClaimState:
    claim: dict[str, Any]
    eviction: Eviction | None


class Pools:
    """ResourceSlices by (driver, pool) and name; only the newest generation counts."""

    def __init__(self) -> None:
        self._pools: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}

    @staticmethod
    def pool_of(obj: Mapping[str, Any]) -> tuple[str, str]:
        spec = obj.get("spec") or {}
        return str(spec.get("driver", "")), str((spec.get("pool") or {}).get("name", ""))

    def current(self, pool: tuple[str, str]) -> list[dict[str, Any]]:
        slices = list(self._pools.get(pool, {}).values())
        newest = max((_generation(s) for s in slices), default=0)
        return [s for s in slices if _generation(s) == newest]

    def tainted(self, pool: tuple[str, str]) -> dict[str, list[dict[str, Any]]]:
        """Device name -> its NoExecute taints, in the pool's current slices."""
        found: dict[str, list[dict[str, Any]]] = {}
        for item in self.current(pool):
            for device in (item.get("spec") or {}).get("devices") or []:
                taints = [t for t in device.get("taints") or [] if t.get("effect") == NO_EXECUTE]
                if taints:
                    found.setdefault(str(device.get("name")), []).extend(taints)
        return found

    def update(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> set[str]:
        """Record a slice change; returns the devices whose NoExecute taints changed."""
        pool = self.pool_of(new if new is not None else old or {})
        before = self.tainted(pool)
        slices = self._pools.setdefault(pool, {})
        if old is not None:
            slices.pop(old["metadata"]["name"], None)
        if new is not None:
            slices[new["metadata"]["name"]] = new
        if not slices:
            del self._pools[pool]
        after = self.tainted(pool)
        return {d for d in before.keys() | after.keys() if before.get(d) != after.get(d)}

    def device(self, driver: str, pool: str, name: str) -> tuple[str, dict[str, Any]] | None:
        for item in self.current((driver, pool)):
            for device in (item.get("spec") or {}).get("devices") or []:
                if device.get("name") == name:
                    return item["metadata"]["name"], device
        return None

    def devices(self) -> Iterator[tuple[str, str, str]]:
        """Every published device of the current generations: (driver, pool, device)."""
        for driver, pool in list(self._pools):
            for item in self.current((driver, pool)):
                for device in (item.get("spec") or {}).get("devices") or []:
                    yield driver, pool, str(device.get("name"))


def _generation(obj: Mapping[str, Any]) -> int:
    return int(((obj.get("spec") or {}).get("pool") or {}).get("generation") or 0)


def allocation_results(claim: Mapping[str, Any]) -> list[dict[str, Any]]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return list((allocation.get("devices") or {}).get("results") or [])


def _request_tolerations(claim: Mapping[str, Any], request: str) -> list[Any]:
    """The tolerations of the (sub)request ``req`` or ``req/sub`` in the claim's spec."""
    name, _, sub = request.partition("/")
    for item in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
        if item.get("name") != name:
            continue
        if not sub:
            return list((item.get("exactly") or {}).get("tolerations") or [])
        for choice in item.get("firstAvailable") or []:
            if choice.get("name") == sub:
                return list(choice.get("tolerations") or [])
    return []


def result_tolerations(
    claim: Mapping[str, Any], result: Mapping[str, Any]
) -> list[DeviceToleration]:
    """The allocation result's tolerations (copied there by the allocator); for results
    written without them, the request's tolerations in the claim's spec."""
    items = result.get("tolerations")
    if items is None:
        items = _request_tolerations(claim, str(result.get("request", "")))
    return [DeviceToleration.from_dict(t) for t in items if isinstance(t, dict)]


def _evicting_taints(
    result: Mapping[str, Any], pools: Pools, rules: Iterable[Rule]
) -> Iterator[TrackedTaint]:
    driver, pool = str(result.get("driver", "")), str(result.get("pool", ""))
    device = str(result.get("device", ""))
    found = pools.device(driver, pool, device)
    if found is not None:
        slice_name, entry = found
        for index, raw in enumerate(entry.get("taints") or []):
            if raw.get("effect") == NO_EXECUTE:
                yield TrackedTaint(
                    DeviceTaint.from_dict(raw), slice=slice_name, driver=driver, pool=pool,
                    device=device, index=index,
                )  # fmt: skip
    for rule in rules:
        if rule.taint.effect == NO_EXECUTE and rule.selects(driver, pool, device):
            yield TrackedTaint(rule.taint, rule=rule.name, rule_uid=rule.uid)


def claim_eviction(
    claim: Mapping[str, Any], pools: Pools, rules: Sequence[Rule], now: datetime
) -> Eviction | None:
    """When pods using this allocated claim must go, and why (None: never)."""
    when: datetime | None = None
    reasons: dict[TrackedTaint, None] = {}
    for result in allocation_results(claim):
        tolerations = [t for t in result_tolerations(claim, result) if t.effect == NO_EXECUTE]
        for tracked in _evicting_taints(result, pools, rules):
            seconds: int | None = None
            forever = False
            for toleration in tolerations:
                if not toleration.tolerates(tracked.taint):
                    continue
                if toleration.toleration_seconds is None:
                    forever = True
                    break
                value = max(0, toleration.toleration_seconds)
                seconds = value if seconds is None else min(seconds, value)
            if forever:
                continue
            start = tracked.taint.time_added or now
            due = start + timedelta(seconds=seconds or 0)
            reasons[tracked] = None
            if when is None or due < when:
                when = due
    if when is None:
        return None
    return Eviction(when, tuple(sorted(reasons, key=TrackedTaint.sort_key)))


def join(first: Eviction | None, second: Eviction | None) -> Eviction | None:
    if first is None or second is None:
        return first or second
    reasons = dict.fromkeys((*first.reasons, *second.reasons))
    return Eviction(min(first.when, second.when), tuple(sorted(reasons, key=TrackedTaint.sort_key)))


def pod_claim_keys(pod: Mapping[str, Any]) -> Iterator[tuple[str, bool]]:
    """``resourceclaim.Name`` for each of the pod's claims: (namespace/name, must the claim
    be controlled by the pod); claims not created yet or not needed are skipped."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or []
    namespace = meta.get("namespace", "")
    for item in spec.get("resourceClaims") or []:
        if item.get("resourceClaimName"):
            yield f"{namespace}/{item['resourceClaimName']}", False
        elif item.get("resourceClaimTemplateName"):
            for status in statuses:
                if status.get("name") == item.get("name") and status.get("resourceClaimName"):
                    yield f"{namespace}/{status['resourceClaimName']}", True


def _controlled_by(claim: Mapping[str, Any], uid: str) -> bool:
    owners = (claim.get("metadata") or {}).get("ownerReferences") or []
    return any(o.get("controller") and o.get("uid") == uid for o in owners)


def _reserved_for(claim: Mapping[str, Any], uid: str) -> bool:
    reserved = (claim.get("status") or {}).get("reservedFor") or []
    return any(r.get("uid") == uid for r in reserved)


def pod_eviction(pod: Mapping[str, Any], claims: Mapping[str, ClaimState]) -> Eviction | None:
    """When the pod must be evicted for its claims' device taints (None: never)."""
    if not (pod.get("spec") or {}).get("nodeName"):
        return None  # not scheduled: nothing to evict
    uid = str((pod.get("metadata") or {}).get("uid", ""))
    eviction: Eviction | None = None
    for key, must_own in pod_claim_keys(pod):
        state = claims.get(key)
        if state is None or state.eviction is None:
            continue
        if must_own and not _controlled_by(state.claim, uid):
            continue
        if not _reserved_for(state.claim, uid):
            continue
        eviction = join(eviction, state.eviction)
    return eviction
