"""The DaemonSet controller: one pod of each DaemonSet on every node that should run it.

As upstream's ``daemon_controller.go``: a node should run a daemon pod when the template's
node name, node selector and required node affinity admit it and every NoSchedule/NoExecute
taint is tolerated by the template's tolerations plus the automatic daemon tolerations; an
existing pod stays unless a NoExecute taint is untolerated. Pods are created pinned to their
node by required node affinity (``metadata.name In [node]``) and left for the scheduler to
bind. Failed pods are deleted with a per-node backoff and replaced. Expectations keep a sync
from acting on a cache that has not yet seen its own creates and deletes.

Each template the DaemonSet runs is a ControllerRevision (``daemonset_history``), whose hash
labels the pods; ``kubectl rollout history|undo`` read and restore them. A template change
rolls out with ``maxUnavailable``, or with ``maxSurge`` by starting the new pod beside the old
one (``daemonset_rollout``).

Left out: adoption and release of pods by selector (revisions are adopted and released).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from taintplane.api.selectors import SelectorError, label_selector_from_dict
from taintplane.client import ApiError, Client, resource
from taintplane.client.events import EventRecorder
from taintplane.client.shared import SharedInformers
from taintplane.client.workqueue import WorkQueue
from taintplane.clock import Clock
from taintplane.controllers import daemonset_util as util
from taintplane.controllers import workloads
from taintplane.controllers.daemonset_history import DaemonSetHistory
from taintplane.controllers.daemonset_sync import DaemonSetSync, Expectations

__all__ = ["COMPONENT", "DaemonSetController"]

log = logging.getLogger(__name__)

COMPONENT = "daemonset-controller"
DAEMONSETS = resource("apps", "v1", "daemonsets")
OWNER_INDEX = "daemonset-controller:owner-uid"
#: A daemon pod by its DaemonSet's uid and the node it is aimed at ("uid/node").
NODE_INDEX = "daemonset-controller:owner-node"


def controller_ref(obj: dict[str, Any]) -> dict[str, Any] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def _owner_uid(pod: dict[str, Any]) -> list[str]:
    ref = controller_ref(pod)
    return [str(ref["uid"])] if ref and ref.get("kind") == "DaemonSet" else []


def _owner_node(pod: dict[str, Any]) -> list[str]:
    owner = _owner_uid(pod)
    node = util.target_node_name(pod) if owner else None
    return [f"{owner[0]}/{node}"] if node is not None else []


def _conditions_true(node: dict[str, Any]) -> set[str]:
    conditions = (node.get("status") or {}).get("conditions") or []
    return {str(c.get("type")) for c in conditions if c.get("status") == "True"}


def _ignore_node_update(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """``shouldIgnoreNodeUpdate``: only the conditions' heartbeats or nothing changed."""
    if _conditions_true(old) != _conditions_true(new):
        return False
    strip = ("resourceVersion", "managedFields")

    def rest(node: dict[str, Any]) -> dict[str, Any]:
        meta = {k: v for k, v in (node.get("metadata") or {}).items() if k not in strip}
        status = {k: v for k, v in (node.get("status") or {}).items() if k != "conditions"}
        return {**node, "metadata": meta, "status": status}

    return rest(old) == rest(new)


