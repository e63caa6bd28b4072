"""NodeResourcesFit (filter on requests, least-allocated score) and
NodeResourcesBalancedAllocation (prefer nodes whose cpu and memory use stay level)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from taintplane.scheduler.events import ClusterEvent
from taintplane.scheduler.framework import (
    MAX_NODE_SCORE,
    CycleState,
    FilterPlugin,
    QueueingHintFn,
    ScorePlugin,
    Status,
)
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names
from taintplane.scheduler.table import NodeTable

__all__ = ["NodeResourcesBalancedAllocation", "NodeResourcesFit", "insufficient_resources"]

TOO_MANY_PODS = "Too many pods"
Mask = npt.NDArray[np.bool_]
Rows = npt.NDArray[np.int64]
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


def _fits_empty(pod: PodInfo, node: NodeInfo) -> bool:
    """``isFit``: the pod fits the node were it empty (its allocatable alone)."""
    empty = NodeInfo(node.name, node.node, node.labels, node.taints, node.unschedulable,
                     node.allocatable)  # fmt: skip
    return not insufficient_resources(pod, empty)


def _requested_increased(pod: PodInfo, old: NodeInfo, new: NodeInfo) -> bool:
    """``haveAnyRequestedResourcesIncreased``: more pods allowed, or more of a resource the
    pod requests."""
    if new.allocatable.get("pods", 0) > old.allocatable.get("pods", 0):
        return True
    return any(
        wanted > 0 and new.allocatable.get(resource, 0) > old.allocatable.get(resource, 0)
        for resource, wanted in pod.requests.items()
        if resource != "pods"
    )


def schedulable_after_node_change(pod: PodInfo, old: NodeInfo | None, new: NodeInfo) -> bool:
    """``isSchedulableAfterNodeChange``: the pod fits the node's allocatable, and the node is
    new or grew in something the pod asks for."""
    if not _fits_empty(pod, new):
        return False
    return old is None or _requested_increased(pod, old, new)


def schedulable_after_pod_event(pod: PodInfo, old: PodInfo | None, new: PodInfo | None) -> bool:
    """``isSchedulableAfterPodEvent``: a placed (or nominated) pod deleted frees room; of
    updates, only the pod's own requests scaled down (a pending pod's update)."""
    if new is None:
        if old is None:
            return True
        return bool(old.node_name or (old.pod.get("status") or {}).get("nominatedNodeName"))
    if new.key != pod.key:
        return False
    if old is None:
        return True
    # extractPodScaleDown: a request lowered or removed.
    return any(
        resource not in new.requests or wanted > new.requests[resource]
        for resource, wanted in old.requests.items()
    )


def schedulable_after_pod_scale_down(pod: PodInfo, old: PodInfo, new: PodInfo) -> bool:
    """``isSchedulableAfterPodScaleDown`` for a placed pod: it now asks for less of
    something the pod asks for."""
    if new.key == pod.key:
        return True
    if not new.node_name:
        return False
    return any(
        wanted > 0 and old.requests.get(resource, 0) > new.requests.get(resource, 0)
        for resource, wanted in pod.requests.items()
    )


class NodeResourcesFit:
    name = names.NODE_RESOURCES_FIT
    reverse = False

    def queueing_hints(self) -> dict[str, QueueingHintFn]:
        return {
            ClusterEvent.NODE_ADD: schedulable_after_node_change,
            ClusterEvent.NODE_ALLOCATABLE: schedulable_after_node_change,
            ClusterEvent.ASSIGNED_POD_DELETE: schedulable_after_pod_event,
            ClusterEvent.ASSIGNED_POD_SCALE_DOWN: schedulable_after_pod_scale_down,
            ClusterEvent.POD_UPDATE: schedulable_after_pod_event,
        }

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

    def filter_all(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Mask | None:
        if any(r not in _NATIVE for r in pod.requests):
            return None  # extended resources: node by node
        mask = table.pod_count + 1 <= table.alloc_pods
        if not any(pod.requests.values()):
            return mask
        for resource, allocatable, requested in (
            ("cpu", table.alloc_cpu, table.req_cpu),
            ("memory", table.alloc_memory, table.req_memory),
            ("ephemeral-storage", table.alloc_storage, table.req_storage),
        ):
            wanted = pod.requests.get(resource, 0)
            if wanted > 0:
                mask &= wanted <= allocatable - requested
        return mask

    def score_all(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: Rows) -> Rows:
        total = np.zeros(len(rows), dtype=np.int64)
        for capacity, used, wanted in (
            (table.alloc_cpu[rows], table.score_cpu[rows], pod.score_requests[0]),
            (table.alloc_memory[rows], table.score_memory[rows], pod.score_requests[1]),
        ):
            requested = used + wanted
            fits = (capacity > 0) & (requested <= capacity)
            total += np.where(
                fits, (capacity - requested) * MAX_NODE_SCORE // np.maximum(capacity, 1), 0
            )
        return total // 2


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

    def score_all(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: Rows) -> Rows:
        cap_cpu, cap_mem = table.alloc_cpu[rows], table.alloc_memory[rows]
        with np.errstate(divide="ignore", invalid="ignore"):
            cpu = np.minimum((table.score_cpu[rows] + pod.score_requests[0]) / cap_cpu, 1.0)
            mem = np.minimum((table.score_memory[rows] + pod.score_requests[1]) / cap_mem, 1.0)
            balanced = ((1 - np.abs(cpu - mem) / 2) * MAX_NODE_SCORE).astype(np.int64)
        both = (cap_cpu > 0) & (cap_mem > 0)
        one = (cap_cpu > 0) != (cap_mem > 0)
        return np.where(both, balanced, np.where(one, MAX_NODE_SCORE, 0)).astype(np.int64)


_checks: tuple[type[FilterPlugin], type[ScorePlugin], type[ScorePlugin]] = (
    NodeResourcesFit,
    NodeResourcesFit,
    NodeResourcesBalancedAllocation,
)
