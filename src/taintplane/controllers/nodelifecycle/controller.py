"""The node lifecycle controller (upstream ``nodelifecycle``), on a clock.

Every ``node_monitor_period`` it reviews each node's health: a node whose Lease and Ready
heartbeat have not moved for ``node_monitor_grace_period`` (``node_startup_grace_period``
if it never posted status) has Ready, MemoryPressure, DiskPressure and PIDPressure set to
Unknown. On the *next* review — upstream acts on the condition it observed before this
review's own change — a node that is not Ready is queued for a NoExecute taint
(``node.kubernetes.io/not-ready`` or ``unreachable``); queues are per zone and rate-limited
according to the zone's health, and when every zone is fully disrupted nothing is tainted and
existing NoExecute condition taints are lifted. On every node change the NoSchedule taints
that mirror conditions (and ``unschedulable``) are reconciled, and the beta OS and
architecture labels made equal to the stable ones.

Upstream re-tries its rate-limited queues every 100 ms; we wake exactly when a token or an
item falls due, which is the same up to that tick.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from prometheus_client import CollectorRegistry

from taintplane.api.wellknown import TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE
from taintplane.client import ApiError, Client, resource
from taintplane.client.events import EventRecorder
from taintplane.client.queue_metrics import QueueMetrics
from taintplane.client.shared import SharedInformers
from taintplane.client.workqueue import WorkQueue
from taintplane.clock import Clock, sleep_or_wake
from taintplane.controllers.nodelifecycle.conditions import (
    ready_condition,
    schedule_taints_wanted,
)
from taintplane.controllers.nodelifecycle.health import NodeHealthTracker
from taintplane.controllers.nodelifecycle.labels import reconcile_labels
from taintplane.controllers.nodelifecycle.pods import mark_pods_not_ready
from taintplane.controllers.nodelifecycle.queue import RateLimitedTimedQueue, TimedValue
from taintplane.controllers.nodelifecycle.taints import has_taint, swap_taints
from taintplane.controllers.nodelifecycle.zones import (
    NodeCollectorMetrics,
    Zones,
    ZoneState,
    zone_key,
)

__all__ = [
    "NodeLifecycleConfig",
    "NodeLifecycleController",
    "PassElision",
    "ZoneState",
    "zone_key",
]

log = logging.getLogger(__name__)

NODES = resource("", "v1", "nodes")
PODS = resource("", "v1", "pods")
COMPONENT = "node-controller"
NO_EXECUTE = "NoExecute"
EXCLUDE_DISRUPTION_LABEL = "node.kubernetes.io/exclude-disruption"


class PassElision(Protocol):
    """Under a virtual clock, what lets monitor passes over a steady cluster be skipped
    (``taintplane.sim.steady``): such a pass would only note that every lease moved."""

    def nlc_pass(self) -> bool:
        """Whether this pass is elided."""
        ...

    async def nlc_idle(self) -> None:
        """After an elided pass: return once elision ends, at the instant of the next pass
        the controller's own schedule has then (the passes between are elided too)."""
        ...

    def take_catch_up(self) -> tuple[datetime, datetime, list[str]] | None:
        """After elided passes: (the last renewal one of them saw, the first pass that saw
        it, the nodes renewed then), to be noted as those passes would have."""
        ...


@dataclass
class NodeLifecycleConfig:
    """kube-controller-manager's flags, with their defaults."""

    node_monitor_period: float = 5.0
    node_monitor_grace_period: float = 50.0
    node_startup_grace_period: float = 60.0
    node_eviction_rate: float = 0.1
    secondary_node_eviction_rate: float = 0.01
    large_cluster_size_threshold: int = 50
    unhealthy_zone_threshold: float = 0.55


