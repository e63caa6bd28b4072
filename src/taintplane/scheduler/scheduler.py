"""The scheduler: watches pods and nodes, places pending pods, binds them through the API.

One scheduling cycle at a time (filters and scores run in memory on a consistent view of the
cluster); binding runs in the background, as upstream's binding cycle does, after the pod is
*assumed* on its node so the next cycle already counts it. A failed cycle records
``PodScheduled=False``/``Unschedulable`` with the ``0/N nodes are available`` message and a
``FailedScheduling`` event, and parks the pod until an event might help it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from taintplane.api.decoding import format_time
from taintplane.api.features import FeatureGates
from taintplane.client import ApiError, Client, Informer, resource
from taintplane.client.event_series import NOTE_LENGTH_LIMIT, SeriesEventRecorder
from taintplane.client.shared import SharedInformers
from taintplane.clock import Clock
from taintplane.scheduler.cycle import Decision, Placement, nodes_to_find
from taintplane.scheduler.events import assigned_pod_update_events
from taintplane.scheduler.framework import CycleState, Framework
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names
from taintplane.scheduler.plugins.dynamic_resources import DraCaches, DynamicResources
from taintplane.scheduler.plugins.image_locality import ImageLocality
from taintplane.scheduler.plugins.inter_pod_affinity import InterPodAffinity, NamespaceLabels
from taintplane.scheduler.plugins.node_affinity import NodeAffinity
from taintplane.scheduler.plugins.node_name import NodeName
from taintplane.scheduler.plugins.node_ports import NodePorts
from taintplane.scheduler.plugins.node_resources import (
    NodeResourcesBalancedAllocation,
    NodeResourcesFit,
)
from taintplane.scheduler.plugins.node_unschedulable import NodeUnschedulable
from taintplane.scheduler.plugins.pod_topology_spread import PodTopologySpread
from taintplane.scheduler.plugins.spread_defaults import SpreadListers, watch_owners
from taintplane.scheduler.plugins.taint_toleration import TaintToleration
from taintplane.scheduler.preemption import DefaultPreemption
from taintplane.scheduler.queue import ClusterEvent, Hints, SchedulingQueue

__all__ = ["DEFAULT_SCHEDULER", "Scheduler", "default_framework", "nodes_to_find"]

log = logging.getLogger(__name__)

DEFAULT_SCHEDULER = "default-scheduler"
#: PodScheduled=False reasons (v1.PodReasonUnschedulable, v1.PodReasonSchedulerError).
UNSCHEDULABLE = "Unschedulable"
SCHEDULER_ERROR = "SchedulerError"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"

NODES = resource("", "v1", "nodes")
PODS = resource("", "v1", "pods")
NAMESPACES = resource("", "v1", "namespaces")
PDBS = resource("policy", "v1", "poddisruptionbudgets")
RESOURCE_CLAIMS = resource("resource.k8s.io", "v1", "resourceclaims")
RESOURCE_SLICES = resource("resource.k8s.io", "v1", "resourceslices")
DEVICE_CLASSES = resource("resource.k8s.io", "v1", "deviceclasses")
DEVICE_TAINT_RULES = resource("resource.k8s.io", "v1alpha3", "devicetaintrules")


def default_framework(
    features: FeatureGates | None = None,
    dra: DynamicResources | None = None,
    namespace_labels: NamespaceLabels | None = None,
    spread: SpreadListers | None = None,
) -> Framework:
    """The default profile's plugins that exist here, in upstream's order and weights.

    DynamicResources always runs: DynamicResourceAllocation is GA (on by default) in 1.35, and
    no gate for it exists here. Its PostFilter runs before DefaultPreemption's, as upstream's.
    """
    gates = features or FeatureGates()
    plugins = [
        NodeUnschedulable(),
        NodeName(),
        TaintToleration(comparison_operators=gates.comparison_operators),
        NodeAffinity(),
        NodePorts(),
        NodeResourcesFit(),
        PodTopologySpread(spread or SpreadListers()),
        InterPodAffinity(namespace_labels),
        dra or DynamicResources(),
        DefaultPreemption(),
        NodeResourcesBalancedAllocation(),
        ImageLocality(),
    ]
    weights = {
        names.TAINT_TOLERATION: 3,
        names.NODE_AFFINITY: 2,
        names.NODE_RESOURCES_FIT: 1,
        names.NODE_RESOURCES_BALANCED_ALLOCATION: 1,
        names.POD_TOPOLOGY_SPREAD: 2,
        names.INTER_POD_AFFINITY: 2,
        names.IMAGE_LOCALITY: 1,
    }
    return Framework(plugins, weights)


def queueing_hints(framework: Framework) -> Hints:
    """Each plugin's ``queueing_hints()`` (EnqueueExtensions), by plugin name."""
    found: dict[str, Any] = {}
    for plugin in framework.plugins:
        hints = getattr(plugin, "queueing_hints", None)
        if hints is not None:
            found[plugin.name] = hints()  # type: ignore[attr-defined]
    return found


