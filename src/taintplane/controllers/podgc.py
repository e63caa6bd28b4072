"""The pod garbage collector (upstream's ``pkg/controller/podgc``).

Every 20 s (``gcCheckPeriod``, measured from the end of the previous pass) it force-deletes:

- terminated pods (phase neither Pending, Running nor Unknown) beyond
  ``--terminated-pod-gc-threshold`` (12500; 0 turns it off), evicted first, then oldest;
- terminating pods on a node that is not Ready and has the ``out-of-service`` taint;
- orphaned pods, bound to a node that does not exist. A missing node is quarantined for
  40 s (``quarantineTime``) and then checked with a GET, so a node that the informer has
  not seen yet is not taken for deleted. Orphans are marked ``DisruptionTarget``
  (``DeletionByPodGC``) before they go;
- terminating pods never bound to a node.

Before a delete, a pod that is not Succeeded or Failed is patched to phase Failed; the delete
has grace period 0 because no kubelet is left to finish it.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from taintplane.api.decoding import format_time
from taintplane.api.wellknown import TAINT_NODE_OUT_OF_SERVICE
from taintplane.client import ApiError, Client, resource
from taintplane.client.queue_metrics import QueueMetrics
from taintplane.client.shared import SharedInformers
from taintplane.clock import Clock
from taintplane.controllers.stability import alpha

__all__ = ["GC_CHECK_PERIOD", "QUARANTINE_TIME", "PodGCController"]

log = logging.getLogger(__name__)

PODS = resource("", "v1", "pods")
NODES = resource("", "v1", "nodes")
GC_CHECK_PERIOD = 20.0
QUARANTINE_TIME = 40.0
CONDITION_REASON = "DeletionByPodGC"
#: The pods informer's indexes this collector adds (and the one value each files under).
TERMINATED_INDEX = "podgc:terminated"
UNSCHEDULED_TERMINATING = "podgc:unscheduled-terminating"
NODE_INDEX = "node"
CONDITION_MESSAGE = "PodGC: node no longer exists"


class PodGCMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.deleting = Counter(
            "force_delete_pods",
            alpha(
                "Number of pods that are being forcefully deleted since the Pod GC Controller "
                "started."
            ),
            ["namespace", "reason"],
            subsystem="pod_gc_collector",
            registry=registry,
        )
        self.errors = Counter(
            "force_delete_pod_errors",
            alpha(
                "Number of errors encountered when forcefully deleting the pods since the Pod GC "
                "Controller started."
            ),
            ["namespace", "reason"],
            subsystem="pod_gc_collector",
            registry=registry,
        )


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def is_terminated(pod: dict[str, Any]) -> bool:
    # As upstream, a pod without a phase counts as terminated.
    return _phase(pod) not in ("Pending", "Running", "Unknown")


def _eviction_then_age(pod: dict[str, Any]) -> tuple[bool, str, str]:
    """``byEvictionAndCreationTimestamp``: evicted pods first, then oldest, then by name."""
    evicted = _phase(pod) == "Failed" and (pod.get("status") or {}).get("reason") == "Evicted"
    meta = pod["metadata"]
    return (not evicted, str(meta.get("creationTimestamp", "")), str(meta["name"]))


def _terminated_index(pod: dict[str, Any]) -> list[str]:
    return [TERMINATED_INDEX] if is_terminated(pod) else []


def _unscheduled_terminating_index(pod: dict[str, Any]) -> list[str]:
    unscheduled = not (pod.get("spec") or {}).get("nodeName")
    if unscheduled and pod["metadata"].get("deletionTimestamp"):
        return [UNSCHEDULED_TERMINATING]
    return []


def _node_ready(node: dict[str, Any]) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


class PodGCController:
    def __init__(
        self,
        client: Client,
        clock: Clock,
        informers: SharedInformers,
        *,
        terminated_pod_threshold: int = 12500,
        registry: CollectorRegistry | None = None,
        gc_check_period: float = GC_CHECK_PERIOD,
        quarantine_time: float = QUARANTINE_TIME,
    ) -> None:
        self.client = client
        self.clock = clock
        self.pods = informers.pods
        self.nodes = informers.nodes
        self.threshold = terminated_pod_threshold
        self.period = gc_check_period
        self.quarantine_time = quarantine_time
        self.metrics = PodGCMetrics(registry or CollectorRegistry())
        #: Nodes seen missing, with the instant they may be checked (the delaying queue).
        self.quarantine: dict[str, datetime] = {}
        #: That queue's metrics: a node is added to it when its quarantine ends, which is at
        #: the start of a pass (the pass it is checked in) under virtual time.
        self.node_queue_metrics = QueueMetrics(clock, "orphaned_pods_nodes")
        # Indexes, so that a pass costs what there is to collect, not one visit per pod.
        for name, func in (
            (TERMINATED_INDEX, _terminated_index),
            (UNSCHEDULED_TERMINATING, _unscheduled_terminating_index),
        ):
            if not self.pods.has_index(name):
                self.pods.add_index(name, func)
        #: Nodes with the out-of-service taint (kept from node events).
        self.out_of_service: set[str] = set()
        #: Nodes that may be missing while pods name them: every node a pod was bound to
        #: while the node informer lacked it, and every node deleted while it had pods. A
        #: pass checks only these (and forgets those found present or without pods), so it
        #: costs what is missing, not a look-up per node with pods every 20 s.
        self._suspects: set[str] = set()
        self.nodes.add_handlers(
            self._node_seen,
            lambda _old, new: self._node_seen(new),
            self._node_gone,
        )
        self.pods.add_handlers(self._pod_seen, lambda _old, new: self._pod_seen(new))

    async def run(self) -> None:
        while True:
            try:
                await self.gc()
            except asyncio.CancelledError:
                raise
            except Exception:  # one failed pass must not stop the collector
                log.exception("pod garbage collection failed")
            await self.clock.sleep(self.period)

    async def gc(self) -> None:
        """One pass. What each step considers is taken from the indexes at the start, as
        upstream lists the pods once per pass; none walks every pod."""
        terminated = self._terminated() if self.threshold > 0 else []
        terminating = self._terminating_out_of_service()
        on_missing_nodes = self._on_missing_nodes()
        unscheduled = self.pods.by_index(UNSCHEDULED_TERMINATING, UNSCHEDULED_TERMINATING)
        if terminated:
            await self._gc_terminated(terminated)
        await self._delete_all(terminating, "out-of-service")
        await self._gc_orphaned(on_missing_nodes)
        await self._delete_all(unscheduled, "unscheduled")

    def _terminated(self) -> list[dict[str, Any]]:
        """The terminated pods when there are more than the threshold (none otherwise)."""
        if self.pods.index_count(TERMINATED_INDEX, TERMINATED_INDEX) <= self.threshold:
            return []
        return self.pods.by_index(TERMINATED_INDEX, TERMINATED_INDEX)

    async def _gc_terminated(self, terminated: list[dict[str, Any]]) -> None:
        excess = len(terminated) - self.threshold
        if excess <= 0:
            return
        log.info("Garbage collecting %d pods", excess)
        terminated.sort(key=_eviction_then_age)
        await self._delete_all(terminated[:excess], "terminated")

    def _terminating_out_of_service(self) -> list[dict[str, Any]]:
        """Terminating pods on a node that is not Ready and is tainted out-of-service."""
        doomed = []
        for name in self.out_of_service:
            node = self.nodes.get(name)
            if node is None or _node_ready(node):
                continue
            doomed += [
                p
                for p in self.pods.by_index(NODE_INDEX, name)
                if p["metadata"].get("deletionTimestamp")
            ]
        doomed.sort(key=_eviction_then_age)
        return doomed

    def _on_missing_nodes(self) -> dict[str, list[dict[str, Any]]]:
        """The pods of each node they name that the node informer does not have, in the
        pod index's order of nodes (upstream's pass over its list of pods)."""
        self._suspects = {
            node
            for node in self._suspects
            if self.nodes.get(node) is None and self.pods.index_count(NODE_INDEX, node)
        }
        if not self._suspects:
            return {}
        return {
            node: self.pods.by_index(NODE_INDEX, node)
            for node in self.pods.index_values(NODE_INDEX)
            if node in self._suspects
        }

    def _pod_seen(self, pod: dict[str, Any]) -> None:
        node = (pod.get("spec") or {}).get("nodeName")
        if node and self.nodes.get(node) is None:
            self._suspects.add(node)

    def _node_gone(self, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        self.out_of_service.discard(name)
        if self.pods.index_count(NODE_INDEX, name):
            self._suspects.add(name)

    def _node_seen(self, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        taints = (node.get("spec") or {}).get("taints") or []
        if any(t.get("key") == TAINT_NODE_OUT_OF_SERVICE for t in taints):
            self.out_of_service.add(name)
        else:
            self.out_of_service.discard(name)

    async def _gc_orphaned(self, on_missing_nodes: dict[str, list[dict[str, Any]]]) -> None:
        now = self.clock.now()
        ready_at = now + timedelta(seconds=self.quarantine_time)
        for node, pods in on_missing_nodes.items():
            # A delaying queue keeps the earliest instant an item was asked for.
            self.quarantine[node] = min(self.quarantine.get(node, ready_at), ready_at)
            for _ in pods:
                self.node_queue_metrics.retry()  # each AddAfter (one per pod) counts
        deleted: set[str] = set()
        for node, due in list(self.quarantine.items()):
            if due > now:
                continue
            del self.quarantine[node]
            self.node_queue_metrics.add(node)
            self.node_queue_metrics.get(node)
            try:
                await self._check_quarantined(node, deleted)
            finally:
                self.node_queue_metrics.done(node)
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": CONDITION_REASON,
            "message": CONDITION_MESSAGE,
        }
        orphans = [p for node in deleted for p in on_missing_nodes.get(node, [])]
        await self._delete_all(orphans, "orphaned", condition)

    @staticmethod
    def _observed(pod: dict[str, Any], condition: dict[str, Any]) -> dict[str, Any]:
        """The condition for this pod: with PodObservedGenerationTracking (GA in 1.35) it
        carries the pod's generation (GetPodObservedGenerationIfEnabledOnCondition)."""
        generation = pod["metadata"].get("generation")
        if isinstance(generation, int) and generation:
            return {**condition, "observedGeneration": generation}
        return condition

    async def _check_quarantined(self, node: str, deleted: set[str]) -> None:
        if self.nodes.get(node) is not None:
            return
        try:
            await self.client.get(NODES, node)
        except ApiError as error:
            if error.code == 404:
                deleted.add(node)
            else:  # the node is queued again next pass if pods still name it
                log.error("Error while getting node %s: %s", node, error)

    async def _delete_all(
        self, pods: list[dict[str, Any]], reason: str, condition: dict[str, Any] | None = None
    ) -> None:
        async def one(pod: dict[str, Any]) -> None:
            namespace = pod["metadata"]["namespace"]
            self.metrics.deleting.labels(namespace, reason).inc()
            try:
                await self.mark_failed_and_delete(pod, condition)
            except ApiError as error:
                self.metrics.errors.labels(namespace, reason).inc()
                log.info("force-deleting %s/%s: %s", namespace, pod["metadata"]["name"], error)

        await asyncio.gather(*(one(pod) for pod in pods))

    async def mark_failed_and_delete(
        self, pod: dict[str, Any], condition: dict[str, Any] | None = None
    ) -> None:
        meta = pod["metadata"]
        log.info("PodGC is force deleting Pod %s/%s", meta["namespace"], meta["name"])
        if _phase(pod) not in ("Succeeded", "Failed"):
            # No kubelet may be left to move an orphan out of Running.
            status: dict[str, Any] = {"phase": "Failed"}
            if condition is not None:
                observed = self._observed(pod, condition)
                status["conditions"] = [self._updated_condition(pod, observed)]
            await self.client.patch(
                PODS,
                meta["name"],
                {"metadata": {"uid": meta.get("uid")}, "status": status},
                namespace=meta["namespace"],
                patch_type="strategic",
                subresource="status",
            )
        await self.client.delete(PODS, meta["name"], meta["namespace"], grace_period=0)

    def _updated_condition(self, pod: dict[str, Any], condition: dict[str, Any]) -> dict[str, Any]:
        """``UpdatePodCondition``: the transition time moves only when the status changes."""
        for existing in (pod.get("status") or {}).get("conditions") or []:
            if existing.get("type") == condition["type"]:
                if existing.get("status") == condition["status"] and existing.get(
                    "lastTransitionTime"
                ):
                    return {**condition, "lastTransitionTime": existing["lastTransitionTime"]}
                break
        return {**condition, "lastTransitionTime": format_time(self.clock.now())}
