"""DefaultPreemption's PostFilter: could evicting lower-priority pods make room?

For each node the filters rejected, preemption is not helpful when the rejection was
UnschedulableAndUnresolvable (a taint, an affinity…, or a PreFilter's rejection, which every
node reads). Elsewhere it removes, in thought, the
pods of lower priority, runs the filters again and gives back every pod it can. When no node
would then fit, the message is another ``0/N nodes are available`` over those per-node
results, prefixed ``preemption:``. When one does, the scheduler evicts that node's victims
and nominates the node for the pod. PodDisruptionBudgets are weighed as upstream does: victims
whose eviction would take a budget below zero allowed disruptions are reprieved first, and the
node whose victims violate the fewest budgets is preferred.

A pod already nominated may preempt again only if its nominated node now rejects it as
UnschedulableAndUnresolvable, or no lower-priority pod there is terminating because the
scheduler preempted it (a user's delete does not hold it back). When no node has victims to
offer, the pod's nominatedNodeName is cleared.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from taintplane.api.decoding import parse_timestamp
from taintplane.api.selectors import SelectorError, label_selector_from_dict
from taintplane.scheduler.diagnosis import Diagnosis, fit_error_message
from taintplane.scheduler.framework import (
    Code,
    CycleState,
    FilterRun,
    NodeToStatus,
    PostFilterHandle,
    PostFilterResult,
    Status,
)
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names

__all__ = [
    "NOT_HELPFUL",
    "NO_VICTIMS",
    "DefaultPreemption",
    "PreemptionResult",
    "evaluate_preemption",
]

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
#: ``math.MaxInt32 + 1``: added to each victim's priority before summing, so that more
#: victims of a negative priority never add up to less than fewer of them.
PRIORITY_OFFSET = 2**31


class PreemptionResult:
    """Preempt's outcome: a node and its victims, or why not. ``clear_nomination``: no
    candidate was found, and upstream's NewPostFilterResultWithNominatedNode("") clears the
    pod's nominatedNodeName (a pod refused as not eligible keeps it)."""

    def __init__(
        self,
        message: str,
        node: str = "",
        victims: Sequence[PodInfo] = (),
        *,
        clear_nomination: bool = False,
    ) -> None:
        self.message = message
        self.node = node
        self.victims = list(victims)
        self.clear_nomination = clear_nomination


class DefaultPreemption:
    """The PostFilter plugin: Success with the nominated node and its victims, or
    Unschedulable with why preemption cannot help."""

    name = names.DEFAULT_PREEMPTION

    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus, handle: PostFilterHandle
    ) -> tuple[PostFilterResult | None, Status]:
        outcome = evaluate_preemption(
            state,
            pod,
            handle.nodes,
            statuses,
            budgets=handle.budgets(),
            run_filter=handle.run_filter,
        )
        if outcome.node:
            return PostFilterResult(outcome.node, outcome.victims), Status(Code.SUCCESS)
        cleared = PostFilterResult("") if outcome.clear_nomination else None
        return cleared, Status.unschedulable(outcome.message)


def _fits(
    run_filter: FilterRun, state: CycleState, pod: PodInfo, node: NodeInfo, without: list[PodInfo]
) -> Status | None:
    """The filters' verdict on ``node`` with the pods ``without`` taken off it, in thought."""
    for victim in without:
        node.remove_pod(victim.key)
    try:
        return run_filter(state, pod, node)
    finally:
        for victim in without:
            node.add_pod(victim)