class NodeLifecycleController:
    def __init__(
        self,
        client: Client,
        clock: Clock,
        informers: SharedInformers,
        config: NodeLifecycleConfig | None = None,
        *,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.client = client
        self.clock = clock
        self.config = config or NodeLifecycleConfig()
        self.nodes = informers.nodes
        self.pods = informers.pods
        self.leases = informers.informer("coordination.k8s.io", "v1", "leases")
        self.recorder = EventRecorder(client, clock, COMPONENT)
        self.metrics = NodeCollectorMetrics(registry or CollectorRegistry())
        self.health = NodeHealthTracker(self.config)
        self.known: dict[str, dict[str, Any]] = {}
        self.zones = Zones(clock, self.config, self.metrics)
        self._wake = asyncio.Event()
        #: Set by the cluster under a virtual clock (None: every pass runs in full).
        self.elision: PassElision | None = None
        self._background: set[asyncio.Future[None]] = set()
        self.node_queue = WorkQueue(clock, name="node_lifecycle_controller")
        # Upstream's podUpdateQueue: a pod newly bound to a node is looked at once. Ours is
        # looked at in the informer callback, so only the queue's metrics are kept, counted
        # where client-go's queue would count them.
        self.pod_queue_metrics = QueueMetrics(clock, "node_lifecycle_controller_pods")
        self.nodes.add_handlers(
            lambda n: self.node_queue.add(n["metadata"]["name"]),
            lambda old, new: self.node_queue.add(new["metadata"]["name"]),
        )
        self.pods.add_handlers(self._pod_changed, self._pod_updated)

    def adopt(self, nodes: list[dict[str, Any]]) -> None:
        """Nodes a copy of a cluster starts with (what-if's): known as the cluster's own
        controller knows them, so the first pass neither tells RegisteredNode for each nor
        lifts their NoExecute condition taints (markNodeAsReachable) — what a restarted
        controller does, and the copied cluster's controller did not restart."""
        for node in nodes:
            self.known.setdefault(node["metadata"]["name"], node)

    # ---- running -----------------------------------------------------------------------------

    async def run(self) -> None:
        tasks = [
            asyncio.create_task(self.node_queue.run(self._node_pass), name="nlc-node-pass"),
            asyncio.create_task(self._tainting_loop(), name="nlc-no-execute"),
        ]
        try:
            while True:
                if self.elision is None:
                    await self.monitor_node_health()
                elif self.elision.nlc_pass():
                    await self.elision.nlc_idle()
                    continue
                else:
                    self.catch_up(self.elision.take_catch_up())
                    await self.monitor_node_health()
                await self.clock.sleep(self.config.node_monitor_period)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    # ---- elided passes -------------------------------------------------------------------------

    def steady(self, names: set[str]) -> bool:
        """Whether a pass would find nothing to do as long as the nodes ``names`` (and only
        they) renew their leases: every node known, Ready, without a NoExecute condition
        taint to lift, every zone Normal and nothing queued."""
        if set(self.nodes.cache) != names or len(self.node_queue) or set(self.known) != names:
            return False
        if any(state != ZoneState.NORMAL for state in self.zones.states.values()):
            return False
        if any(len(tainter) for tainter in self.zones.tainters.values()):
            return False
        for name, node in self.nodes.cache.items():
            record = self.health.records.get(name)
            ready = ready_condition(node)
            if record is None or record.ready is None or ready is None:
                return False
            if ready.get("status") != "True" or record.ready.get("status") != "True":
                return False
            if has_taint(node, TAINT_NODE_UNREACHABLE, NO_EXECUTE) or has_taint(
                node, TAINT_NODE_NOT_READY, NO_EXECUTE
            ):
                return False
        return True

    def catch_up(self, seen: tuple[datetime, datetime, list[str]] | None) -> None:
        """Note what elided passes saw: the lease renewed at ``renewed`` (and the Ready
        heartbeat posted by then) first seen by the pass at ``probe``."""
        if seen is None:
            return
        renewed, probe, names = seen
        for name in names:
            record = self.health.records.get(name)
            node = self.nodes.get(name)
            if record is None or node is None:
                continue
            record.lease_renew = renewed
            record.probe = probe
            record.ready = copy.deepcopy(ready_condition(node))

    # ---- on every node change: NoSchedule taints that mirror conditions, beta labels --------

    async def _node_pass(self, name: str) -> None:
        node = self.nodes.get(name)
        if node is None:
            return
        add, remove = schedule_taints_wanted(node)
        if add or remove:
            await swap_taints(self.client, node, add, remove, self.clock.now())
        await reconcile_labels(self.client, node)

    # ---- pods bound to nodes that are not ready ----------------------------------------------

    def _pod_changed(self, pod: dict[str, Any]) -> None:
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            return
        key = f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"
        self.pod_queue_metrics.add(key)
        self.pod_queue_metrics.get(key)
        node = self.nodes.get(node_name)
        ready = ready_condition(node) if node else None
        if node is not None and (ready is None or ready.get("status") != "True"):
            task = asyncio.ensure_future(self.mark_pods_not_ready([pod], node_name))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
            task.add_done_callback(lambda _: self.pod_queue_metrics.done(key))
            return
        self.pod_queue_metrics.done(key)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if (old.get("spec") or {}).get("nodeName") != (new.get("spec") or {}).get("nodeName"):
            self._pod_changed(new)

    async def mark_pods_not_ready(self, pods: list[dict[str, Any]], node_name: str) -> None:
        await mark_pods_not_ready(self.client, self.recorder, self.clock, pods, node_name)

    # ---- health ------------------------------------------------------------------------------

    async def monitor_node_health(self) -> None:
        nodes = list(self.nodes.cache.values())
        names = {n["metadata"]["name"] for n in nodes}
        for node in nodes:
            name = node["metadata"]["name"]
            self.zones.add_if_new(node)
            if name not in self.known:
                self.known[name] = node
                await self._node_event(
                    node, "RegisteredNode", f"Registered Node {name} in Controller"
                )
                await self.mark_node_as_reachable(node)
        for name in [n for n in self.known if n not in names]:
            # Its health record stays, as upstream's nodeHealthMap keeps it: a node created
            # again under this name inherits the probe time of the one deleted.
            gone = self.known.pop(name)
            await self._node_event(gone, "RemovingNode", f"Removing Node {name} from Controller")

        zone_conditions: dict[str, list[dict[str, Any] | None]] = {}
        for cached in nodes:
            updated, observed, current = await self._update_health(cached)
            if updated is None:
                continue
            node = updated
            labels = node["metadata"].get("labels") or {}
            if EXCLUDE_DISRUPTION_LABEL not in labels:
                zone_conditions.setdefault(zone_key(node), []).append(current)
            if current is None:
                continue
            await self._taint_based_eviction(node, observed)
            if current.get("status") != "True" and observed.get("status") == "True":
                name = node["metadata"]["name"]
                await self._node_event(node, "NodeNotReady", "", status_change=True)
                await self.mark_pods_not_ready(self.pods.by_index("node", name), name)
        await self.zones.handle_disruption(
            zone_conditions,
            nodes,
            self.mark_node_as_reachable,
            lambda: self.health.restart(names, self.clock.now()),
        )
        self._wake.set()

    async def _update_health(
        self, node: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, dict[str, Any], dict[str, Any] | None]:
        """``tryUpdateNodeHealth`` with upstream's retries on conflict."""
        for _ in range(5):
            name = node["metadata"]["name"]
            lease = self.leases.get(f"kube-node-lease/{name}")
            observed, current, updated = self.health.review(node, lease, self.clock.now())
            if updated is None:
                return node, observed, current
            try:
                fresh = await self.client.update(NODES, updated, subresource="status")
                self.health.written(name, fresh, self.clock.now())
                return fresh, observed, current
            except ApiError as error:
                if error.code == 404:
                    return None, observed, current
                if error.code != 409:
                    log.info("updating the health of node %s failed: %s", name, error)
                    return None, observed, current
                try:
                    node = await self.client.get(NODES, name)
                except ApiError:
                    return None, observed, current
        return None, {}, None

    async def _node_event(
        self, node: dict[str, Any], reason: str, what: str, *, status_change: bool = False
    ) -> None:
        name = node["metadata"]["name"]
        reference = {
            "kind": "Node",
            "name": name,
            "uid": node["metadata"].get("uid", ""),
            "apiVersion": "v1",
        }
        message = (
            f"Node {name} status is now: {reason}"
            if status_change
            else f"Node {name} event: {what}"
        )
        self.recorder.event(node, "Normal", reason, message, reference=reference)

    # ---- NoExecute tainting ------------------------------------------------------------------

    def _zone_for(self, node: dict[str, Any]) -> RateLimitedTimedQueue:
        return self.zones.tainter_for(node)

    async def _taint_based_eviction(self, node: dict[str, Any], observed: dict[str, Any]) -> None:
        status = observed.get("status")
        now = self.clock.now()
        if status == "False":
            if has_taint(node, TAINT_NODE_UNREACHABLE, NO_EXECUTE):
                await swap_taints(
                    self.client,
                    node,
                    [(TAINT_NODE_NOT_READY, NO_EXECUTE)],
                    [(TAINT_NODE_UNREACHABLE, NO_EXECUTE)],
                    now,
                )
            else:
                self._mark_for_tainting(node, TAINT_NODE_NOT_READY)
        elif status == "Unknown":
            if has_taint(node, TAINT_NODE_NOT_READY, NO_EXECUTE):
                await swap_taints(
                    self.client,
                    node,
                    [(TAINT_NODE_UNREACHABLE, NO_EXECUTE)],
                    [(TAINT_NODE_NOT_READY, NO_EXECUTE)],
                    now,
                )
            else:
                self._mark_for_tainting(node, TAINT_NODE_UNREACHABLE)
        elif status == "True":
            await self.mark_node_as_reachable(node)

    def _mark_for_tainting(self, node: dict[str, Any], key: str) -> bool:
        tainter = self._zone_for(node)
        name = node["metadata"]["name"]
        if not has_taint(node, key, NO_EXECUTE):
            tainter.remove(name)
        added = tainter.add(name, str(node["metadata"].get("uid", "")))
        self._wake.set()
        return added

    async def mark_node_as_reachable(self, node: dict[str, Any]) -> bool:
        remove = [
            (key, NO_EXECUTE)
            for key in (TAINT_NODE_UNREACHABLE, TAINT_NODE_NOT_READY)
            if has_taint(node, key, NO_EXECUTE)
        ]
        if remove:
            await swap_taints(self.client, node, [], remove, self.clock.now())
        return self._zone_for(node).remove(node["metadata"]["name"])

    async def _taint_one(self, item: TimedValue) -> tuple[bool, float]:
        node = self.nodes.get(item.value)
        if node is None:
            return True, 0.0
        ready = ready_condition(node)
        if ready is None:
            return False, 0.05
        status = ready.get("status")
        if status == "False":
            add, opposite = TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE
        elif status == "Unknown":
            add, opposite = TAINT_NODE_UNREACHABLE, TAINT_NODE_NOT_READY
        else:
            return True, 0.0  # ready again: nothing to do
        done = await swap_taints(
            self.client, node, [(add, NO_EXECUTE)], [(opposite, NO_EXECUTE)], self.clock.now()
        )
        if done:
            self.metrics.evictions.labels(zone_key(node)).inc()
        return done, 0.0

    async def _tainting_loop(self) -> None:
        while True:
            self._wake.clear()
            for tainter in list(self.zones.tainters.values()):
                await tainter.try_each(self._taint_one)
            waits = [w for t in self.zones.tainters.values() if (w := t.next_due()) is not None]
            await sleep_or_wake(self.clock, min(waits) if waits else None, self._wake)
