"""Which device taints keep a claim's request from a node's devices, for ``explain``.

The allocator only answers "cannot allocate all claims" (upstream's message says no more);
this looks at the same devices it would: for each request (or ``firstAvailable`` subrequest)
of a claim still to be allocated, the node's devices in complete pools that the DeviceClass's
and the request's selectors accept and that no other claim holds, and among them the
``NoSchedule``/``NoExecute`` taints the request does not tolerate, each with where it comes
from (the ResourceSlice, or the DeviceTaintRule that adds it). A selector that fails to
compile or evaluate leaves the device out: the allocator reports those as errors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from taintplane.api.decoding import DecodeError
from taintplane.api.device_taints import (
    DeviceTaint,
    DeviceTaintEffect,
    DeviceToleration,
    rule_selects,
)
from taintplane.dra.cel import CelCache, CelError, device_variable
from taintplane.dra.claims import DeviceID, kobj
from taintplane.dra.devices import Device, RuleTaint, gather_pools

__all__ = ["BlockedRequest", "TaintOnDevice", "blocked_requests", "toleration_for"]

_BLOCKING = (DeviceTaintEffect.NO_SCHEDULE, DeviceTaintEffect.NO_EXECUTE)


@dataclass(frozen=True, slots=True)
class TaintOnDevice:
    device: DeviceID
    taint: DeviceTaint
    #: "ResourceSlice <name>" or "DeviceTaintRule <name>"
    source: str


@dataclass
class BlockedRequest:
    """A request of a claim, and the node's matching free devices, some perhaps carrying
    taints it does not tolerate."""

    claim: str  # namespace/name
    request: str  # "request" or "request/subrequest"
    #: free devices the selectors accept (tainted or not)
    candidates: int = 0
    #: of those, the ones no taint blocks
    usable: int = 0
    taints: list[TaintOnDevice] = field(default_factory=list)


def toleration_for(taint: DeviceTaint) -> dict[str, Any]:
    """The narrowest DeviceToleration that tolerates ``taint``."""
    out: dict[str, Any] = {"key": taint.key}
    if taint.value:
        out.update(operator="Equal", value=taint.value)
    else:
        out["operator"] = "Exists"
    out["effect"] = taint.effect
    return out


def _selected(cel: CelCache, device: Device, selectors: Sequence[Any]) -> bool:
    for selector in selectors:
        expression = str(((selector or {}).get("cel") or {}).get("expression", ""))
        compiled = cel.get(expression)
        if compiled.error:
            return False
        try:
            if not compiled.matches(device_variable(device.spec, device.id[0])):
                return False
        except CelError:
            return False
    return True


def _sources(device: Device, rules: Sequence[RuleTaint]) -> list[str]:
    """Each of ``device.taints``'s origin, in the same order (slice taints come first)."""
    slice_name = str((device.slice.get("metadata") or {}).get("name", ""))
    from_rules = [
        f"DeviceTaintRule {r.name}" for r in rules if rule_selects(r.selector, *device.id)
    ]
    own = len(device.taints) - len(from_rules)
    return [f"ResourceSlice {slice_name}"] * own + from_rules


def _alternatives(request: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    name = str(request.get("name", ""))
    if isinstance(request.get("exactly"), Mapping):
        return [(name, request["exactly"])]
    return [
        (f"{name}/{sub.get('name', '')}", sub)
        for sub in request.get("firstAvailable") or []
        if isinstance(sub, Mapping)
    ]


def blocked_requests(
    claims: Sequence[Mapping[str, Any]],
    allocated: set[DeviceID],
    classes: Mapping[str, Mapping[str, Any]],
    slices: Sequence[Mapping[str, Any]],
    rules: Sequence[RuleTaint],
    node_name: str,
    labels: Mapping[str, str],
    cel: CelCache | None = None,
) -> list[BlockedRequest]:
    """Every request of ``claims`` (to be allocated) with the node's devices for it: how many
    match and are free, how many of those no taint blocks, and the blocking taints."""
    cel = cel or CelCache()
    pools = gather_pools(slices, node_name, labels, rules)
    devices = [d for p in pools if not p.incomplete for d in p.devices]
    out: list[BlockedRequest] = []
    for claim in claims:
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
            for name, spec in _alternatives(request):
                device_class = classes.get(str(spec.get("deviceClassName", "")))
                if device_class is None:
                    continue
                try:
                    tolerations = [
                        DeviceToleration.from_dict(t) for t in spec.get("tolerations") or []
                    ]
                except DecodeError:
                    continue
                class_selectors = (device_class.get("spec") or {}).get("selectors") or []
                blocked = BlockedRequest(kobj(claim), name)
                for device in devices:
                    if device.id in allocated:
                        continue
                    if not _selected(cel, device, class_selectors):
                        continue
                    if not _selected(cel, device, spec.get("selectors") or []):
                        continue
                    blocked.candidates += 1
                    found = [
                        TaintOnDevice(device.id, taint, source)
                        for taint, source in zip(
                            device.taints, _sources(device, rules), strict=True
                        )
                        if taint.effective_effect in _BLOCKING
                        and not any(t.tolerates(taint) for t in tolerations)
                    ]
                    if found:
                        blocked.taints += found
                    else:
                        blocked.usable += 1
                out.append(blocked)
    return out