class DaemonSetController:
    def __init__(
        self,
        client: Client,
        clock: Clock,
        informers: SharedInformers,
        *,
        comparison_operators: bool = False,
    ) -> None:
        self.client = client
        self.clock = clock
        self.comparison_operators = comparison_operators
        self.daemonsets = informers.informer("apps", "v1", "daemonsets")
        self.pods = informers.pods
        self.nodes = informers.nodes
        if not self.pods.has_index(OWNER_INDEX):
            self.pods.add_index(OWNER_INDEX, _owner_uid)
        if not self.pods.has_index(NODE_INDEX):
            self.pods.add_index(NODE_INDEX, _owner_node)
        self.histories = informers.informer("apps", "v1", "controllerrevisions")
        if not self.histories.has_index(workloads.OWNER_INDEX):
            self.histories.add_index(workloads.OWNER_INDEX, workloads.owner_index)
        self.recorder = EventRecorder(client, clock, COMPONENT)
        self.expectations = Expectations(clock)
        self.backoff = util.FailedPodsBackoff()
        self.queue = WorkQueue(clock, name="daemonset")
        self.history = DaemonSetHistory(self)
        self._should_run: dict[tuple[str, str], tuple[Any, Any, tuple[bool, bool]]] = {}
        self.syncer = DaemonSetSync(self)
        self.daemonsets.add_handlers(
            lambda ds: self._enqueue(ds),
            lambda old, new: self._enqueue(new),
            self._daemonset_deleted,
        )
        self.pods.add_handlers(self._pod_added, self._pod_updated, self._pod_deleted)
        self.histories.add_handlers(
            self._history_added, self._history_updated, self._history_deleted
        )
        self.nodes.add_handlers(self._node_added, self._node_updated, self._node_deleted)

    # ---- helpers shared with the sync ------------------------------------------------------

    def should_run(self, node: dict[str, Any], ds: dict[str, Any]) -> tuple[bool, bool]:
        """``NodeShouldRunDaemonPod``, remembered per DaemonSet and node: a sync asks it of
        every node, and the answer changes only with the template (the DaemonSet's
        generation) or the node (its resourceVersion)."""
        ds_meta, node_meta = ds.get("metadata") or {}, node.get("metadata") or {}
        generation, version = ds_meta.get("generation"), node_meta.get("resourceVersion")
        if not generation or not version:
            return util.node_should_run_daemon_pod(
                node, ds, comparison_operators=self.comparison_operators
            )
        key = (str(ds_meta.get("uid", "")), str(node_meta.get("name", "")))
        found = self._should_run.get(key)
        if found is not None and found[0] == generation and found[1] == version:
            return found[2]
        answer = util.node_should_run_daemon_pod(
            node, ds, comparison_operators=self.comparison_operators
        )
        self._should_run[key] = (generation, version, answer)
        return answer

    def owned_pods(self, ds: dict[str, Any]) -> list[dict[str, Any]]:
        return self.pods.by_index(OWNER_INDEX, str(ds["metadata"].get("uid", "")))

    def pods_on_node(self, ds: dict[str, Any], node: str) -> list[dict[str, Any]]:
        """The DaemonSet's pods aimed at ``node``, in the informer's order."""
        return self.pods.by_index(NODE_INDEX, f"{ds['metadata'].get('uid', '')}/{node}")

    def _mark(self, pod: dict[str, Any]) -> None:
        """Whatever happened to a daemon pod, its DaemonSet looks at its node again."""
        owner = _owner_uid(pod)
        if owner:
            self.syncer.kept.mark(owner[0], util.target_node_name(pod))

    def _enqueue(self, ds: dict[str, Any]) -> None:
        meta = ds["metadata"]
        self.queue.add(f"{meta['namespace']}/{meta['name']}")

    def enqueue_after(self, ds: dict[str, Any], seconds: float) -> None:
        meta = ds["metadata"]
        self.queue.add_after(f"{meta['namespace']}/{meta['name']}", seconds)

    def _resolve(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """``resolveControllerRef``: the DaemonSet a pod's or revision's controller names."""
        ref = controller_ref(obj)
        if ref is None or ref.get("kind") != "DaemonSet":
            return None
        ds = self.daemonsets.get(f"{obj['metadata'].get('namespace')}/{ref.get('name')}")
        if ds is None or ds["metadata"].get("uid") != ref.get("uid"):
            return None
        return ds

    # ---- informer callbacks -----------------------------------------------------------------

    def _daemonset_deleted(self, ds: dict[str, Any]) -> None:
        meta = ds["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        self.expectations.delete(key)
        uid = str(meta.get("uid", ""))
        self.syncer.kept.forget(uid)
        for remembered in [k for k in self._should_run if k[0] == uid]:
            del self._should_run[remembered]
        self.queue.add(key)

    def _pod_added(self, pod: dict[str, Any]) -> None:
        self._mark(pod)
        if pod["metadata"].get("deletionTimestamp"):
            self._pod_deleted(pod)
            return
        ds = self._resolve(pod)
        if ds is not None:
            self.expectations.creation_observed(self.syncer.key(ds))
            self._enqueue(ds)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        self._mark(old)
        self._mark(new)
        if new["metadata"].get("deletionTimestamp"):
            self._pod_deleted(new, marked=True)
            return
        old_ds = self._resolve(old)
        ds = self._resolve(new)
        if old_ds is not None and controller_ref(old) != controller_ref(new):
            self._enqueue(old_ds)
        if ds is None:
            return
        self._enqueue(ds)
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        if min_ready > 0 and not util.is_pod_ready(old) and util.is_pod_ready(new):
            # One more second against sub-second skew, as upstream.
            self.enqueue_after(ds, min_ready + 1)

    def _pod_deleted(self, pod: dict[str, Any], *, marked: bool = False) -> None:
        if not marked:
            self._mark(pod)
        ds = self._resolve(pod)
        if ds is not None:
            self.expectations.deletion_observed(self.syncer.key(ds))
            self._enqueue(ds)

    def _selecting(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        """``GetHistoryDaemonSets``: the DaemonSets of the object's namespace whose selector
        takes its labels (candidates to adopt an orphan)."""
        meta = obj["metadata"]
        labels = meta.get("labels") or {}
        found = []
        for ds in list(self.daemonsets.cache.values()):
            if ds["metadata"].get("namespace") != meta.get("namespace"):
                continue
            try:
                selector = label_selector_from_dict((ds.get("spec") or {}).get("selector"))
            except SelectorError:
                continue
            if not selector.is_empty() and selector.matches(labels):
                found.append(ds)
        return found

    def _history_added(self, history: dict[str, Any]) -> None:
        if history["metadata"].get("deletionTimestamp"):
            self._history_deleted(history)
            return
        if controller_ref(history) is not None:
            ds = self._resolve(history)
            if ds is not None:
                self._enqueue(ds)
            return
        for ds in self._selecting(history):
            self._enqueue(ds)

    def _history_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        ref_changed = controller_ref(old) != controller_ref(new)
        if ref_changed and controller_ref(old) is not None:
            old_ds = self._resolve(old)
            if old_ds is not None:
                self._enqueue(old_ds)
        if controller_ref(new) is not None:
            ds = self._resolve(new)
            if ds is not None:
                self._enqueue(ds)
            return
        if ref_changed or old["metadata"].get("labels") != new["metadata"].get("labels"):
            for ds in self._selecting(new):
                self._enqueue(ds)

    def _history_deleted(self, history: dict[str, Any]) -> None:
        ds = self._resolve(history)
        if ds is not None:
            self._enqueue(ds)

    def _node_added(self, node: dict[str, Any]) -> None:
        self.syncer.kept.mark_node(node["metadata"]["name"])
        for ds in list(self.daemonsets.cache.values()):
            if self.should_run(node, ds)[0]:
                self._enqueue(ds)

    def _node_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        # Like upstream, node deletions are not watched: pods on a deleted node are the pod
        # garbage collector's to remove.
        if _ignore_node_update(old, new):
            return  # nothing a DaemonSet decides on changed: its kept results stand
        self.syncer.kept.mark_node(new["metadata"]["name"])
        for ds in list(self.daemonsets.cache.values()):
            if self.should_run(old, ds) != self.should_run(new, ds):
                self._enqueue(ds)

    def _node_deleted(self, node: dict[str, Any]) -> None:
        # Not a reason to sync (as upstream), but the node's kept results are stale.
        self.syncer.kept.mark_node(node["metadata"]["name"])

    # ---- running ------------------------------------------------------------------------------

    async def run(self) -> None:
        gc = asyncio.create_task(self._backoff_gc(), name="daemonset:backoff-gc")
        try:
            await self.queue.run(self.syncer.sync)
        finally:
            gc.cancel()
            await asyncio.gather(gc, return_exceptions=True)

    async def _backoff_gc(self) -> None:
        while True:  # upstream's BackoffGCInterval
            await self.clock.sleep(60)
            self.backoff.gc(self.clock.now())

    async def get_daemonset(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return await self.client.get(DAEMONSETS, name, namespace)
        except ApiError as error:
            if error.code == 404:
                return None
            raise
