"""The kinds of cluster event the scheduling queue hears, which plugins register interest in and
give queueing hints for (upstream's ClusterEvent labels).

A placed pod's update raises one event per kind of change, as upstream's
``PodSchedulingPropertiesChange`` classifies it: its labels (``UpdatePodLabel``: InterPodAffinity
and PodTopologySpread) and its requests scaled down (``UpdatePodScaleDown``: NodeResourcesFit).
Upstream also derives UpdatePodToleration, UpdatePodGeneratedResourceClaim and a catch-all
Update for a placed pod, but every hint registered for those answers QueueSkip unless the
updated pod is the pending pod itself, so they are not raised here."""

from __future__ import annotations

from taintplane.scheduler.nodeinfo import PodInfo

__all__ = ["ClusterEvent", "assigned_pod_update_events"]


class ClusterEvent:
    NODE_ADD = "NodeAdd"
    NODE_TAINT = "NodeTaintChange"
    NODE_LABEL = "NodeLabelChange"
    NODE_SCHEDULABLE = "NodeSpecUnschedulableChange"
    NODE_ALLOCATABLE = "NodeAllocatableChange"
    ASSIGNED_POD_ADD = "AssignedPodAdd"
    ASSIGNED_POD_DELETE = "AssignedPodDelete"
    ASSIGNED_POD_LABEL = "AssignedPodUpdatePodLabel"
    ASSIGNED_POD_SCALE_DOWN = "AssignedPodUpdatePodScaleDown"
    POD_UPDATE = "UnscheduledPodUpdate"
    POD_GENERATED_CLAIM = "UpdatePodGeneratedResourceClaim"
    RESOURCE_CLAIM = "ResourceClaimChange"
    RESOURCE_SLICE = "ResourceSliceChange"
    DEVICE_CLASS = "DeviceClassChange"
    DEVICE_TAINT_RULE = "DeviceTaintRuleChange"


def assigned_pod_update_events(old: PodInfo, new: PodInfo) -> list[str]:
    """The events a placed pod's update raises (``extractPodLabelsChange``,
    ``extractPodScaleDown``: a request lowered or removed)."""
    events = []
    if _labels(old) != _labels(new):
        events.append(ClusterEvent.ASSIGNED_POD_LABEL)
    if any(
        resource not in new.requests or wanted > new.requests[resource]
        for resource, wanted in old.requests.items()
    ):
        events.append(ClusterEvent.ASSIGNED_POD_SCALE_DOWN)
    return events


def _labels(pod: PodInfo) -> dict[str, str]:
    return dict((pod.pod.get("metadata") or {}).get("labels") or {})
