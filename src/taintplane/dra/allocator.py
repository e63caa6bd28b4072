"""Structured allocation: devices for a pod's claims on one node (``structured.Allocator``).

Claims are allocated one after the other, each request (or, for ``firstAvailable``, the first
of its subrequests that works) in order, device by device, backtracking when a later request
cannot be met — the first complete solution wins, as upstream. A device is a candidate for a
request when

* its pool is complete and the slice is for the node,
* the DeviceClass's selectors and then the request's selectors (CEL) accept it,
* no other claim has it (allocated in a claim's status, or picked earlier in this attempt) —
  except for a request with ``adminAccess``, which may share a device with anyone but its own
  claim and is recorded with ``adminAccess: true`` (such results take no device from others),
* every ``NoSchedule`` and ``NoExecute`` taint on it (from the slice or a DeviceTaintRule) is
  tolerated by the request; ``None`` and unknown effects never block, and a ``NoExecute``
  toleration does not cover a ``NoSchedule`` taint,
* it keeps the claim's ``matchAttribute`` constraints (:mod:`taintplane.dra.constraints`).

``ExactCount`` needs ``count`` such devices; ``All`` needs every device the selectors accept
on the node, each free and tolerated, and at least one; one of them that breaks a constraint
makes the claim an error. :class:`AllocationError` is upstream's "something is wrong with the
claim or class" (a CEL error, a missing class); a node that simply has no room yields ``None``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from taintplane.api.device_taints import DeviceTaintEffect, DeviceToleration
from taintplane.dra.cel import CelCache, CelError, device_variable
from taintplane.dra.claims import DeviceID, kobj
from taintplane.dra.config import ChosenRequest, allocation_config
from taintplane.dra.constraints import MatchAttribute
from taintplane.dra.devices import Device, Pool, RuleTaint, gather_pools

__all__ = ["ALLOCATION_RESULTS_MAX_SIZE", "AllocationError", "Allocator", "taint_blocks"]

ALLOCATION_RESULTS_MAX_SIZE = 32
_BLOCKING = (DeviceTaintEffect.NO_SCHEDULE, DeviceTaintEffect.NO_EXECUTE)


class AllocationError(Exception):
    pass


def taint_blocks(device: Device, tolerations: Sequence[DeviceToleration]) -> bool:
    """``taintPreventsAllocation``: a NoSchedule or NoExecute taint no toleration tolerates."""
    return any(
        taint.effective_effect in _BLOCKING and not any(t.tolerates(taint) for t in tolerations)
        for taint in device.taints
    )


@dataclass
class _Exact:
    """One request or subrequest (``requestAccessor``)."""

    request: str  # the claim's request
    subrequest: str  # "" unless one of its firstAvailable
    spec: Mapping[str, Any]
    tolerations: list[DeviceToleration]
    candidates: list[Device] = field(default_factory=list)

    @property
    def name(self) -> str:
        """As in results: "request" or "request/subrequest"."""
        return f"{self.request}/{self.subrequest}" if self.subrequest else self.request

    @property
    def own_name(self) -> str:
        """``requestAccessor.name()``, as upstream's messages name it."""
        return self.subrequest or self.request

    @property
    def admin_access(self) -> bool:
        # Subrequests have no adminAccess field.
        return not self.subrequest and bool(self.spec.get("adminAccess"))

    @property
    def all_devices(self) -> bool:
        return self.spec.get("allocationMode") == "All"

    @property
    def count(self) -> int:
        return int(self.spec.get("count") or 1)


class Allocator:
    """Allocates ``claims`` (none allocated yet) against the slices, classes and rules."""

    def __init__(
        self,
        claims: Sequence[Mapping[str, Any]],
        allocated: set[DeviceID],
        classes: Mapping[str, Mapping[str, Any]],
        slices: Sequence[Mapping[str, Any]],
        rules: Sequence[RuleTaint] = (),
        cel_cache: CelCache | None = None,
        *,
        device_taints: bool = True,
    ) -> None:
        self.claims = list(claims)
        #: The DRADeviceTaints gate: without it taints do not keep devices from claims.
        self.device_taints = device_taints
        self.allocated = allocated
        self.classes = classes
        self.slices = slices
        self.rules = rules
        self.cel = cel_cache or CelCache()

    def allocate(self, node_name: str, labels: Mapping[str, str]) -> list[dict[str, Any]] | None:
        """One allocation result per claim, or ``None`` when the node cannot satisfy them."""
        pools = gather_pools(self.slices, node_name, labels, self.rules)
        run = _Run(self, pools, node_name)
        return run.solve()