def split_by_budget_violation(
    pods: Sequence[PodInfo], budgets: Sequence[dict[str, Any]]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """``filterPodsWithPDBViolation``: (violating, non-violating), each in the given order. A pod
    violates a budget when evicting it, after the pods before it, takes the budget's allowed
    disruptions below zero (pods the budget already counts as disrupted do not count)."""
    allowed = [int((b.get("status") or {}).get("disruptionsAllowed") or 0) for b in budgets]
    selectors = []
    for budget in budgets:
        spec_selector = (budget.get("spec") or {}).get("selector")
        try:
            selectors.append(
                None if spec_selector is None else label_selector_from_dict(spec_selector)
            )
        except SelectorError:
            selectors.append(None)
    violating: list[PodInfo] = []
    fine: list[PodInfo] = []
    for pod in pods:
        meta = pod.pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        violates = False
        for index, budget in enumerate(budgets):
            selector = selectors[index]
            if (
                selector is None
                or selector.is_empty()
                or (budget.get("metadata") or {}).get("namespace") != pod.namespace
                or not selector.matches(labels)
            ):
                continue
            disrupted = (budget.get("status") or {}).get("disruptedPods") or {}
            if meta.get("name") in disrupted:
                continue
            allowed[index] -= 1
            if allowed[index] < 0:
                violates = True
        (violating if violates else fine).append(pod)
    return violating, fine


def _select_victims(
    run_filter: FilterRun,
    state: CycleState,
    pod: PodInfo,
    node: NodeInfo,
    budgets: Sequence[dict[str, Any]] = (),
) -> tuple[list[PodInfo], int, Status | None]:
    """Upstream's SelectVictimsOnNode: take every lower-priority pod off, check the pod fits,
    then give back as many as possible — budget-violating ones first, each group highest
    priority first; the rest are the victims. Also returns how many victims violate budgets."""
    lower = [p for p in node.pods.values() if p.priority < pod.priority]
    if not lower:
        return [], 0, Status.unresolvable(NO_VICTIMS)
    outcome = _fits(run_filter, state, pod, node, lower)
    if outcome is not None:
        return [], 0, outcome
    lower.sort(key=_importance)
    violating, fine = split_by_budget_violation(lower, budgets)
    ordered = violating + fine
    victims: list[PodInfo] = []
    violations = 0
    for index, candidate in enumerate(ordered):
        still_off = victims + ordered[index + 1 :]
        if _fits(run_filter, state, pod, node, still_off) is not None:
            victims.append(candidate)  # reprieving it would leave no room
            if index < len(violating):
                violations += 1
    return victims, violations, None


def _start_time(pod: PodInfo) -> float:
    """``GetPodStartTime``: ``status.startTime``; a pod not started yet counts as starting
    now, later than any pod that has."""
    started = parse_timestamp((pod.pod.get("status") or {}).get("startTime"))
    return started.timestamp() if started is not None else math.inf


def _importance(pod: PodInfo) -> tuple[int, float, str]:
    """``MoreImportantPod`` as a sort key: higher priority first, then the earlier start (the
    key keeps equal pods in a stable order)."""
    return -pod.priority, _start_time(pod), pod.key


def _terminating_by_preemption(pod: PodInfo) -> bool:
    """``podTerminatingByPreemption``: deleted, and its DisruptionTarget condition says the
    scheduler preempted it (not a user's delete or another eviction)."""
    if not pod.terminating:
        return False
    for condition in (pod.pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "DisruptionTarget":
            return bool(
                condition.get("status") == "True"
                and condition.get("reason") == PREEMPTION_BY_SCHEDULER
            )
    return False


def _eligible(pod: PodInfo, nodes: Sequence[NodeInfo], statuses: NodeToStatus) -> str:
    """``PodEligibleToPreemptOthers``: why the pod may not preempt, or "" when it may."""
    spec = pod.pod.get("spec") or {}
    if spec.get("preemptionPolicy") == "Never":
        return NOT_ELIGIBLE_NEVER
    nominated = (pod.pod.get("status") or {}).get("nominatedNodeName") or ""
    if not nominated:
        return ""
    if statuses.get(nominated).code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
        return ""  # the nominated node cannot take it any more (a taint added since…)
    node = next((n for n in nodes if n.name == nominated), None)
    if node is not None and any(
        p.priority < pod.priority and _terminating_by_preemption(p) for p in node.pods.values()
    ):
        # Room is being made on the nominated node already: wait for it, evict nobody else.
        return NOT_ELIGIBLE_TERMINATING
    return ""


def _earliest_top_start(victims: Sequence[PodInfo]) -> float:
    """``GetEarliestPodStartTime``: the earliest start among the highest-priority victims."""
    top = max(v.priority for v in victims)
    return min(_start_time(v) for v in victims if v.priority == top)


def _preference(node: str, victims: Sequence[PodInfo], violations: int) -> tuple[Any, ...]:
    """``pickOneNodeForPreemption``'s criteria, in order, as a key where smaller is better:
    the fewest budget violations, the lowest highest-victim priority, the smallest sum of
    (offset) priorities, the fewest victims, the latest start of the highest-priority
    victims; then the node name, standing in for upstream's first candidate in map order."""
    return (
        violations,
        max(v.priority for v in victims),
        sum(v.priority + PRIORITY_OFFSET for v in victims),
        len(victims),
        -_earliest_top_start(victims),
        node,
    )


def evaluate_preemption(
    state: CycleState,
    pod: PodInfo,
    nodes: Sequence[NodeInfo],
    statuses: NodeToStatus,
    *,
    budgets: Sequence[dict[str, Any]] = (),
    run_filter: FilterRun,
) -> PreemptionResult:
    refusal = _eligible(pod, nodes, statuses)
    if refusal:
        return PreemptionResult("preemption: " + refusal)
    results: dict[str, Status] = {}
    candidates: list[tuple[tuple[Any, ...], str, list[PodInfo]]] = []
    for node in nodes:
        if statuses.get(node.name).code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            continue  # counted as absent: "not helpful"
        victims, violations, outcome = _select_victims(run_filter, state, pod, node, budgets)
        if outcome is not None:
            results[node.name] = outcome
            continue
        if not victims:  # upstream: "expected at least one victim pod on node"
            results[node.name] = Status.unresolvable(NO_VICTIMS)
            continue
        candidates.append((_preference(node.name, victims, violations), node.name, victims))
    if candidates:
        _, name, victims = min(candidates, key=lambda c: c[0])
        return PreemptionResult("", name, victims)
    diagnosis = Diagnosis(
        num_all_nodes=len(nodes),
        node_statuses=results,
        absent_status=Status.unresolvable(NOT_HELPFUL),
    )
    return PreemptionResult("preemption: " + fit_error_message(diagnosis), clear_nomination=True)
