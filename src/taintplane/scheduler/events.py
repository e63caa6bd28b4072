"""The kinds of cluster event the scheduling queue hears, which plugins register interest in and
give queueing hints for (upstream's ClusterEvent labels)."""

from __future__ import annotations

from typing import Any

__all__ = ["ClusterEvent", "own_update"]


class ClusterEvent:
    NODE_ADD = "NodeAdd"
    NODE_TAINT = "NodeTaintChange"
    NODE_LABEL = "NodeLabelChange"
    NODE_SCHEDULABLE = "NodeSpecUnschedulableChange"
    NODE_ALLOCATABLE = "NodeAllocatableChange"
    ASSIGNED_POD_ADD = "AssignedPodAdd"
    ASSIGNED_POD_DELETE = "AssignedPodDelete"
    POD_UPDATE = "UnscheduledPodUpdate"
    POD_GENERATED_CLAIM = "UpdatePodGeneratedResourceClaim"
    RESOURCE_CLAIM = "ResourceClaimChange"
    RESOURCE_SLICE = "ResourceSliceChange"
    DEVICE_CLASS = "DeviceClassChange"
    DEVICE_TAINT_RULE = "DeviceTaintRuleChange"


def own_update(pod: Any, old: Any, new: Any) -> bool:
    """A pending pod's update queues that pod alone: upstream raises no event for the other
    pending pods when one changes."""
    return bool(new is not None and new.key == pod.key)
