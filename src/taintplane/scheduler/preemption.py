"""DefaultPreemption's PostFilter: could evicting lower-priority pods make room?

For each node the filters rejected, preemption is not helpful when the rejection was
UnschedulableAndUnresolvable (a taint, an affinity…). Elsewhere it removes, in thought, the
pods of lower priority and runs the filters again. When no node would then fit, the message is
another ``0/N nodes are available`` over those per-node results, prefixed ``preemption:``.
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


class PreemptionResult:
    def __init__(self, message: str, node: str = "", victims: Sequence[PodInfo] = ()) -> None:
        self.message = message
        self.node = node
        self.victims = list(victims)


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
    results: dict[str, Status] = {}
    best: tuple[int, str, list[PodInfo]] | None = None
    for node in nodes:
        status = statuses.get(node.name)
        if status is None or status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            continue  # counted as absent: "not helpful"
        victims = [p for p in node.pods.values() if p.priority < pod.priority]
        if not victims:
            results[node.name] = Status.unresolvable(NO_VICTIMS)
            continue
        for victim in victims:
            node.remove_pod(victim.key)
        try:
            outcome = framework.run_filter(state, pod, node)
        finally:
            for victim in victims:
                node.add_pod(victim)
        if outcome is not None:
            results[node.name] = outcome
            continue
        # Fewest, then lowest-priority victims: a simplified form of upstream's candidate pick.
        key = (len(victims), node.name, victims)
        if best is None or key[:2] < best[:2]:
            best = key
    if best is not None:
        return PreemptionResult("", best[1], best[2])
    diagnosis = Diagnosis(
        num_all_nodes=len(nodes),
        node_statuses=results,
        absent_status=Status.unresolvable(NOT_HELPFUL),
    )
    return PreemptionResult("preemption: " + fit_error_message(diagnosis))
