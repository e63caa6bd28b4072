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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to terminating pod on the nominated node."


class PreemptionResult:
    def __init__(self, message: str, node: str = "", victims: Sequence[PodInfo] = ()) -> None:
        self.message = message
        self.node = node
        self.victims = list(victims)


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
        return None, Status.unschedulable(outcome.message)


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
    lower.sort(key=lambda p: (-p.priority, p.key))
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


def evaluate_preemption(
    state: CycleState,
    pod: PodInfo,
    nodes: Sequence[NodeInfo],
    statuses: NodeToStatus,
    *,
    budgets: Sequence[dict[str, Any]] = (),
    run_filter: FilterRun,
) -> PreemptionResult:
    spec = pod.pod.get("spec") or {}
    if spec.get("preemptionPolicy") == "Never":
        return PreemptionResult("preemption: " + NOT_ELIGIBLE_NEVER)
    nominated = (pod.pod.get("status") or {}).get("nominatedNodeName") or ""
    by_name = {node.name: node for node in nodes}
    if nominated in by_name and any(
        p.terminating and p.priority < pod.priority for p in by_name[nominated].pods.values()
    ):
        # Room is being made on the nominated node already: wait for it, evict nobody else.
        return PreemptionResult("preemption: " + NOT_ELIGIBLE_TERMINATING)
    results: dict[str, Status] = {}
    candidates: list[tuple[tuple[int, int, int, int, str], list[PodInfo]]] = []
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
        # Upstream's pickOneNodeForPreemption, in order: the fewest budget violations, the
        # lowest highest-victim priority, the smallest sum of victim priorities, the fewest
        # victims (then the name, for a stable choice where upstream compares start times).
        key = (
            violations,
            max(v.priority for v in victims),
            sum(v.priority for v in victims),
            len(victims),
            node.name,
        )
        candidates.append((key, victims))
    if candidates:
        key, victims = min(candidates, key=lambda c: c[0])
        return PreemptionResult("", key[-1], victims)
    diagnosis = Diagnosis(
        num_all_nodes=len(nodes),
        node_statuses=results,
        absent_status=Status.unresolvable(NOT_HELPFUL),
    )
    return PreemptionResult("preemption: " + fit_error_message(diagnosis))
