"""What a ReplicaSet's status counts, kept current from pod events instead of re-walked.

Upstream's ``calculateStatus`` and ``claimPods`` visit every pod of a ReplicaSet on every
sync; with a sync per pod event, a burst of N pods costs N² visits. Here each ReplicaSet
(by UID) has a :class:`PodCounts` built once from the informer's controller index and then
moved by each pod event: the old version of the pod is taken out and the new one put in, so
a sync reads its counts in constant time. The counts are a pure function of the pods the
index files under the UID and of the ReplicaSet's selector and template labels; when those
change the counts are rebuilt. ``tests/controllers/test_replicaset_counts.py`` checks them
against a full recount over random event sequences.
"""

from __future__ import annotations

import bisect
from datetime import datetime, timedelta
from typing import Any

from taintplane.api.selectors import LabelSelector
from taintplane.client.informer import Informer, object_key
from taintplane.controllers.replicaset_status import AVAILABILITY_SLACK
from taintplane.controllers.workloads import (
    OWNER_INDEX,
    controller_ref,
    is_pod_ready,
    pod_ready_since,
)

__all__ = ["PodCounts", "ReplicaSetPods"]


class PodCounts:
    """The owned pods of one ReplicaSet as its status sees them."""

    def __init__(self, selector: dict[str, Any], parsed: LabelSelector, template: dict[str, str]):
        self.selector = selector
        self._parsed = parsed
        self.template_labels = template
        #: Active pods that match the selector (``status.replicas``).
        self.active = 0
        #: ... of which carry every template label (``fullyLabeledReplicas``).
        self.labelled = 0
        #: ... of which are Ready.
        self.ready = 0
        #: When each Ready one became ready, sorted (a Ready pod without a readable time
        #: is never available under ``minReadySeconds``, so it is left out).
        self.ready_since: list[datetime] = []
        #: Matching pods being deleted but not finished (``terminatingReplicas``).
        self.terminating = 0
        #: Keys of active owned pods that no longer match the selector: to be released.
        self.unmatched: set[str] = set()

    def available(self, min_ready_seconds: int, now: datetime) -> int:
        """``availableReplicas``: Ready for strictly more than ``minReadySeconds``."""
        if min_ready_seconds <= 0:
            return self.ready
        return bisect.bisect_left(self.ready_since, now - timedelta(seconds=min_ready_seconds))

    def next_check(self, min_ready_seconds: int, now: datetime) -> float:
        """Seconds until the first Ready pod not yet available becomes so
        (``minReadySeconds`` when none is waiting), as ``next_availability_check``."""
        at = bisect.bisect_left(self.ready_since, now - timedelta(seconds=min_ready_seconds))
        if at == len(self.ready_since):
            return float(min_ready_seconds)
        waited = (now - self.ready_since[at]).total_seconds()
        return min_ready_seconds - waited + AVAILABILITY_SLACK

    def apply(self, pod: dict[str, Any], sign: int) -> None:
        """Count ``pod`` in (``sign`` 1) or out (-1)."""
        meta = pod["metadata"]
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            return
        matches = self._parsed.matches(meta.get("labels") or {})
        if meta.get("deletionTimestamp"):
            if matches:
                self.terminating += sign
            return
        if not matches:
            key = object_key(pod)
            if sign > 0:
                self.unmatched.add(key)
            else:
                self.unmatched.discard(key)
            return
        self.active += sign
        labels = meta.get("labels") or {}
        if all(labels.get(k) == v for k, v in self.template_labels.items()):
            self.labelled += sign
        if is_pod_ready(pod):
            self.ready += sign
            since = pod_ready_since(pod)
            if since is not None:
                if sign > 0:
                    bisect.insort(self.ready_since, since)
                else:
                    at = bisect.bisect_left(self.ready_since, since)
                    if at < len(self.ready_since) and self.ready_since[at] == since:
                        del self.ready_since[at]


class ReplicaSetPods:
    """:class:`PodCounts` by ReplicaSet UID, moved by the pod informer's events (register
    :meth:`added`, :meth:`updated`, :meth:`deleted` as its handlers)."""

    def __init__(self, pods: Informer) -> None:
        self._pods = pods
        self._by_uid: dict[str, PodCounts] = {}

    def counts(
        self, uid: str, selector: dict[str, Any], parsed: LabelSelector, template: dict[str, str]
    ) -> PodCounts:
        """The counts of the ReplicaSet ``uid`` has with this selector and template labels,
        built from the controller index the first time (or after either changed)."""
        found = self._by_uid.get(uid)
        if found is not None and found.selector == selector and found.template_labels == template:
            return found
        found = PodCounts(dict(selector), parsed, dict(template))
        for pod in self._pods.by_index(OWNER_INDEX, uid):
            found.apply(pod, 1)
        self._by_uid[uid] = found
        return found

    def forget(self, uid: str) -> None:
        self._by_uid.pop(uid, None)

    def _apply(self, pod: dict[str, Any], sign: int) -> None:
        ref = controller_ref(pod)
        if ref is None:
            return
        found = self._by_uid.get(str(ref.get("uid", "")))
        if found is not None:
            found.apply(pod, sign)

    def added(self, pod: dict[str, Any]) -> None:
        self._apply(pod, 1)

    def updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._apply(old, -1)
        self._apply(new, 1)

    def deleted(self, pod: dict[str, Any]) -> None:
        self._apply(pod, -1)
