"""DefaultPreemption's PostFilter: could evicting lower-priority pods make room?

For each node the filters rejected, preemption is not helpful when the rejection was
UnschedulableAndUnresolvable (a taint, an affinity…). Elsewhere it removes, in thought, the
pods of lower priority, runs the filters again and gives back every pod it can. When no node
would then fit, the message is another ``0/N nodes are available`` over those per-node
results, prefixed ``preemption:``. When one does, the scheduler evicts that node's victims
and nominates the node for the pod. PodDisruptionBudgets are not weighed (upstream prefers
candidates that violate fewer of them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from taintplane.scheduler.diagnosis import Diagnosis, fit_error_message
from taintplane.scheduler.framework import Code, CycleState, Framework, Status
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo

__all__ = ["NOT_HELPFUL", "NO_VICTIMS", "PreemptionResult", "evaluate_preemption"]

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to terminating pod on the nominated node."


class PreemptionResult:
    def __init__(self, message: str, node: str = "", victims: Sequence[PodInfo] = ()) -> None:
        self.message = message
        self.node = node
        self.victims = list(victims)


def _fits(
    framework: Framework, state: CycleState, pod: PodInfo, node: NodeInfo, without: list[PodInfo]
) -> Status | None:
    """The filters' verdict on ``node`` with the pods ``without`` taken off it, in thought."""
    for victim in without:
        node.remove_pod(victim.key)
    try:
        return framework.run_filter(state, pod, node)
    finally:
        for victim in without:
            node.add_pod(victim)


def _select_victims(
    framework: Framework, state: CycleState, pod: PodInfo, node: NodeInfo
) -> tuple[list[PodInfo], Status | None]:
    """Upstream's SelectVictimsOnNode: take every lower-priority pod off, check the pod fits,
    then give back as many as possible, highest priority first; the rest are the victims."""
    lower = [p for p in node.pods.values() if p.priority < pod.priority]
    if not lower:
        return [], Status.unresolvable(NO_VICTIMS)
    outcome = _fits(framework, state, pod, node, lower)
    if outcome is not None:
        return [], outcome
    lower.sort(key=lambda p: (-p.priority, p.key))
    victims: list[PodInfo] = []
    for index, candidate in enumerate(lower):
        still_off = victims + lower[index + 1 :]
        if _fits(framework, state, pod, node, still_off) is not None:
            victims.append(candidate)  # reprieving it would leave no room
    return victims, None


def evaluate_preemption(
    framework: Framework,
    state: CycleState,
    pod: PodInfo,
    nodes: Sequence[NodeInfo],
    statuses: Mapping[str, Status],
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
    candidates: list[tuple[tuple[int, int, int, str], list[PodInfo]]] = []
    for node in nodes:
        status = statuses.get(node.name)
        if status is None or status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            continue  # counted as absent: "not helpful"
        victims, outcome = _select_victims(framework, state, pod, node)
        if outcome is not None:
            results[node.name] = outcome
            continue
        # Upstream's pickOneNodeForPreemption, in order: the lowest highest-victim priority,
        # the smallest sum of victim priorities, the fewest victims (then the name, for a
        # stable choice where upstream compares start times).
        key = (
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
