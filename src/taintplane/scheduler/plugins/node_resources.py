"""NodeResourcesFit (filter on requests, least-allocated score) and
NodeResourcesBalancedAllocation (prefer nodes whose cpu and memory use stay level)."""

from __future__ import annotations

from taintplane.scheduler.framework import (
    MAX_NODE_SCORE,
    CycleState,
    FilterPlugin,
    ScorePlugin,
    Status,
)
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names

__all__ = ["NodeResourcesBalancedAllocation", "NodeResourcesFit", "insufficient_resources"]

TOO_MANY_PODS = "Too many pods"
_NATIVE = ("cpu", "memory", "ephemeral-storage")


def insufficient_resources(pod: PodInfo, node: NodeInfo) -> list[str]:
    """``fitsRequest``: the reasons the node cannot hold the pod, in upstream's order."""
    reasons = []
    if len(node.pods) + 1 > node.allocatable.get("pods", 0):
        reasons.append(TOO_MANY_PODS)
    if not any(pod.requests.values()):
        return reasons
    for resource in _NATIVE:
        wanted = pod.requests.get(resource, 0)
        if wanted > 0 and wanted > node.allocatable.get(resource, 0) - node.requested.get(
            resource, 0
        ):
            reasons.append(f"Insufficient {resource}")
    for resource in sorted(pod.requests):  # extended resources (example.com/gpu, hugepages-…)
        if resource in _NATIVE or resource == "pods":
            continue
        wanted = pod.requests[resource]
        if wanted > 0 and wanted > node.allocatable.get(resource, 0) - node.requested.get(
            resource, 0
        ):
            reasons.append(f"Insufficient {resource}")
    return reasons


class NodeResourcesFit:
    name = names.NODE_RESOURCES_FIT
    reverse = False

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        reasons = insufficient_resources(pod, node)
        return Status.unschedulable(*reasons) if reasons else None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        """LeastAllocated over cpu and memory, weight 1 each."""
        total = 0
        for index, resource in enumerate(("cpu", "memory")):
            capacity = node.allocatable.get(resource, 0)
            requested = node.score_requested[index] + pod.score_requests[index]
            if capacity and requested <= capacity:
                total += (capacity - requested) * MAX_NODE_SCORE // capacity
        return total // 2

    def normalize(self, state: CycleState, pod: PodInfo, scores: dict[str, int]) -> None:
        return None  # already 0..100


class NodeResourcesBalancedAllocation:
    name = names.NODE_RESOURCES_BALANCED_ALLOCATION
    reverse = False

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        fractions = []
        for index, resource in enumerate(("cpu", "memory")):
            capacity = node.allocatable.get(resource, 0)
            if capacity:
                requested = node.score_requested[index] + pod.score_requests[index]
                fractions.append(min(requested / capacity, 1.0))
        if len(fractions) < 2:
            return MAX_NODE_SCORE if fractions else 0
        deviation = abs(fractions[0] - fractions[1]) / 2
        return int((1 - deviation) * MAX_NODE_SCORE)

    def normalize(self, state: CycleState, pod: PodInfo, scores: dict[str, int]) -> None:
        return None


_checks: tuple[type[FilterPlugin], type[ScorePlugin], type[ScorePlugin]] = (
    NodeResourcesFit,
    NodeResourcesFit,
    NodeResourcesBalancedAllocation,
)
