"""The change a ``what-if`` asks about: what ``kubectl taint`` would do to the snapshot's nodes.

Kept apart from the run so that the question is checked (as kubectl checks it against the
server) before any copy of the cluster starts, and so that ``simulate`` steps can make the same
change to a running cluster. It also answers what the change implies before it runs: how long to
watch (:func:`default_window`) and which NoExecute countdowns the copy cannot time as the
cluster did (:func:`restarted_countdowns`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from taintplane.api.decoding import format_time
from taintplane.api.selectors import LabelSelector
from taintplane.api.taint_spec import TaintChanges, TaintSpecError, apply_taint_changes
from taintplane.api.taints import Taint, TaintEffect
from taintplane.api.tolerations import (
    Toleration,
    matching_tolerations,
    min_toleration_seconds,
)
from taintplane.client import Client
from taintplane.sim.recorder import NODES, node_taints

__all__ = [
    "NODE_RESOURCE_NAMES",
    "TaintPlan",
    "WhatIfError",
    "apply_plan",
    "default_window",
    "eviction_delay",
    "resolve_plan",
    "restarted_countdowns",
    "running_on",
]


#: Time left after the last eviction the taint causes, for replacements to be scheduled and start.
SETTLE_SECONDS = 300.0
#: The kubelet's grace period when a pod sets none.
DEFAULT_GRACE_SECONDS = 30

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


def _nodes_by_name(objects: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o.get("kind") == "Node"}


def _tolerations(pod: dict[str, Any]) -> list[Toleration]:
    return [Toleration.from_dict(t) for t in (pod.get("spec") or {}).get("tolerations") or []]


def running_on(pod: dict[str, Any], nodes: Sequence[str]) -> bool:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    return (
        spec.get("nodeName") in nodes
        and not pod["metadata"].get("deletionTimestamp")
        and status.get("phase") not in ("Succeeded", "Failed")
    )


def eviction_delay(pod: dict[str, Any], taints: Sequence[Taint]) -> int | None:
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
    allow_no_match: bool = False,
) -> TaintPlan:
    """The nodes ``kubectl taint RESOURCES… CHANGES…`` would change in this snapshot, in the
    order kubectl visits them (the names as given; for ``-l`` and ``--all``, the order the
    server lists them in: by name), checked as kubectl checks them against the server (missing
    nodes, taints already there). A selector matching no node makes kubectl change nothing and
    succeed: with ``allow_no_match`` the plan is then empty rather than an error."""
    kind, names = resources[0], list(resources[1:])
    if kind.partition(".")[0] not in NODE_RESOURCE_NAMES:
        raise WhatIfError(f"invalid resource type {kind}, only node types are supported")
    nodes = _nodes_by_name(objects)
    if all_nodes or selector is not None:
        chosen = sorted(
            name
            for name, node in nodes.items()
            if selector is None or selector.matches(node["metadata"].get("labels"))
        )
        if not chosen and not allow_no_match:
            raise WhatIfError("no nodes found to taint")
    else:
        missing = [name for name in names if name not in nodes]
        if missing:
            raise WhatIfError(f'nodes "{missing[0]}" not found')
        chosen = list(dict.fromkeys(names))
    for name in chosen:
        try:
            apply_taint_changes(name, node_taints(nodes[name]), changes, overwrite=overwrite)
        except TaintSpecError as error:
            raise WhatIfError(error.message) from error
    return TaintPlan(tuple(chosen), changes, overwrite)


def default_window(objects: Sequence[dict[str, Any]], plan: TaintPlan) -> float:
    """Long enough for every eviction the taint causes, the evicted pods' grace periods, and
    :data:`SETTLE_SECONDS` more for their replacements to be scheduled and start."""
    nodes = _nodes_by_name(objects)
    longest = 0.0
    for obj in objects:
        if obj.get("kind") != "Pod" or not running_on(obj, plan.nodes):
            continue
        node = nodes[obj["spec"]["nodeName"]]
        _, taints = apply_taint_changes(
            node["metadata"]["name"], node_taints(node), plan.changes, overwrite=True
        )
        delay = eviction_delay(obj, taints)
        if delay is None:
            continue
        grace = (obj.get("spec") or {}).get("terminationGracePeriodSeconds")
        grace = DEFAULT_GRACE_SECONDS if grace is None else grace
        longest = max(longest, float(delay + grace))
    return longest + SETTLE_SECONDS


async def apply_plan(
    client: Client, plan: TaintPlan, between: Callable[[], Awaitable[None]] | None = None
) -> None:
    """The taint changes, as ``kubectl taint`` makes them: one node after another (its
    ``RunTaint`` visits them in turn, one request each), a node's whole new taint list.
    ``between`` runs after each node, so the cluster can react before the next one changes
    (a replacement may land on a node tainted a moment later, as on a real cluster)."""
    for name in plan.nodes:
        node = await client.get(NODES, name)
        _, taints = apply_taint_changes(
            name, node_taints(node), plan.changes, overwrite=plan.overwrite
        )
        node.setdefault("spec", {})["taints"] = [t.to_dict() for t in taints]
        await client.update(NODES, node)
        if between is not None:
            await between()


def restarted_countdowns(objects: Sequence[dict[str, Any]], plan: TaintPlan) -> list[str]:
    """A warning for each NoExecute taint a changed node already has and keeps: the copy's
    taint eviction controller first sees it when the copy starts and times tolerations from
    then (as upstream's does after a restart), so its evictions may come earlier for real."""
    nodes = _nodes_by_name(objects)
    warnings = []
    for name in plan.nodes:
        before = node_taints(nodes[name])
        _, after = apply_taint_changes(name, before, plan.changes, overwrite=True)
        kept = {(t.key, t.value, t.effect) for t in after}
        for taint in before:
            if taint.effect != TaintEffect.NO_EXECUTE:
                continue
            if (taint.key, taint.value, taint.effect) not in kept:
                continue
            since = f" (added {format_time(taint.time_added)})" if taint.time_added else ""
            warnings.append(
                f"node {name} already has {taint.to_string()}{since}: the copy times "
                "tolerations of it from the start of the simulation, so evictions it causes "
                "may come earlier than shown"
            )
    return warnings
