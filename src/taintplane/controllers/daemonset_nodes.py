"""Per-node results of a DaemonSet's sync, kept between syncs (issue 16).

Upstream's sync visits every node on every pod event (``podsShouldBeOnNode``, the rolling
update's pass, ``updateDaemonSetStatus``): ~2 syncs a pod, so O(nodes²) for a rollout. Here a
DaemonSet keeps, for every node that runs or should run one of its pods, what each of those
passes concluded about the node, and the sums over nodes. Only nodes marked *dirty* are looked
at again: a node whose object changed (beyond heartbeats), or whose daemon pods of this
DaemonSet changed, since the last sync. Everything else a node's result depends on is checked
each sync: the DaemonSet's uid, generation (template, strategy, ``minReadySeconds``), current
revision hash and template-generation annotation — any change starts over. Time matters only
while a pod is Ready but not yet available (``minReadySeconds``): such nodes are *volatile*
and looked at every sync, as are nodes with a failed or succeeded pod, whose handling records
events and backs off as it always did.

The sums give the status; the rollout's lists come from the nodes in each category, sorted by
name as the full pass visits them (``daemonset_rollout.Plan`` is that full pass, and the
reference the tests check these sums against). Creates and deletes keep the node cache's
order, as the full pass produced them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from taintplane.controllers import daemonset_rollout as rollout
from taintplane.controllers import daemonset_util as util

__all__ = ["COUNTS", "NodeResult", "NodeResults", "evaluate"]

Pod = dict[str, Any]
#: The status counts a node adds to (numberUnavailable follows from two of them).
COUNTS = (
    "desiredNumberScheduled",
    "currentNumberScheduled",
    "numberMisscheduled",
    "numberReady",
    "updatedNumberScheduled",
    "numberAvailable",
)
ZERO = (0, 0, 0, 0, 0, 0)
#: (create on the node?, pods to delete) — ``podsShouldBeOnNode`` without side effects.
Manage = tuple[bool, tuple[str, ...]]
ManageFn = Callable[[str, bool, bool, list[Pod]], Manage]


def creation_order(pod: Pod) -> tuple[bool, str, str]:
    """``podByCreationTimestampAndPhase``: bound pods first, then oldest, then by name."""
    meta = pod["metadata"]
    bound = bool((pod.get("spec") or {}).get("nodeName"))
    return (not bound, str(meta.get("creationTimestamp", "")), str(meta["name"]))


def _phase(pod: Pod) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


@dataclass(slots=True)
class NodeResult:
    exists: bool
    should_run: bool
    #: The manage pass's answer; None: it has side effects (a failed or succeeded pod), so
    #: the sync asks ``podsShouldBeOnNode`` itself each time.
    manage: Manage | None
    counts: tuple[int, ...]
    #: Whether the rolling update's pass visits the node (it should run a pod, or has one).
    planned: bool
    # Without surge: nodes short of an available pod, an old pod to replace now, a candidate.
    ws_unavailable: int
    ws_replace: str | None
    ws_candidate: str | None
    # With surge: surging, available, create here, delete, unwanted old pod, candidate node.
    sg_surging: int
    sg_available: int
    sg_create: bool
    sg_delete: str | None
    sg_unwanted: str | None
    sg_candidate: bool
    volatile: bool


def evaluate(
    name: str,
    node: dict[str, Any] | None,
    pods: list[Pod],
    ds: dict[str, Any],
    hash_: str,
    now: datetime,
    should_run: Callable[[dict[str, Any]], tuple[bool, bool]],
    manage: ManageFn,
) -> NodeResult:
    """What each pass of a full sync concludes about one node (``pods``: this DaemonSet's
    pods aimed at it, in the informer's order)."""
    min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
    run, keep = should_run(node) if node is not None else (False, False)
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    impure = (
        node is not None
        and keep
        and bool(pods)
        and not (run and not pods)
        and any(_phase(p) in ("Failed", "Succeeded") for p in live)
    )
    managed: Manage | None
    if impure:
        managed = None
    elif node is not None:
        managed = manage(name, run, keep, pods)
    else:
        # Unbound pods aimed at a node that is gone: never scheduled, so PodGC cannot see them.
        managed = (
            False,
            tuple(p["metadata"]["name"] for p in pods if not p["spec"].get("nodeName")),
        )
    counts = ZERO
    if node is not None:
        if not run:
            counts = (0, 0, int(bool(pods)), 0, 0, 0)
        elif not pods:
            counts = (1, 0, 0, 0, 0, 0)
        else:
            first = min(pods, key=creation_order)
            ready = util.is_pod_ready(first)
            available = ready and util.is_pod_available(first, min_ready, now)
            updated = util.is_pod_updated(first, hash_, ds)
            counts = (1, 1, 0, int(ready), int(updated), int(available))
    volatile = min_ready > 0 and any(
        util.is_pod_ready(p) and not util.is_pod_available(p, min_ready, now) for p in pods
    )
    result = NodeResult(
        exists=node is not None,
        should_run=node is not None and run,
        manage=managed,
        counts=counts,
        planned=(node is not None and run) or bool(pods),
        ws_unavailable=0,
        ws_replace=None,
        ws_candidate=None,
        sg_surging=0,
        sg_available=0,
        sg_create=False,
        sg_delete=None,
        sg_unwanted=None,
        sg_candidate=False,
        volatile=volatile or impure,
    )
    if result.planned:
        _classify(result, pods, ds, hash_, min_ready, now)
    return result


def _classify(
    result: NodeResult,
    pods: list[Pod],
    ds: dict[str, Any],
    hash_: str,
    min_ready: int,
    now: datetime,
) -> None:
    """One node's part of ``Plan.without_surge`` and ``Plan.with_surge``."""

    def available(pod: Pod) -> bool:
        return util.is_pod_available(pod, min_ready, now)

    new, old, ok = rollout.find_updated_pods(pods, hash_, ds)
    # Without surge.
    if not ok or (new is None) == (old is None):
        result.ws_unavailable = 1
    elif new is not None:
        result.ws_unavailable = int(not available(new))
    elif old is not None and not available(old):
        result.ws_replace = old["metadata"]["name"]
        result.ws_unavailable = 1
    elif old is not None:
        result.ws_candidate = old["metadata"]["name"]
    # With surge.
    if not ok:
        result.sg_surging = 1
        return
    counted = old if old is not None else new
    result.sg_available = int(counted is not None and available(counted))
    if old is None:
        return
    if new is None:
        if not available(old):
            if result.should_run:
                result.sg_create = True
            else:
                result.sg_delete = old["metadata"]["name"]
        elif not result.should_run:
            result.sg_unwanted = old["metadata"]["name"]
        else:
            result.sg_candidate = True
    elif not available(new):
        result.sg_surging = 1
    else:
        result.sg_delete = old["metadata"]["name"]


@dataclass
class NodeResults:
    """One DaemonSet's kept per-node results and their sums."""

    #: (uid, generation, hash, template-generation annotation) the results were made for.
    basis: tuple[Any, ...]
    results: dict[str, NodeResult] = field(default_factory=dict)
    dirty: set[str] = field(default_factory=set)
    counts: list[int] = field(default_factory=lambda: list(ZERO))
    ws_unavailable: int = 0
    sg_surging: int = 0
    sg_available: int = 0
    existing: int = 0
    #: The nodes in each category (sorted by name where a pass needs its order).
    acting: set[str] = field(default_factory=set)
    volatile: set[str] = field(default_factory=set)
    ws_replace: set[str] = field(default_factory=set)
    ws_candidate: set[str] = field(default_factory=set)
    sg_create: set[str] = field(default_factory=set)
    sg_delete: set[str] = field(default_factory=set)
    sg_unwanted: set[str] = field(default_factory=set)
    sg_candidate: set[str] = field(default_factory=set)

    def put(self, name: str, result: NodeResult | None) -> None:
        """Replace a node's result (None: the node neither exists nor has pods)."""
        old = self.results.pop(name, None)
        if old is not None:
            self._add(name, old, -1)
        if result is not None:
            self.results[name] = result
            self._add(name, result, 1)

    def _add(self, name: str, result: NodeResult, sign: int) -> None:
        for at, value in enumerate(result.counts):
            self.counts[at] += sign * value
        self.ws_unavailable += sign * result.ws_unavailable
        self.sg_surging += sign * result.sg_surging
        self.sg_available += sign * result.sg_available
        self.existing += sign * result.exists
        member = {
            "acting": result.manage is None or bool(result.manage[0] or result.manage[1]),
            "volatile": result.volatile,
            "ws_replace": result.ws_replace is not None,
            "ws_candidate": result.ws_candidate is not None,
            "sg_create": result.sg_create,
            "sg_delete": result.sg_delete is not None,
            "sg_unwanted": result.sg_unwanted is not None,
            "sg_candidate": result.sg_candidate,
        }
        for category, is_member in member.items():
            if is_member:
                found: set[str] = getattr(self, category)
                if sign > 0:
                    found.add(name)
                else:
                    found.discard(name)

    def without_surge(self, max_unavailable: int) -> list[str]:
        """``Plan.without_surge`` from the sums."""
        replace = [self._pod(n, "ws_replace") for n in sorted(self.ws_replace)]
        room = max(0, min(max_unavailable - self.ws_unavailable, len(self.ws_candidate)))
        if not room:
            return replace
        return replace + [self._pod(n, "ws_candidate") for n in sorted(self.ws_candidate)[:room]]

    def with_surge(self, max_surge: int, desired: int) -> rollout.SurgePlan:
        """``Plan.with_surge`` from the sums."""
        plan = rollout.SurgePlan()
        plan.create = sorted(self.sg_create)
        plan.delete = [self._pod(n, "sg_delete") for n in sorted(self.sg_delete)]
        unwanted = max(0, self.sg_available - desired)
        if unwanted:
            plan.delete += [self._pod(n, "sg_unwanted") for n in sorted(self.sg_unwanted)][
                :unwanted
            ]
        room = max(0, max_surge - self.sg_surging)
        if room:
            plan.create += sorted(self.sg_candidate)[:room]
        return plan

    def _pod(self, node: str, attribute: str) -> str:
        return str(getattr(self.results[node], attribute))