class _Run:
    def __init__(self, allocator: Allocator, pools: list[Pool], node_name: str) -> None:
        self.a = allocator
        self.pools = pools
        self.node_name = node_name
        self.usable = [d for p in pools if not p.incomplete for d in p.devices]
        self.requests: list[list[list[_Exact]]] = []
        self.constraints: list[list[MatchAttribute]] = []
        for claim in allocator.claims:
            self.requests.append(self._requests(claim))
            self.constraints.append(_constraints(claim))
        #: The claims (by index) each device is being allocated to in this attempt.
        self.allocating: dict[DeviceID, set[int]] = {}
        self.results: list[list[tuple[_Exact, Device]]] = [[] for _ in allocator.claims]
        #: Per claim and request, the alternative (subrequest) in use.
        self.selected = [[0] * len(requests) for requests in self.requests]

    # ---- preparing -------------------------------------------------------------------------

    def _requests(self, claim: Mapping[str, Any]) -> list[list[_Exact]]:
        out: list[list[_Exact]] = []
        minimum = 0
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
            name = str(request.get("name", ""))
            if isinstance(request.get("exactly"), Mapping):
                alternatives = [self._exact(claim, name, "", request["exactly"])]
            else:
                alternatives = [
                    self._exact(claim, name, str(sub.get("name", "")), sub)
                    for sub in request.get("firstAvailable") or []
                ]
            out.append(alternatives)
            minimum += min((self._needed(x) for x in alternatives), default=0)
        if minimum > ALLOCATION_RESULTS_MAX_SIZE:
            raise AllocationError(
                f"claim {kobj(claim)}: number of requested devices {minimum} exceeds the "
                f"claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
            )
        return out

    def _needed(self, request: _Exact) -> int:
        return len(request.candidates) if request.all_devices else request.count

    def _exact(
        self, claim: Mapping[str, Any], parent: str, sub: str, spec: Mapping[str, Any]
    ) -> _Exact:
        # Upstream's messages name a subrequest by its own name (requestAccessor.name()).
        name = sub or parent
        class_name = str(spec.get("deviceClassName", ""))
        device_class = self.a.classes.get(class_name)
        if device_class is None:
            raise AllocationError(
                f"claim {kobj(claim)}, request {name}: could not retrieve device class "
                f'{class_name}: deviceclass.resource.k8s.io "{class_name}" not found'
            )
        mode = spec.get("allocationMode") or "ExactCount"
        if mode not in ("ExactCount", "All"):
            raise AllocationError(
                f"claim {kobj(claim)}, request {name}: unsupported count mode {mode}"
            )
        tolerations = [DeviceToleration.from_dict(t) for t in spec.get("tolerations") or []]
        request = _Exact(parent, sub, spec, tolerations)
        if mode == "All":
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"claim {kobj(claim)}, request {name}: asks for all devices, but "
                        f"resource pool {pool.pool_id} is currently being updated"
                    )
        class_selectors = (device_class.get("spec") or {}).get("selectors") or []
        request.candidates = [
            device
            for device in self.usable
            if self._selected(device, class_selectors, f"class {class_name}")
            and self._selected(device, spec.get("selectors") or [], f"claim {kobj(claim)}")
        ]
        return request

    def _selected(self, device: Device, selectors: Sequence[Any], owner: str) -> bool:
        for index, selector in enumerate(selectors):
            expression = str(((selector or {}).get("cel") or {}).get("expression", ""))
            compiled = self.a.cel.get(expression)
            if compiled.error:
                raise AllocationError(
                    f"{owner}: selector #{index}: CEL compile error: {compiled.error}"
                )
            try:
                matched = compiled.matches(device_variable(device.spec, device.id[0]))
            except CelError as error:
                raise AllocationError(
                    f"{owner}: selector #{index} on device {device.id_string()}: "
                    f"CEL runtime error: {error}"
                ) from error
            if not matched:
                return False
        return True

    # ---- searching -------------------------------------------------------------------------

    def solve(self) -> list[dict[str, Any]] | None:
        if not self._claim(0, 0):
            return None
        return [self._result(i) for i in range(len(self.a.claims))]

    def _claim(self, ci: int, ri: int) -> bool:
        if ci == len(self.requests):
            return True
        if ri == len(self.requests[ci]):
            return self._claim(ci + 1, 0)
        for index, alternative in enumerate(self.requests[ci][ri]):
            self.selected[ci][ri] = index
            if self._fill(ci, ri, alternative, 0, 0):
                return True
        return False

    def _fill(self, ci: int, ri: int, request: _Exact, picked: int, start: int) -> bool:
        if request.all_devices:
            return self._fill_all(ci, ri, request)
        if picked == request.count:
            return self._claim(ci, ri + 1)
        if len(self.results[ci]) >= ALLOCATION_RESULTS_MAX_SIZE:
            return False
        # Devices are tried in combinations rather than upstream's orderings: what is left to
        # search after picking a set of devices does not depend on their order.
        for index in range(start, len(request.candidates)):
            device = request.candidates[index]
            if not self._take(ci, request, device):
                continue
            if self._fill(ci, ri, request, picked + 1, index + 1):
                return True
            self._release(ci, request, device)
        return False

    def _fill_all(self, ci: int, ri: int, request: _Exact) -> bool:
        taken: list[Device] = []
        for device in request.candidates:
            if not self._take(ci, request, device, must=True):
                break
            taken.append(device)
        else:
            if taken and self._claim(ci, ri + 1):
                return True
        for device in reversed(taken):
            self._release(ci, request, device)
        return False

    def _take(self, ci: int, request: _Exact, device: Device, *, must: bool = False) -> bool:
        """``allocateDevice``: records the device for the request if it is free for it, its
        taints tolerated and the claim's constraints kept; ``must`` (for ``All``) makes a
        broken constraint an error."""
        claims = self.allocating.get(device.id, set())
        if request.admin_access:
            if ci in claims:
                return False
        elif claims or device.id in self.a.allocated:
            return False
        if self.a.device_taints and taint_blocks(device, request.tolerations):
            return False
        added: list[MatchAttribute] = []
        for constraint in self.constraints[ci]:
            if not constraint.add(request.request, request.subrequest, device):
                if must:
                    raise AllocationError(
                        f"claim {kobj(self.a.claims[ci])}, request {request.own_name}: cannot "
                        f"add device {device.id_string()} because a claim constraint would "
                        "not be satisfied"
                    )
                for done in added:
                    done.remove(request.request, request.subrequest)
                return False
            added.append(constraint)
        self.allocating.setdefault(device.id, set()).add(ci)
        self.results[ci].append((request, device))
        return True

    def _release(self, ci: int, request: _Exact, device: Device) -> None:
        for constraint in self.constraints[ci]:
            constraint.remove(request.request, request.subrequest)
        self.allocating[device.id].discard(ci)
        self.results[ci].pop()

    # ---- results ---------------------------------------------------------------------------

    def _result(self, ci: int) -> dict[str, Any]:
        claim = self.a.claims[ci]
        devices: dict[str, Any] = {"results": [_device_result(r, d) for r, d in self.results[ci]]}
        config = self._config(claim, ci)
        if config:
            devices["config"] = config
        result: dict[str, Any] = {"devices": devices}
        selector = self._node_selector([d for _, d in self.results[ci]])
        if selector is not None:
            result["nodeSelector"] = selector
        return result

    def _config(self, claim: Mapping[str, Any], ci: int) -> list[dict[str, Any]]:
        chosen = []
        for ri, alternatives in enumerate(self.requests[ci]):
            request = alternatives[self.selected[ci][ri]]
            device_class = str(request.spec.get("deviceClassName", ""))
            chosen.append(ChosenRequest(request.request, request.name, device_class))
        return allocation_config(claim, chosen, self.a.classes)

    def _node_selector(self, devices: list[Device]) -> dict[str, Any] | None:
        expressions: list[Any] = []
        fields: list[Any] = []
        for device in devices:
            spec = device.slice.get("spec") or {}
            if spec.get("nodeName"):
                return {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {
                                    "key": "metadata.name",
                                    "operator": "In",
                                    "values": [spec["nodeName"]],
                                }
                            ]
                        }
                    ]
                }
            terms = (spec.get("nodeSelector") or {}).get("nodeSelectorTerms") or []
            if len(terms) == 1:
                for item in terms[0].get("matchExpressions") or []:
                    if item not in expressions:
                        expressions.append(item)
                for item in terms[0].get("matchFields") or []:
                    if item not in fields:
                        fields.append(item)
        term: dict[str, Any] = {}
        if expressions:
            term["matchExpressions"] = expressions
        if fields:
            term["matchFields"] = fields
        return {"nodeSelectorTerms": [term]} if term else None


def _constraints(claim: Mapping[str, Any]) -> list[MatchAttribute]:
    out: list[MatchAttribute] = []
    devices = (claim.get("spec") or {}).get("devices") or {}
    for index, constraint in enumerate(devices.get("constraints") or []):
        attribute = (constraint or {}).get("matchAttribute")
        if not attribute:
            raise AllocationError(
                f"claim {kobj(claim)}, constraint #{index}: empty constraint "
                "(unsupported constraint type?)"
            )
        requests = [str(n) for n in (constraint or {}).get("requests") or []]
        out.append(MatchAttribute(requests, str(attribute)))
    return out


def _device_result(request: _Exact, device: Device) -> dict[str, Any]:
    result: dict[str, Any] = {
        "request": request.name,
        "driver": device.id[0],
        "pool": device.id[1],
        "device": device.id[2],
    }
    if request.admin_access:
        result["adminAccess"] = True
    if request.tolerations:
        result["tolerations"] = [t.to_dict() for t in request.tolerations]
    return result
