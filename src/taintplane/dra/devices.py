"""The pools and devices a node can use, with their taints (``structured.GatherPools``).

A slice is for a node when its ``nodeName`` is the node, ``allNodes`` is set, or its
``nodeSelector`` matches the node. A pool (driver + pool name) counts only its slices of the
newest generation; it is *incomplete* while fewer of them are published than
``resourceSliceCount`` says. A device's taints are its slice's plus those of every
DeviceTaintRule whose selector picks it (the empty selector picks every device, no selector
none), as the scheduler's ``ListWithDeviceTaintRules`` patches them in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from taintplane.api.decoding import DecodeError
from taintplane.api.device_taints import (
    DeviceTaint,
    DeviceTaintSelector,
    parse_device_taints,
    rule_selects,
)
from taintplane.api.field import Path
from taintplane.api.nodeaffinity import term_matches
from taintplane.dra.claims import DeviceID

__all__ = ["Device", "Pool", "RuleTaint", "device_taints", "gather_pools", "rule_taints"]


@dataclass(frozen=True, slots=True)
class RuleTaint:
    """One DeviceTaintRule: its selector and its taint."""

    name: str
    selector: DeviceTaintSelector | None
    taint: DeviceTaint


@dataclass(slots=True)
class Device:
    id: DeviceID
    spec: Mapping[str, Any]
    slice: Mapping[str, Any]
    taints: list[DeviceTaint]

    @property
    def name(self) -> str:
        return self.id[2]

    def id_string(self) -> str:
        return "/".join(self.id)


@dataclass(slots=True)
class Pool:
    driver: str
    name: str
    generation: int = 0
    slice_count: int = 0
    incomplete: bool = False
    devices: list[Device] = field(default_factory=list)
    slices: list[Mapping[str, Any]] = field(default_factory=list)

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.name}"


def rule_taints(rules: Iterable[Mapping[str, Any]]) -> list[RuleTaint]:
    """The taints of DeviceTaintRules (rules that do not decode are ignored)."""
    out: list[RuleTaint] = []
    for rule in rules:
        spec = rule.get("spec") or {}
        try:
            taint = DeviceTaint.from_dict(spec.get("taint") or {}, Path.root("spec", "taint"))
            selector = DeviceTaintSelector.from_dict(spec.get("deviceSelector"))
        except DecodeError:
            continue
        out.append(RuleTaint(str((rule.get("metadata") or {}).get("name", "")), selector, taint))
    return out


def device_taints(
    device: Mapping[str, Any], device_id: DeviceID, rules: Sequence[RuleTaint]
) -> list[DeviceTaint]:
    """The device's own taints followed by those of the rules that select it."""
    try:
        taints = parse_device_taints(device.get("taints"), Path.root("taints"))
    except DecodeError:
        taints = []
    taints += [r.taint for r in rules if rule_selects(r.selector, *device_id)]
    return taints


def slice_targets_node(spec: Mapping[str, Any], node_name: str, labels: Mapping[str, str]) -> bool:
    if spec.get("nodeName"):
        return bool(spec["nodeName"] == node_name)
    if spec.get("allNodes"):
        return True
    selector = spec.get("nodeSelector")
    if isinstance(selector, Mapping):
        terms = selector.get("nodeSelectorTerms") or []
        return any(term_matches(term, labels, node_name) for term in terms)
    return False


def gather_pools(
    slices: Iterable[Mapping[str, Any]],
    node_name: str,
    labels: Mapping[str, str],
    rules: Sequence[RuleTaint] = (),
) -> list[Pool]:
    """The node's pools, in (driver, pool) order, with their devices in slice order."""
    pools: dict[tuple[str, str], Pool] = {}
    for item in slices:
        spec = item.get("spec") or {}
        if not slice_targets_node(spec, node_name, labels):
            continue
        pool_spec = spec.get("pool") or {}
        key = (str(spec.get("driver", "")), str(pool_spec.get("name", "")))
        generation = int(pool_spec.get("generation") or 0)
        pool = pools.setdefault(key, Pool(*key, generation=generation))
        if generation > pool.generation:
            pool.generation, pool.slices = generation, []
        if generation == pool.generation:
            pool.slices.append(item)
            pool.slice_count = int(pool_spec.get("resourceSliceCount") or 0)
    for pool in pools.values():
        pool.incomplete = len(pool.slices) < pool.slice_count
        pool.slices.sort(key=lambda s: str((s.get("metadata") or {}).get("name", "")))
        for item in pool.slices:
            for device in (item.get("spec") or {}).get("devices") or []:
                device_id = (pool.driver, pool.name, str(device.get("name", "")))
                pool.devices.append(
                    Device(device_id, device, item, device_taints(device, device_id, rules))
                )
    return [pools[key] for key in sorted(pools)]
