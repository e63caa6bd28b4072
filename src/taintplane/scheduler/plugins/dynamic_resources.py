"""DynamicResources: pods with ResourceClaims land where their devices can be allocated.

* **PreEnqueue** keeps a pod whose claims cannot be resolved yet out of the active queue (no
  attempt, no FailedScheduling), until a claim or pod event resolves them.
* **PreFilter** resolves the pod's claims (a template's claim is named in
  ``status.resourceClaimStatuses`` once the resource claim controller made it) and rejects the
  pod outright while a claim is missing, being deleted, not the pod's own, or its device class
  does not exist; claims still to be allocated get an allocator over the slices (with
  DeviceTaintRules applied), the classes and the devices other claims hold.
* **Filter** checks allocated claims' node selectors and runs the allocator for the node; an
  allocated claim whose node selector rules a node out is remembered as unavailable.
* **PostFilter** (before DefaultPreemption's) answers Unschedulable: "no new claims to
  deallocate" for a pod without claims (PreFilter left an empty state, as upstream's), else it
  picks an unavailable claim reserved for nobody or only this pod and deallocates it
  ("deallocation of ResourceClaim completed"; the scheduler writes the status after the
  cycle, :meth:`DynamicResources.write_deallocation`), else "still not schedulable".
* **Reserve** remembers the chosen node's allocation as in flight (later cycles count those
  devices as taken); **Unreserve** forgets it.
* **PreBind** writes it: the finalizer, then ``status.allocation`` and the pod in
  ``status.reservedFor`` through ``resourceclaims/status``, before the pod is bound. The
  allocation then stops being in flight; the written claim is *assumed* (upstream's assume
  cache) until the claim informer delivers that version or a newer one, or the claim's
  deletion (:meth:`DynamicResources.claim_changed`, :meth:`DynamicResources.claim_deleted`).
  Devices taken are therefore always those of the claims that exist, as the informer or this
  scheduler last saw them, plus the allocations in flight.

Its queueing hints (which events may let a pod it rejected through) are in ``dra_hints``.

The texts are upstream's (``dynamicresources.go``, ``resourceclaim``); all rejections are
UnschedulableAndUnresolvable, as upstream's ``statusUnschedulable``.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from taintplane.api.nodeaffinity import term_matches
from taintplane.client import ApiError, Client, resource
from taintplane.dra.allocator import AllocationError, Allocator
from taintplane.dra.cel import CelCache
from taintplane.dra.claims import (
    FINALIZER,
    ClaimNameError,
    allocated_devices,
    allocation_of,
    can_be_reserved,
    claim_name,
    is_for_pod,
    is_reserved_for_pod,
    kobj,
)
from taintplane.dra.devices import rule_taints
from taintplane.scheduler.framework import (
    Code,
    CycleState,
    NodeToStatus,
    PostFilterHandle,
    PostFilterResult,
    Status,
)
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names
from taintplane.scheduler.plugins.dra_hints import DraQueueingHints

__all__ = [
    "CANNOT_ALLOCATE",
    "CLAIM_IN_USE",
    "DEALLOCATED",
    "NOTHING_TO_DEALLOCATE",
    "NOT_AVAILABLE_ON_NODE",
    "RESOURCE_CLAIMS",
    "STILL_NOT_SCHEDULABLE",
    "DraCaches",
    "DynamicResources",
]

log = logging.getLogger(__name__)

RESOURCE_CLAIMS = resource("resource.k8s.io", "v1", "resourceclaims")
CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE_ON_NODE = "resourceclaim not available on the node"
CLAIM_IN_USE = "resourceclaim in use"
NOTHING_TO_DEALLOCATE = "no new claims to deallocate"
DEALLOCATED = "deallocation of ResourceClaim completed"
STILL_NOT_SCHEDULABLE = "still not schedulable"
_STATE_KEY = names.DYNAMIC_RESOURCES
_CONFLICT_RETRIES = 5


@dataclass
class DraCaches:
    """The scheduler's informer caches the plugin reads (keys as the informers file them)."""

    claims: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    slices: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    classes: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    rules: Mapping[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class _State:
    #: the pod's claims; empty for a pod without any (PreFilter writes the state regardless)
    claims: list[dict[str, Any]] = field(default_factory=list)
    node_selectors: dict[int, dict[str, Any]] = field(default_factory=dict)
    allocator: Allocator | None = None
    #: node -> one allocation per claim the allocator handles
    node_allocations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: claim index -> the allocation Reserve chose
    allocations: dict[int, dict[str, Any]] = field(default_factory=dict)
    #: indices of allocated claims whose node selector ruled out some node (for PostFilter)
    unavailable: set[int] = field(default_factory=set)
    #: the claim PostFilter deallocated, still to be written
    deallocation: dict[str, Any] | None = None


class DynamicResources(DraQueueingHints):
    name = names.DYNAMIC_RESOURCES

    def __init__(
        self,
        caches: DraCaches | None = None,
        client: Client | None = None,
        *,
        device_taints: bool = True,
        device_taint_rules: bool = True,
    ) -> None:
        self.caches = caches or DraCaches()
        self.client = client
        #: The DRADeviceTaints and DRADeviceTaintRules gates (structured.Features.DeviceTaints;
        #: the ResourceSlice tracker's EnableDeviceTaintRules).
        self.device_taints = device_taints
        self.device_taint_rules = device_taint_rules
        self.cel = CelCache()
        #: claim uid -> claim with the allocation Reserve chose, until PreBind has written it
        #: or Unreserve dropped it (upstream's inFlightAllocations)
        self.in_flight: dict[str, dict[str, Any]] = {}
        #: claim uid -> the claim as PreBind wrote it, until the informer has that version or
        #: a newer one, or the claim is deleted (upstream's assume cache)
        self.assumed: dict[str, dict[str, Any]] = {}

    # ---- the claim informer's events (the assume cache's handlers) -------------------------

    def claim_changed(self, claim: Mapping[str, Any]) -> None:
        """An informer add/update: the assumed version is dropped once the informer's is as
        new (``assumeCache.add``: an older informer object never replaces the assumed one)."""
        uid = (claim.get("metadata") or {}).get("uid", "")
        assumed = self.assumed.get(uid)
        if assumed is not None and _version(claim) >= _version(assumed):
            del self.assumed[uid]

    def claim_updated(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        """An informer update; one that replaced the claim (a relist found another uid under
        the name) is the old one's deletion first."""
        if (old.get("metadata") or {}).get("uid") != (new.get("metadata") or {}).get("uid"):
            self.claim_deleted(old)
        self.claim_changed(new)

    def claim_deleted(self, claim: Mapping[str, Any]) -> None:
        """An informer delete: nothing of the claim is remembered, so its devices are free."""
        uid = (claim.get("metadata") or {}).get("uid", "")
        self.assumed.pop(uid, None)
        self.in_flight.pop(uid, None)

    # ---- PreFilter -------------------------------------------------------------------------

    def _pod_claims(self, pod: dict[str, Any]) -> list[dict[str, Any]]:
        """``foreachPodResourceClaim``; raises :class:`ClaimNameError` with the reason."""
        namespace = (pod.get("metadata") or {}).get("namespace", "")
        out = []
        for pod_claim in (pod.get("spec") or {}).get("resourceClaims") or []:
            name, must_check_owner = claim_name(pod, pod_claim)
            if name is None:
                continue
            claim = self.caches.claims.get(f"{namespace}/{name}")
            if claim is None:
                raise ClaimNameError(f'resourceclaim.resource.k8s.io "{name}" not found')
            if (claim.get("metadata") or {}).get("deletionTimestamp"):
                raise ClaimNameError(f'resourceclaim "{name}" is being deleted')
            if must_check_owner and (problem := is_for_pod(pod, claim)):
                raise ClaimNameError(problem)
            out.append(self._assumed(claim))
        return out

    def _assumed(self, claim: dict[str, Any]) -> dict[str, Any]:
        """The claim as this scheduler last wrote it, until the informer has caught up."""
        uid = (claim.get("metadata") or {}).get("uid", "")
        return self.assumed.get(uid, claim)

    def pre_enqueue(self, pod: PodInfo) -> bool:
        """``PreEnqueue``: a pod whose claims cannot all be resolved yet (a template's claim not
        created, a claim missing, being deleted or not the pod's own) is not tried; the claim
        or pod event that resolves them lets it through."""
        if not (pod.pod.get("spec") or {}).get("resourceClaims"):
            return True
        try:
            self._pod_claims(pod.pod)
        except ClaimNameError:
            return False
        return True

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        # As upstream: an empty state first, so that PostFilter knows the pod has no claims
        # (or was rejected before they were resolved).
        s = _State()
        state.data[_STATE_KEY] = s
        if not (pod.pod.get("spec") or {}).get("resourceClaims"):
            return Status(Code.SKIP)
        try:
            claims = self._pod_claims(pod.pod)
        except ClaimNameError as error:
            return Status.unresolvable(str(error))
        if not claims:
            return Status(Code.SKIP)
        to_allocate = []
        for index, claim in enumerate(claims):
            allocation = allocation_of(claim)
            if allocation is not None:
                if not can_be_reserved(claim) and not is_reserved_for_pod(pod.pod, claim):
                    return Status.unresolvable(CLAIM_IN_USE)
                if isinstance(allocation.get("nodeSelector"), dict):
                    s.node_selectors[index] = allocation["nodeSelector"]
                continue
            uid = (claim.get("metadata") or {}).get("uid", "")
            if uid in self.in_flight:
                return Status.unresolvable(
                    f"resource claim {kobj(claim)} is in the process of being allocated"
                )
            for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
                problem = self._missing_class(request)
                if problem:
                    return Status.unresolvable(problem)
            to_allocate.append(claim)
        if to_allocate:
            every = self._all_claims()
            s.allocator = Allocator(
                to_allocate,
                allocated_devices(every),
                dict(self.caches.classes),
                list(self.caches.slices.values()),
                rule_taints(self.caches.rules.values()) if self.device_taint_rules else [],
                self.cel,
                device_taints=self.device_taints,
            )
        s.claims = claims
        return None

    def _all_claims(self) -> list[dict[str, Any]]:
        """Every claim as the informer or this scheduler last saw it, with the allocations in
        flight in place of their claims (``ListAllAllocatedDevices``)."""
        return [
            self.in_flight.get(uid) or self._assumed(c)
            for c in list(self.caches.claims.values())
            for uid in ((c.get("metadata") or {}).get("uid", ""),)
        ]

    def _missing_class(self, request: Mapping[str, Any]) -> str:
        name = str(request.get("name", ""))
        if isinstance(request.get("exactly"), Mapping):
            wanted = [(name, str(request["exactly"].get("deviceClassName", "")))]
        else:
            wanted = [
                (f"{name}/{sub.get('name', '')}", str(sub.get("deviceClassName", "")))
                for sub in request.get("firstAvailable") or []
            ]
        for request_name, class_name in wanted:
            if class_name not in self.caches.classes:
                return f"request {request_name}: device class {class_name} does not exist"
        return ""

    # ---- Filter ----------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s: _State | None = state.data.get(_STATE_KEY)
        if s is None or not s.claims:
            return None
        unavailable = [
            index
            for index, sel in s.node_selectors.items()
            if not any(
                term_matches(t, node.labels, node.name) for t in sel.get("nodeSelectorTerms") or []
            )
        ]
        if s.allocator is not None:
            try:
                result = s.allocator.allocate(node.name, node.labels)
            except AllocationError as error:
                return Status(Code.ERROR, (str(error),))
            if result is None or len(result) != len(s.allocator.claims):
                return Status.unresolvable(CANNOT_ALLOCATE)
            s.node_allocations[node.name] = result
        if unavailable:
            s.unavailable.update(unavailable)
            return Status.unresolvable(NOT_AVAILABLE_ON_NODE)
        return None

    # ---- PostFilter ------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus, handle: PostFilterHandle
    ) -> tuple[PostFilterResult | None, Status]:
        """Could deallocating one of the pod's claims help? Always Unschedulable, so that
        DefaultPreemption runs next (upstream's ``PostFilter``)."""
        s: _State | None = state.data.get(_STATE_KEY)
        if s is None:
            return None, Status(Code.ERROR, ("not found",))  # CycleState.Read's ErrNotFound
        if not s.claims:
            return None, Status.unschedulable(NOTHING_TO_DEALLOCATE)
        uid = (pod.pod.get("metadata") or {}).get("uid")
        # Upstream takes one at random (a Go map's order); here the lowest index.
        for index in sorted(s.unavailable):
            claim = s.claims[index]
            reserved = (claim.get("status") or {}).get("reservedFor") or []
            if not reserved or (len(reserved) == 1 and reserved[0].get("uid") == uid):
                deallocated: dict[str, Any] = copy.deepcopy(dict(claim))
                status = deallocated.setdefault("status", {})
                for key in ("reservedFor", "allocation", "devices"):
                    status.pop(key, None)
                s.deallocation = deallocated
                return None, Status.unschedulable(DEALLOCATED)
        return None, Status.unschedulable(STILL_NOT_SCHEDULABLE)

    async def write_deallocation(self, state: CycleState) -> Status | None:
        """Write the deallocation PostFilter decided (``resourceclaims/status``), if any.
        Upstream writes it within PostFilter; the cycle here is synchronous, so the scheduler
        calls this after it."""
        s: _State | None = state.data.get(_STATE_KEY)
        if s is None or s.deallocation is None:
            return None
        claim, s.deallocation = s.deallocation, None
        assert self.client is not None, "DynamicResources needs a client to deallocate claims"
        try:
            await self.client.update(RESOURCE_CLAIMS, claim, subresource="status")
        except ApiError as error:
            return Status(Code.ERROR, (str(error),))
        return None

    # ---- Reserve / Unreserve ---------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s: _State | None = state.data.get(_STATE_KEY)
        if s is None or not s.claims or s.allocator is None:
            return None
        allocations = s.node_allocations.get(node_name)
        if allocations is None:
            return Status(Code.ERROR, ("claim allocation not found for node",))
        for claim, allocation in zip(s.allocator.claims, allocations, strict=True):
            index = next(i for i, c in enumerate(s.claims) if c is claim)
            s.allocations[index] = allocation
            pending: dict[str, Any] = copy.deepcopy(dict(claim))
            pending.setdefault("status", {})["allocation"] = allocation
            self.in_flight[pending["metadata"]["uid"]] = pending
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        s: _State | None = state.data.get(_STATE_KEY)
        if s is None:
            return
        for index in s.allocations:
            uid = s.claims[index]["metadata"]["uid"]
            if self.in_flight.pop(uid, None) is not None:
                # AssumedClaimRestore: what PreBind may have assumed is not true any more.
                self.assumed.pop(uid, None)

    # ---- PreBind ---------------------------------------------------------------------------

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s: _State | None = state.data.get(_STATE_KEY)
        if s is None or not s.claims:
            return None
        for index, claim in enumerate(s.claims):
            if is_reserved_for_pod(pod.pod, claim):
                continue
            uid = claim["metadata"].get("uid", "")
            try:
                s.claims[index] = await self._bind_claim(s, index, pod)
            except (ApiError, _BindError) as error:
                self.in_flight.pop(uid, None)
                return Status(Code.ERROR, (str(error),))
            if self.in_flight.pop(uid, None) is not None:
                # Written: the claim as written is assumed until the informer catches up,
                # unless the informer has already delivered it (or its deletion).
                written = s.claims[index]
                current = self.caches.claims.get(kobj(written)) or {}
                if (current.get("metadata") or {}).get("uid") == uid and _version(
                    current
                ) < _version(written):
                    self.assumed[uid] = written
        return None

    async def _bind_claim(self, s: _State, index: int, pod: PodInfo) -> dict[str, Any]:
        assert self.client is not None, "DynamicResources needs a client to bind claims"
        claim = copy.deepcopy(s.claims[index])
        allocation = s.allocations.get(index)
        refresh = False
        for attempt in range(_CONFLICT_RETRIES):
            if refresh:
                claim = await self.client.get(RESOURCE_CLAIMS, *_name_ns(claim))
            refresh = True
            meta = claim["metadata"]
            if meta.get("deletionTimestamp"):
                raise _BindError(f"claim {kobj(claim)} got deleted in the meantime")
            if allocation is not None:
                if allocation_of(claim) is not None:
                    raise _BindError(f"claim {kobj(claim)} got allocated elsewhere in the meantime")
                if FINALIZER not in (meta.get("finalizers") or []):
                    meta["finalizers"] = [*(meta.get("finalizers") or []), FINALIZER]
                    try:
                        claim = await self.client.update(RESOURCE_CLAIMS, claim)
                    except ApiError as error:
                        if error.code == 409 and attempt + 1 < _CONFLICT_RETRIES:
                            continue
                        raise _BindError(
                            f"add finalizer to claim {kobj(claim)}: {error}"
                        ) from error
                claim.setdefault("status", {})["allocation"] = allocation
            status = claim.setdefault("status", {})
            status["reservedFor"] = [
                *(status.get("reservedFor") or []),
                {"resource": "pods", "name": pod.name, "uid": pod.pod["metadata"].get("uid")},
            ]
            try:
                updated = await self.client.update(RESOURCE_CLAIMS, claim, subresource="status")
            except ApiError as error:
                if error.code == 409 and attempt + 1 < _CONFLICT_RETRIES:
                    continue
                what = "allocation and reservation" if allocation is not None else "reservation"
                raise _BindError(f"add {what} to claim {kobj(claim)}: {error}") from error
            return updated
        raise _BindError(f"claim {kobj(claim)}: too many conflicts")  # pragma: no cover


class _BindError(Exception):
    pass


def _version(claim: Mapping[str, Any]) -> int:
    """The resourceVersion as a number (the assume cache's ``GetObjectVersion``)."""
    try:
        return int((claim.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


def _name_ns(claim: Mapping[str, Any]) -> tuple[str, str]:
    meta = claim.get("metadata") or {}
    return str(meta.get("name", "")), str(meta.get("namespace", ""))
