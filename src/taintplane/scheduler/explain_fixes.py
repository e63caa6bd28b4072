"""Every plugin that rejects a node, and a fix only when it really makes the node feasible.

The scheduler stops at a node's first failing filter; ``explain`` runs all of them, so that a
node rejected for a taint *and* a nodeSelector is not offered a toleration that would not
help. Tolerations are the only fixes offered: pod tolerations for node taints and for the
unschedulable taint, and DeviceTolerations on a claim's request (in its ResourceClaimTemplate
when the claim was generated from one) for device taints. A fix is offered only when the pod,
with every toleration listed for the node added, passes PreFilter and every filter there.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from taintplane.api.nodeaffinity import term_matches
from taintplane.dra.claims import (
    POD_CLAIM_NAME_ANNOTATION,
    allocated_devices,
    allocation_of,
    devices_of,
    kobj,
)
from taintplane.dra.devices import rule_taints
from taintplane.dra.taint_report import BlockedRequest, blocked_requests, toleration_for
from taintplane.scheduler.framework import Code, CycleState, Status
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names
from taintplane.scheduler.plugins.pod_topology_spread import ALL_NODES_KEY
from taintplane.scheduler.scheduler import Scheduler
from taintplane.scheduler.table import TABLE_KEY

__all__ = ["Fix", "device_detail", "failures", "verified_fix"]

#: Plugins whose rejection a toleration can answer.
_TOLERABLE = {names.TAINT_TOLERATION, names.NODE_UNSCHEDULABLE, names.DYNAMIC_RESOURCES}


@dataclass
class Fix:
    pod_tolerations: list[dict[str, Any]] = field(default_factory=list)
    #: {"claim", "request", "toleration"} and "template" for a generated claim
    device_tolerations: list[dict[str, Any]] = field(default_factory=list)
    #: plugins that still reject the node with these tolerations (empty: the fix works)
    remaining: list[Status] = field(default_factory=list)


def failures(view: Scheduler, state: CycleState, pod: PodInfo, node: NodeInfo) -> list[Status]:
    """Every filter plugin's rejection of the node, in profile order."""
    out = []
    for plugin in view.framework.filters:
        if plugin.name in state.skip_filter:
            continue
        status = plugin.filter(state, pod, node)
        if status is not None and status.code is not Code.SUCCESS:
            out.append(status.with_plugin(plugin.name))
    return out


def _claims_to_allocate(state: CycleState) -> list[dict[str, Any]]:
    dra = state.data.get(names.DYNAMIC_RESOURCES)
    allocator = getattr(dra, "allocator", None)
    return list(allocator.claims) if allocator is not None else []


def _blocked(view: Scheduler, state: CycleState, node: NodeInfo) -> list[BlockedRequest]:
    claims = _claims_to_allocate(state)
    if not claims:
        return []
    caches = view.dra_caches
    rules = rule_taints(caches.rules.values()) if view.dra.device_taint_rules else []
    return blocked_requests(
        claims,
        allocated_devices(caches.claims.values()),
        caches.classes,
        list(caches.slices.values()),
        rules,
        node.name,
        node.labels,
        view.dra.cel,
    )


def device_detail(view: Scheduler, state: CycleState, node: NodeInfo) -> str:
    """For each request of the pod's claims to allocate: the node's matching free devices,
    and the device taints that keep them from it (each with its devices)."""
    parts = _allocated_elsewhere(state, node)
    for request in _blocked(view, state, node):
        text = (
            f"claim {request.claim} request {request.request}: {request.candidates} matching "
            f"free device(s)"
        )
        if request.taints:
            on: dict[str, list[str]] = {}
            for found in request.taints:
                on.setdefault(f"{found.taint.to_string()} ({found.source})", []).append(
                    "/".join(found.device)
                )
            taints = "; ".join(f"{taint} on {', '.join(ids)}" for taint, ids in on.items())
            text += f", {request.usable} untainted; untolerated device taints: {taints}"
        parts.append(text)
    return "; ".join(parts)


def _allocated_elsewhere(state: CycleState, node: NodeInfo) -> list[str]:
    """The pod's allocated claims whose devices this node cannot reach."""
    dra = state.data.get(names.DYNAMIC_RESOURCES)
    claims: list[dict[str, Any]] = list(getattr(dra, "claims", []) or [])
    selectors: dict[int, dict[str, Any]] = dict(getattr(dra, "node_selectors", {}) or {})
    out = []
    for index, selector in sorted(selectors.items()):
        terms = selector.get("nodeSelectorTerms") or []
        if any(term_matches(t, node.labels, node.name) for t in terms):
            continue
        claim = claims[index]
        held = ", ".join("/".join(d) for d in devices_of(allocation_of(claim) or {}))
        out.append(f"claim {kobj(claim)} is allocated ({held}) for other nodes")
    return out


