"""DynamicResources' queueing hints (upstream v1.35's ``EventsToRegister`` and its
``isSchedulableAfter*`` functions), kept apart from the plugin's extension points.

Registered, as upstream with SchedulerQueueingHints on: a Node added, or its labels or
allocatable changed; a ResourceClaim added or updated; the pod's own status naming a claim made
from its template (UpdatePodGeneratedResourceClaim); a DeviceClass or a ResourceSlice added or
updated. Deletions of claims, slices and classes are no event for this plugin. A DeviceTaintRule
change reaches upstream's plugin as updates of the slices it patches (the slice tracker), so
here it stands for those updates. Only the claim and the pod events have a hint; every other
one is Queue, as upstream's (which registers them without a hint). The events are listed with
the other plugins' in the queue's ``INTERESTS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taintplane.dra.claims import ClaimNameError
from taintplane.scheduler.events import ClusterEvent
from taintplane.scheduler.framework import QueueingHintFn
from taintplane.scheduler.nodeinfo import PodInfo

__all__ = ["DraQueueingHints"]


class DraQueueingHints:
    """Mixed into DynamicResources, whose claim resolution (``foreachPodResourceClaim``) the
    hints share with PreEnqueue and PreFilter."""

    def _pod_claims(self, pod: dict[str, Any]) -> list[dict[str, Any]]:
        raise NotImplementedError

    def queueing_hints(self) -> dict[str, QueueingHintFn]:
        return {
            ClusterEvent.RESOURCE_CLAIM: self.schedulable_after_claim_change,
            ClusterEvent.POD_GENERATED_CLAIM: self.schedulable_after_pod_change,
        }

    def schedulable_after_claim_change(
        self, pod: PodInfo, old: Mapping[str, Any] | None, new: Mapping[str, Any]
    ) -> bool:
        """``isSchedulableAfterClaimChange``: skip while the pod's own claims cannot all be
        resolved (the event is not the one it waits for); queue for any claim deallocated
        (its devices are free for everyone), for one of the pod's claims created, or for one
        whose status changed (a finalizer added, say, is not worth a retry)."""
        if not isinstance(new, Mapping) or not (old is None or isinstance(old, Mapping)):
            raise TypeError("unexpected object in isSchedulableAfterClaimChange")
        try:
            claims = self._pod_claims(pod.pod)
        except ClaimNameError:
            return False
        if old is not None and _allocation(old) is not None and _allocation(new) is None:
            return True
        uid = _uid(new)
        if not any(_uid(claim) == uid for claim in claims):
            return False
        if old is None:
            return True
        return not _semantically_equal(old.get("status") or {}, new.get("status") or {})

    def schedulable_after_pod_change(self, pod: PodInfo, old: Any, new: PodInfo) -> bool:
        """``isSchedulableAfterPodChange``: the pod's own update, once every claim it names
        can be resolved."""
        if not isinstance(new, PodInfo):
            raise TypeError("unexpected object in isSchedulableAfterPodChange")
        if not _same_pod(pod, new):
            return False
        try:
            self._pod_claims(new.pod)
        except ClaimNameError:
            return False
        return True


def _uid(obj: Mapping[str, Any]) -> Any:
    return (obj.get("metadata") or {}).get("uid")


def _allocation(claim: Mapping[str, Any]) -> Any:
    return (claim.get("status") or {}).get("allocation")


def _same_pod(a: PodInfo, b: PodInfo) -> bool:
    """By UID, as upstream; by key for pods without one (built in tests)."""
    first, second = _uid(a.pod), _uid(b.pod)
    return bool(first == second if first and second else a.key == b.key)


def _semantically_equal(a: Any, b: Any) -> bool:
    """``apiequality.Semantic.DeepEqual`` on JSON: an absent field, ``null`` and an empty list
    (a nil slice) are alike; an empty object is a set pointer and differs from an absent one."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        keys = set(a) | set(b)
        return all(_semantically_equal(a.get(k), b.get(k)) for k in keys)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(
            _semantically_equal(x, y) for x, y in zip(a, b, strict=True)
        )
    if a is None or b is None:
        return _empty(a) and _empty(b)
    return bool(a == b)


def _empty(value: Any) -> bool:
    return value is None or value == []
