"""The ReplicaSet controller's informer callbacks (upstream's ``addPod``, ``updatePod``,
``deletePod``, …): which ReplicaSet a pod event concerns, and the expectations it meets."""

from __future__ import annotations

from typing import Any

from taintplane.api.selectors import LabelSelector, label_selector_from_dict
from taintplane.client.informer import Informer, object_key
from taintplane.client.workqueue import WorkQueue
from taintplane.controllers.replicaset_pods import ReplicaSetPods
from taintplane.controllers.workloads import NAMESPACE_INDEX, Expectations, controller_ref

__all__ = ["ReplicaSetHandlers", "selector_of"]


def selector_of(rs: dict[str, Any]) -> LabelSelector | None:
    try:
        return label_selector_from_dict((rs.get("spec") or {}).get("selector"))
    except ValueError:
        return None


class ReplicaSetHandlers:
    replicasets: Informer
    queue: WorkQueue
    expectations: Expectations
    counts: ReplicaSetPods

    def _rs_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.queue.add(object_key(new))

    def _rs_deleted(self, rs: dict[str, Any]) -> None:
        key = object_key(rs)
        self.expectations.forget(key)
        self.counts.forget(rs["metadata"].get("uid", ""))
        self.queue.add(key)

    def _owner_key(self, pod: dict[str, Any]) -> str | None:
        """The key of the ReplicaSet controlling ``pod``, if it is one we know."""
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return None
        key = f"{pod['metadata']['namespace']}/{ref.get('name')}"
        rs = self.replicasets.get(key)
        if rs is None or rs["metadata"].get("uid") != ref.get("uid"):
            return None
        return key

    def _enqueue_matching(self, pod: dict[str, Any]) -> None:
        """An orphan changed: every ReplicaSet whose selector matches may adopt it."""
        namespace = pod["metadata"]["namespace"]
        labels = pod["metadata"].get("labels") or {}
        for rs in self.replicasets.by_index(NAMESPACE_INDEX, namespace):
            selector = selector_of(rs)
            if selector is not None and not selector.is_empty() and selector.matches(labels):
                self.queue.add(object_key(rs))

    def _pod_added(self, pod: dict[str, Any]) -> None:
        if pod["metadata"].get("deletionTimestamp"):
            self._pod_deleted(pod)  # seen first while terminating: counts as gone
            return
        key = self._owner_key(pod)
        if key is not None:
            self.expectations.creation_observed(key)
            self.queue.add(key)
        elif controller_ref(pod) is None:
            self._enqueue_matching(pod)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        labels_changed = old["metadata"].get("labels") != new["metadata"].get("labels")
        if new["metadata"].get("deletionTimestamp"):
            self._pod_deleted(new)
            if labels_changed:
                self._pod_deleted(old)
            return
        old_ref, new_ref = controller_ref(old), controller_ref(new)
        if old_ref != new_ref and old_ref is not None:
            old_key = self._owner_key(old)
            if old_key is not None:
                self.queue.add(old_key)
        key = self._owner_key(new)
        if key is not None:
            self.queue.add(key)
        elif new_ref is None and (labels_changed or old_ref != new_ref):
            self._enqueue_matching(new)

    def _pod_deleted(self, pod: dict[str, Any]) -> None:
        key = self._owner_key(pod)
        if key is not None:
            self.expectations.deletion_observed(key, object_key(pod))
            self.queue.add(key)