def _templates(pod: Mapping[str, Any]) -> dict[str, str]:
    """Pod claim name -> ResourceClaimTemplate name."""
    return {
        str(c.get("name")): str(c["resourceClaimTemplateName"])
        for c in (pod.get("spec") or {}).get("resourceClaims") or []
        if c.get("resourceClaimTemplateName")
    }


def _add_device_toleration(claim: dict[str, Any], request: str, toleration: Any) -> None:
    parent, _, sub = request.partition("/")
    for item in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
        if item.get("name") != parent:
            continue
        if sub:
            targets = [s for s in item.get("firstAvailable") or [] if s.get("name") == sub]
        else:
            targets = [item["exactly"]] if isinstance(item.get("exactly"), dict) else []
        for target in targets:
            target["tolerations"] = [*(target.get("tolerations") or []), toleration]


def verified_fix(
    view: Scheduler,
    pod: dict[str, Any],
    state: CycleState,
    node: NodeInfo,
    found: Sequence[Status],
    pod_tolerations: list[dict[str, Any]],
) -> Fix | None:
    """The tolerations that together make the node feasible; ``remaining`` is not empty when
    they would not be enough (a rejection no toleration answers, say); ``None`` when no
    rejection of the node is a taint's."""
    if not any(s.plugin in _TOLERABLE for s in found):
        return None
    untolerable = [s for s in found if s.plugin not in _TOLERABLE]
    if untolerable:
        return Fix(remaining=untolerable)  # no toleration answers these
    entries: list[dict[str, Any]] = []
    if any(s.plugin == names.DYNAMIC_RESOURCES for s in found):
        blocked = [r for r in _blocked(view, state, node) if r.taints]
        if not blocked:
            return None  # no device taint is in the way: tolerations cannot help
        templates = _templates(pod)
        for request in blocked:
            claim = view.dra_caches.claims[request.claim]
            annotations = (claim.get("metadata") or {}).get("annotations") or {}
            template = templates.get(str(annotations.get(POD_CLAIM_NAME_ANNOTATION)))
            for taint in request.taints:
                entry = {
                    "claim": request.claim,
                    "request": request.request,
                    "toleration": toleration_for(taint.taint),
                }
                if template:
                    entry["template"] = f"{request.claim.split('/')[0]}/{template}"
                if entry not in entries:
                    entries.append(entry)
    fix = Fix(pod_tolerations=list(pod_tolerations), device_tolerations=entries)
    fix.remaining = _try_fix(view, pod, node, fix)
    if not fix.remaining:
        # The fewest device tolerations that still do it: one untainted device may be all a
        # request needs, and it need not be every tainted one.
        for entry in list(entries):
            fewer = Fix(fix.pod_tolerations, [e for e in fix.device_tolerations if e != entry])
            if not _try_fix(view, pod, node, fewer):
                fix.device_tolerations = fewer.device_tolerations
    return fix


def _try_fix(view: Scheduler, pod: dict[str, Any], node: NodeInfo, fix: Fix) -> list[Status]:
    claims = dict(view.dra_caches.claims)
    for entry in fix.device_tolerations:
        key = entry["claim"]
        if claims[key] is view.dra_caches.claims[key]:
            claims[key] = copy.deepcopy(claims[key])
        _add_device_toleration(claims[key], entry["request"], entry["toleration"])
    tolerated = copy.deepcopy(pod)
    spec = tolerated.setdefault("spec", {})
    spec["tolerations"] = [*(spec.get("tolerations") or []), *fix.pod_tolerations]
    return _try(view, tolerated, claims, node)


def _try(
    view: Scheduler, pod: dict[str, Any], claims: dict[str, dict[str, Any]], node: NodeInfo
) -> list[Status]:
    """PreFilter and every filter of the pod on the node, with ``claims`` as the claims."""
    saved = view.dra_caches.claims
    view.dra_caches.claims = claims
    try:
        nodes = view.placement.node_order()
        state = CycleState()
        state.data[ALL_NODES_KEY] = nodes
        state.data[TABLE_KEY] = view.placement.table()
        info = PodInfo.of(pod)
        rejected = view.framework.run_pre_filter(state, info, nodes)
        if rejected is not None:
            return [rejected]
        if state.node_names is not None and node.name not in state.node_names:
            return [Status.unresolvable(state.narrowed_message())]
        return failures(view, state, info, node)
    finally:
        view.dra_caches.claims = saved