class Scheduler:
    def __init__(
        self,
        client: Client,
        clock: Clock,
        *,
        features: FeatureGates | None = None,
        scheduler_name: str = DEFAULT_SCHEDULER,
        percentage_of_nodes_to_score: int = 0,
        seed: int | None = None,
        informers: SharedInformers | None = None,
    ) -> None:
        self.client = client
        self.clock = clock
        self.name = scheduler_name
        self.dra_caches = DraCaches()
        gates = features or FeatureGates()
        self.dra = DynamicResources(
            self.dra_caches,
            client,
            device_taints=gates.device_taints,
            device_taint_rules=gates.device_taint_rules,
        )
        # PodTopologySpread's system defaults select by the pod's Services and owner.
        self.spread_listers = SpreadListers()
        self.framework = default_framework(
            features, self.dra, self._namespace_labels, self.spread_listers
        )
        self.placement = Placement(
            self.framework,
            percentage=percentage_of_nodes_to_score,
            seed=seed,
            budgets=lambda: list(self.pdb_informer.cache.values()),
        )
        # The placement's own maps, which the informer handlers keep current.
        self.nodes = self.placement.nodes
        self.nominated = self.placement.nominated
        self.queue = SchedulingQueue(
            clock, {names.DYNAMIC_RESOURCES: self.dra.pre_enqueue}, queueing_hints(self.framework)
        )
        self._assumed: dict[str, str] = {}  # pod key -> node, until the binding is seen
        self._placed: dict[str, str] = {}  # pod key -> the node whose accounting holds it
        self.recorder = SeriesEventRecorder(
            client, clock, scheduler_name, f"{scheduler_name}-taintplane"
        )
        self._bindings: set[asyncio.Task[None]] = set()
        # Bindings in flight at once (upstream binds in goroutines under client rate limits):
        # enough to keep the API busy, few enough that a burst does not pile up thousands of
        # requests in the transport.
        self._binding_slots = asyncio.Semaphore(64)
        # Shared with the other components of `taintplane up` (one cache per kind); a
        # scheduler on its own keeps its own.
        self._own_informers = informers is None
        self.informers = informers or SharedInformers(client, clock=clock)
        self.node_informer = self.informers.nodes
        self.node_informer.add_handlers(self._node_added, self._node_updated, self._node_deleted)
        self.pod_informer = self.informers.pods
        self.pod_informer.add_handlers(
            self._active_pod_added, self._active_pod_updated, self._active_pod_deleted
        )
        # Budgets weigh preemption's choice of victims (their status, kept by the
        # disruption controller, says how many disruptions each still allows).
        self.pdb_informer = self.informers.of(PDBS)
        self.namespace_informer = self.informers.of(NAMESPACES)
        # DynamicResources reads claims, slices, classes and DeviceTaintRules from these; its
        # assumed claims follow the claim informer (the assume cache's event handlers).
        self.informers.of(RESOURCE_CLAIMS).add_handlers(
            self.dra.claim_changed, self.dra.claim_updated, self.dra.claim_deleted
        )
        # Claims, slices and classes raise events when added or updated only: DynamicResources,
        # the one plugin that registers them, registers no deletion (upstream's handlers are
        # built for the action types registered).
        self.dra_informers = [
            self._dra_informer(RESOURCE_CLAIMS, ClusterEvent.RESOURCE_CLAIM, deletes=False),
            self._dra_informer(RESOURCE_SLICES, ClusterEvent.RESOURCE_SLICE, deletes=False),
            self._dra_informer(DEVICE_CLASSES, ClusterEvent.DEVICE_CLASS, deletes=False),
        ]
        self.dra_caches.claims, self.dra_caches.slices, self.dra_caches.classes = (
            informer.cache for informer in self.dra_informers
        )
        # Without DRADeviceTaintRules the API is not served and upstream's slice tracker
        # does not watch rules.
        if gates.device_taint_rules:
            rules = self._dra_informer(DEVICE_TAINT_RULES, ClusterEvent.DEVICE_TAINT_RULE)
            self.dra_informers.append(rules)
            self.dra_caches.rules = rules.cache
        self.spread_informers = watch_owners(self.informers, self.spread_listers)

    def _namespace_labels(self, namespace: str) -> dict[str, str]:
        """For namespaceSelector in pod affinity terms (upstream's namespace lister)."""
        found = self.namespace_informer.cache.get(namespace) or {}
        return dict((found.get("metadata") or {}).get("labels") or {})

    def _dra_informer(self, rt: Any, event: str, *, deletes: bool = True) -> Informer:
        """The informer of a DRA kind, whose changes reach the queue with the objects before
        and after, for DynamicResources' hints. A DeviceTaintRule's deletion is an event (it
        changes the slices it tainted)."""

        def added(obj: dict[str, Any]) -> None:
            self.queue.on_event(event, None, obj)

        def updated(old: dict[str, Any], new: dict[str, Any]) -> None:
            self.queue.on_event(event, old, new)

        def deleted(obj: dict[str, Any]) -> None:
            self.queue.on_event(event, obj, None)

        informer = self.informers.of(rt)
        informer.add_handlers(added, updated, deleted if deletes else None)
        return informer

    # ---- running ---------------------------------------------------------------------------

    async def run(self) -> None:
        self.informers.start()
        recording = asyncio.create_task(self.recorder.run())
        try:
            await self.node_informer.synced.wait()
            await self.pod_informer.synced.wait()
            for informer in self.dra_informers + self.spread_informers:
                await informer.synced.wait()
            while True:
                pod = await self.queue.pop()
                await self.schedule_one(pod)
        finally:
            recording.cancel()
            for task in self._bindings:
                task.cancel()
            await asyncio.gather(recording, *self._bindings, return_exceptions=True)
            if self._own_informers:
                await self.informers.stop()

    # ---- informer handlers -----------------------------------------------------------------

    def _responsible(self, pod: dict[str, Any]) -> bool:
        spec = pod.get("spec") or {}
        return (spec.get("schedulerName") or DEFAULT_SCHEDULER) == self.name

    def _node_added(self, node: dict[str, Any]) -> None:
        info = NodeInfo.of(node)
        existing = self.nodes.get(info.name)
        self.nodes[info.name] = existing.with_node(node) if existing else info
        self.placement.nodes_changed(info.name)
        self.queue.on_event(ClusterEvent.NODE_ADD, None, self.nodes[info.name])

    def _node_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        before = self.nodes.get(new["metadata"]["name"])
        after = before.with_node(new) if before else NodeInfo.of(new)
        self.nodes[after.name] = after
        self.placement.nodes_changed(after.name)
        if before is None:
            self.queue.on_event(ClusterEvent.NODE_ADD, None, after)
            return
        # upstream's nodeSchedulingPropertiesChange: a status report that changes none of these
        # (heartbeats, condition timestamps, images) raises no event, so it wakes no pod.
        if before.taints != after.taints:
            self.queue.on_event(ClusterEvent.NODE_TAINT, before, after)
        if before.labels != after.labels:
            self.queue.on_event(ClusterEvent.NODE_LABEL, before, after)
        if before.unschedulable != after.unschedulable:
            self.queue.on_event(ClusterEvent.NODE_SCHEDULABLE, before, after)
        if before.allocatable != after.allocatable:
            self.queue.on_event(ClusterEvent.NODE_ALLOCATABLE, before, after)

    def _node_deleted(self, node: dict[str, Any]) -> None:
        self.nodes.pop(node["metadata"]["name"], None)
        self.placement.nodes_changed(node["metadata"]["name"])

    def _track_nomination(self, pod: dict[str, Any], info: PodInfo) -> None:
        node = (pod.get("status") or {}).get("nominatedNodeName")
        if node and not info.node_name and not pod["metadata"].get("deletionTimestamp"):
            self.nominated[info.key] = (str(node), info)
        else:
            self.nominated.pop(info.key, None)

    # Upstream's pod informer lists and watches with the field selector
    # ``status.phase!=Succeeded,status.phase!=Failed`` (newPodInformer): a finished pod is
    # never seen, and one that finishes arrives as a delete of its last running version,
    # which frees its node's room and moves waiting pods on AssignedPodDelete. The informer
    # here is shared with components that need every pod, so its events are filtered the
    # same way (client-go's FilteringResourceEventHandler) instead.

    def _active_pod_added(self, pod: dict[str, Any]) -> None:
        if not _finished(pod):
            self._pod_added(pod)

    def _active_pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        was_active, is_active = not _finished(old), not _finished(new)
        if was_active and is_active:
            self._pod_updated(old, new)
        elif is_active:
            self._pod_added(new)
        elif was_active:
            self._pod_deleted(old)

    def _active_pod_deleted(self, pod: dict[str, Any]) -> None:
        if not _finished(pod):
            self._pod_deleted(pod)

    def _pod_added(self, pod: dict[str, Any]) -> None:
        info = PodInfo.of(pod)
        self._track_nomination(pod, info)
        if info.node_name:
            # New on its node, or the binding of a pod this scheduler assumed there: upstream
            # sees either as an assigned pod added (the pods waiting for it were parked
            # before the assume, which raises nothing).
            landed = self._placed.get(info.key) != info.node_name or info.key in self._assumed
            self._assumed.pop(info.key, None)
            node = self.nodes.get(info.node_name)
            if node is None:
                node = self.nodes[info.node_name] = NodeInfo(info.node_name, {}, {}, (), True, {})
                self.placement.nodes_changed(info.node_name)
            node.add_pod(info)
            self._placed[info.key] = info.node_name
            self.placement.touched(info.node_name)
            if landed:
                # Upstream's AssignedPodAdd: pods waiting for it (pod affinity, topology
                # spread) may fit now.
                self.queue.on_event(ClusterEvent.ASSIGNED_POD_ADD, None, info)
        elif self._responsible(pod) and not pod["metadata"].get("deletionTimestamp"):
            self.queue.add(info)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        info = PodInfo.of(new)
        self._track_nomination(new, info)
        if info.node_name:
            if info.key in self.queue:
                self.queue.delete(info.key)
            self._forget_elsewhere(info)
            self._pod_added(new)
            if (old.get("spec") or {}).get("nodeName") == info.node_name:
                self._assigned_pod_updated(old, new, info)
        elif info.key in self._assumed:
            # Assumed on a node, its binding not seen yet: as upstream's
            # updatePodInSchedulingQueue, an update (a relabel, say) must not queue it again.
            return
        elif (
            self._responsible(new)
            and not new["metadata"].get("deletionTimestamp")
            and _claim_statuses(old) != _claim_statuses(new)
        ):
            # The resource claim controller named a claim made from a template.
            before = PodInfo.of(old)
            self.queue.update(info, before, ClusterEvent.POD_GENERATED_CLAIM)
            self.queue.on_event(ClusterEvent.POD_GENERATED_CLAIM, before, info)
        elif (
            self._responsible(new)
            and not new["metadata"].get("deletionTimestamp")
            and (
                (old.get("spec") or {}) != (new.get("spec") or {})
                or old["metadata"].get("labels") != new["metadata"].get("labels")
            )
        ):
            # Its own change (say, a toleration added) may let it fit now, as its rejecting
            # plugins' hints say. As upstream, no other pending pod is asked: no hint queues
            # a pod for another unscheduled pod's change.
            self.queue.update(info, PodInfo.of(old))
        elif info.key in self.queue:
            # Its status changed (our own PodScheduled condition, say): the next attempt and
            # its events are about this version of the pod, as upstream's queue keeps it.
            self.queue.refresh(info)

    def _assigned_pod_updated(
        self, old: dict[str, Any], new: dict[str, Any], info: PodInfo
    ) -> None:
        """``updateAssignedPodInCache``: a placed pod relabelled (or its requests scaled down)
        may help the pods pod affinity or topology spread (or room) kept out. Its status
        reports, by far the most frequent updates, change neither and cost no parsing."""
        meta_old, meta_new = old.get("metadata") or {}, new.get("metadata") or {}
        if meta_old.get("labels") == meta_new.get("labels") and old.get("spec") == new.get("spec"):
            return
        before = PodInfo.of(old)
        for event in assigned_pod_update_events(before, info):
            self.queue.on_event(event, before, info)

    def _forget_elsewhere(self, info: PodInfo) -> None:
        """Drop the pod from the node it was counted on, if that is not its node now."""
        placed = self._placed.get(info.key)
        if placed and placed != info.node_name:
            node = self.nodes.get(placed)
            if node is not None:
                node.remove_pod(info.key)
                self.placement.touched(placed)
            del self._placed[info.key]

    def _pod_deleted(self, pod: dict[str, Any]) -> None:
        info = PodInfo.of(pod)
        nomination = self.nominated.pop(info.key, None)
        self.queue.delete(info.key)
        self._assumed.pop(info.key, None)
        placed = self._placed.pop(info.key, None)
        node = self.nodes.get(placed) if placed else None
        if node is not None and info.key in node.pods:
            node.remove_pod(info.key)
            self.placement.touched(node.name)
            self.queue.on_event(ClusterEvent.ASSIGNED_POD_DELETE, info, None)
        elif nomination is not None or (pod.get("status") or {}).get("nominatedNodeName"):
            # Upstream's deletePodFromSchedulingQueue: pods of lower or equal priority counted
            # the nominated pod as if it were on its node, so its going frees that room.
            self.queue.on_event(
                ClusterEvent.ASSIGNED_POD_DELETE, info, None, max_priority=info.priority
            )

    async def schedule_one(self, pod: PodInfo) -> None:
        decision = self.placement.decide(pod)
        if decision.error:
            # Not a rejection: no plugin to wait for, so the pod is retried after its backoff
            # (AddUnschedulableIfNotPresent with no rejector plugins), as upstream's.
            self.queue.error(pod)
            await self._record_failure(
                pod, decision.message, reason=SCHEDULER_ERROR, clear_nomination=True
            )
            return
        if not decision.node:
            rejected = decision.diagnosis.unschedulable_plugins if decision.diagnosis else set()
            self.queue.unschedulable(pod, rejected)
            if decision.state is not None:
                failed = await self.dra.write_deallocation(decision.state)
                if failed is not None:
                    log.info("deallocating a claim of %s failed: %s", pod.key, failed.message)
            if decision.nominated:
                await self._preempt(pod, decision.nominated, decision.victims)
            await self._record_failure(
                pod, decision.message, clear_nomination=decision.clear_nomination
            )
            return
        node = self.nodes[decision.node]
        state = decision.state or CycleState()
        failed = self.framework.run_reserve(state, pod, node.name)
        if failed is not None:
            self.framework.run_unreserve(state, pod, node.name)
            self.queue.error(pod)
            await self._record_failure(
                pod, failed.message, reason=SCHEDULER_ERROR, clear_nomination=True
            )
            return
        assumed = PodInfo.of(
            {**pod.pod, "spec": {**(pod.pod.get("spec") or {}), "nodeName": node.name}}
        )
        node.add_pod(assumed)
        self.placement.touched(node.name)
        self._assumed[pod.key] = node.name
        self._placed[pod.key] = node.name
        self.queue.done(pod.key)
        task = asyncio.create_task(self._bind(pod, node.name, state))
        self._bindings.add(task)
        task.add_done_callback(self._bindings.discard)

    async def _bind(self, pod: PodInfo, node: str, state: CycleState | None = None) -> None:
        async with self._binding_slots:
            if state is not None and self.framework.pre_binders:
                failed = await self.framework.run_pre_bind(state, pod, node)
                if failed is not None:
                    log.info("prebind of %s on %s failed: %s", pod.key, node, failed.message)
                    self.framework.run_unreserve(state, pod, node)
                    self._unassume(pod, node)
                    self.queue.error(pod)
                    await self._record_failure(
                        pod, failed.message, reason=SCHEDULER_ERROR, clear_nomination=True
                    )
                    return
            await self._bind_now(pod, node)

    async def _bind_now(self, pod: PodInfo, node: str) -> None:
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {
                "name": pod.name,
                "namespace": pod.namespace,
                "uid": pod.pod["metadata"].get("uid"),
            },
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        try:
            await self.client.post_subresource(PODS, pod.name, pod.namespace, "binding", binding)
        except ApiError as error:
            log.info("binding %s to %s failed: %s", pod.key, node, error)
            self._unassume(pod, node)
            if error.code != 404:
                self.queue.error(pod)
            return
        self._event(
            pod,
            "Normal",
            "Scheduled",
            "Binding",
            f"Successfully assigned {pod.namespace}/{pod.name} to {node}",
        )

    def _unassume(self, pod: PodInfo, node: str) -> None:
        if self._assumed.get(pod.key) == node:
            del self._assumed[pod.key]
            info = self.nodes.get(node)
            if info is not None:
                info.remove_pod(pod.key)
                self.placement.touched(node)
            self._placed.pop(pod.key, None)

    async def _preempt(self, pod: PodInfo, node: str, victims: Sequence[PodInfo]) -> None:
        """Make room as upstream's DefaultPreemption does: mark each victim with a
        DisruptionTarget condition, delete it (with its own grace period), tell it why, and
        record the node as the pod's ``status.nominatedNodeName``."""
        self.nominated[pod.key] = (node, pod)  # at once, before the status says so
        for victim in victims:
            condition: dict[str, Any] = {
                "type": "DisruptionTarget",
                "status": "True",
                "lastTransitionTime": format_time(self.clock.now()),
                "reason": PREEMPTION_BY_SCHEDULER,
                "message": f"{self.name}: preempting to accommodate a higher priority pod",
            }
            generation = victim.pod["metadata"].get("generation")
            if isinstance(generation, int) and generation:
                # CalculatePodConditionObservedGeneration (PodObservedGenerationTracking, GA
                # in 1.35): the victim's generation.
                condition["observedGeneration"] = generation
            try:
                await self.client.patch(
                    PODS,
                    victim.name,
                    {"status": {"conditions": [condition]}},
                    namespace=victim.namespace,
                    patch_type="strategic",
                    subresource="status",
                )
                await self.client.delete(PODS, victim.name, victim.namespace)
            except ApiError as error:
                if error.code != 404:
                    log.info("preempting %s failed: %s", victim.key, error)
                    return
            self._event(
                victim,
                "Normal",
                "Preempted",
                "Preempting",
                f"Preempted by pod {pod.pod['metadata'].get('uid')} on node {node}",
                related=pod,
            )
        try:
            await self.client.patch(
                PODS,
                pod.name,
                {"status": {"nominatedNodeName": node}},
                namespace=pod.namespace,
                patch_type="merge",
                subresource="status",
            )
        except ApiError as error:
            if error.code != 404:
                log.info("nominating %s for %s failed: %s", node, pod.key, error)

    # ---- reporting -------------------------------------------------------------------------

    async def _record_failure(
        self,
        pod: PodInfo,
        message: str,
        *,
        reason: str = UNSCHEDULABLE,
        clear_nomination: bool = False,
    ) -> None:
        """``handleSchedulingFailure``: the event, then ``updatePod``: PodScheduled=False with
        ``reason`` (Unschedulable for a rejection, SchedulerError for an error) and, when
        asked, nominatedNodeName cleared, in one status patch made only if either changes."""
        condition: dict[str, Any] = {
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": format_time(self.clock.now()),
            "reason": reason,
            "message": message,
        }
        generation = pod.pod["metadata"].get("generation")
        if isinstance(generation, int):
            # PodObservedGenerationTracking (GA in 1.35): CalculatePodConditionObservedGeneration.
            condition["observedGeneration"] = generation
        current = next(
            (
                c
                for c in (pod.pod.get("status") or {}).get("conditions") or []
                if c.get("type") == "PodScheduled"
            ),
            None,
        )
        if current is not None and current.get("status") == "False":
            # UpdatePodCondition keeps the transition time while the status stays the same
            # (from SchedulingGated, say).
            condition["lastTransitionTime"] = current.get("lastTransitionTime")
        fields = ("status", "reason", "message", "observedGeneration")
        status: dict[str, Any] = {}
        if current is None or any(current.get(f) != condition.get(f) for f in fields):
            status["conditions"] = [condition]
        if clear_nomination:
            self.nominated.pop(pod.key, None)
            if (pod.pod.get("status") or {}).get("nominatedNodeName"):
                status["nominatedNodeName"] = None
        if status:
            try:
                await self.client.patch(
                    PODS,
                    pod.name,
                    {"status": status},
                    namespace=pod.namespace,
                    patch_type="strategic",
                    subresource="status",
                )
            except ApiError as error:
                if error.code != 404:
                    log.info("recording the failure of %s failed: %s", pod.key, error)
        self._event(pod, "Warning", "FailedScheduling", "Scheduling", message)

    def _event(
        self,
        pod: PodInfo,
        kind: str,
        reason: str,
        action: str,
        note: str,
        *,
        related: PodInfo | None = None,
    ) -> None:
        """Record about ``pod``; ``related`` is the other pod of the action (the preemptor,
        for a victim's Preempted), None for Scheduled and FailedScheduling as upstream."""
        # Through the events library, as kube-scheduler records (never waits; repeats make a
        # series). truncateMessage: a note over events.k8s.io's 1 kB is cut and ends " ...".
        if len(note) > NOTE_LENGTH_LIMIT:
            note = note[: NOTE_LENGTH_LIMIT - 4] + " ..."
        reference = _pod_reference(related) if related is not None else None
        self.recorder.eventf(_pod_reference(pod), reference, kind, reason, action, note)

    def decide(self, pod: PodInfo, *, explain: bool = False) -> Decision:
        return self.placement.decide(pod, explain=explain)

    def explain(self, pod: dict[str, Any]) -> Decision:
        """Every node's verdict and the scores, for ``taintplane explain``."""
        return self.placement.decide(PodInfo.of(pod), explain=True)


def _pod_reference(pod: PodInfo) -> dict[str, Any]:
    """reference.GetReference of the pod as the scheduler holds it (its resourceVersion too)."""
    meta = pod.pod["metadata"]
    ref = {
        "kind": "Pod",
        "namespace": pod.namespace,
        "name": pod.name,
        "uid": meta.get("uid"),
        "apiVersion": "v1",
        "resourceVersion": meta.get("resourceVersion"),
    }
    return {k: v for k, v in ref.items() if v}


_FINISHED_PHASES = frozenset(("Succeeded", "Failed"))


def _finished(pod: dict[str, Any]) -> bool:
    """In a terminal phase: outside the scheduler's view, as upstream's field selector."""
    return (pod.get("status") or {}).get("phase") in _FINISHED_PHASES


def _claim_statuses(pod: dict[str, Any]) -> Any:
    return (pod.get("status") or {}).get("resourceClaimStatuses")
