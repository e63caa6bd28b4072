"""Zones and their health (``handleDisruption``): per-zone tainting queues whose rate follows
the zone's state, and the whole-cluster "master disruption" mode in which nothing is tainted."""

from __future__ import annotations

import enum
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from taintplane.clock import Clock
from taintplane.controllers.nodelifecycle.queue import RateLimitedTimedQueue
from taintplane.controllers.stability import alpha, stable

if TYPE_CHECKING:
    from taintplane.controllers.nodelifecycle.controller import NodeLifecycleConfig

__all__ = ["NodeCollectorMetrics", "ZoneState", "Zones", "zone_key"]

log = logging.getLogger(__name__)


class ZoneState(enum.StrEnum):
    INITIAL = "Initial"
    NORMAL = "Normal"
    FULL_DISRUPTION = "FullDisruption"
    PARTIAL_DISRUPTION = "PartialDisruption"


def zone_key(node: dict[str, Any]) -> str:
    """``GetZoneKey``: region and zone labels (beta ones first), or "" without either."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    zone = labels.get(
        "failure-domain.beta.kubernetes.io/zone", labels.get("topology.kubernetes.io/zone", "")
    )
    region = labels.get(
        "failure-domain.beta.kubernetes.io/region",
        labels.get("topology.kubernetes.io/region", ""),
    )
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


@dataclass
class NodeCollectorMetrics:
    registry: CollectorRegistry
    zone_health: Gauge = field(init=False)
    zone_size: Gauge = field(init=False)
    unhealthy: Gauge = field(init=False)
    evictions: Counter = field(init=False)

    def __post_init__(self) -> None:
        sub, reg = "node_collector", self.registry
        self.zone_health = Gauge(
            "zone_health",
            alpha("Gauge measuring percentage of healthy nodes per zone."),
            ["zone"],
            subsystem=sub,
            registry=reg,
        )
        self.zone_size = Gauge(
            "zone_size",
            alpha("Gauge measuring number of registered Nodes per zones."),
            ["zone"],
            subsystem=sub,
            registry=reg,
        )
        self.unhealthy = Gauge(
            "unhealthy_nodes_in_zone",
            alpha("Gauge measuring number of not Ready Nodes per zones."),
            ["zone"],
            subsystem=sub,
            registry=reg,
        )
        self.evictions = Counter(
            "evictions",
            stable(
                "Number of Node evictions that happened since current instance of "
                "NodeController started."
            ),
            ["zone"],
            subsystem=sub,
            registry=reg,
        )


class Zones:
    def __init__(
        self, clock: Clock, config: NodeLifecycleConfig, metrics: NodeCollectorMetrics
    ) -> None:
        self.clock = clock
        self.config = config
        self.metrics = metrics
        self.states: dict[str, ZoneState] = {}
        self.tainters: dict[str, RateLimitedTimedQueue] = {}

    def add_if_new(self, node: dict[str, Any]) -> None:
        """``addPodEvictorForNewZone``: a zone without a state gets state Initial and a
        tainting queue whose bucket is full, at the normal rate.

        A zone whose nodes are all excluded from disruption checks loses its state on every
        pass, so this runs again on the next one. Upstream then swaps in a new, empty queue;
        its nodes are queued again in an order that varies from pass to pass. Ours would not
        vary, and a node already tainted would take every pass's token from the next one, so
        we keep the queue (which remembers the nodes already tainted) and give it the fresh
        bucket only."""
        zone = zone_key(node)
        if zone in self.states:
            return
        self.states[zone] = ZoneState.INITIAL
        rate = self.config.node_eviction_rate
        tainter = self.tainters.get(zone)
        if tainter is None:
            self.tainters[zone] = RateLimitedTimedQueue(self.clock, rate)
        else:
            tainter.refill_limiter(rate)
        self.metrics.evictions.labels(zone).inc(0)

    def tainter_for(self, node: dict[str, Any]) -> RateLimitedTimedQueue:
        """The zone's tainting queue; zones keep theirs even when their state is dropped."""
        zone = zone_key(node)
        if zone not in self.tainters:
            self.add_if_new(node)
        return self.tainters[zone]

    def compute_zone_state(self, conditions: list[dict[str, Any] | None]) -> tuple[int, ZoneState]:
        ready = sum(1 for c in conditions if c is not None and c.get("status") == "True")
        not_ready = len(conditions) - ready
        if ready == 0 and not_ready > 0:
            return not_ready, ZoneState.FULL_DISRUPTION
        if (
            not_ready > 2
            and not_ready / (not_ready + ready) >= self.config.unhealthy_zone_threshold
        ):
            return not_ready, ZoneState.PARTIAL_DISRUPTION
        return not_ready, ZoneState.NORMAL

    def rate_for(self, state: ZoneState, zone_size: int) -> float:
        if state == ZoneState.PARTIAL_DISRUPTION:
            if zone_size > self.config.large_cluster_size_threshold:
                return self.config.secondary_node_eviction_rate
            return 0.0
        return self.config.node_eviction_rate  # Normal, and FullDisruption of one zone

    async def handle_disruption(
        self,
        zone_conditions: dict[str, list[dict[str, Any] | None]],
        nodes: list[dict[str, Any]],
        mark_reachable: Callable[[dict[str, Any]], Awaitable[bool]],
        restart_health: Callable[[], None],
    ) -> None:
        new_states: dict[str, ZoneState] = {}
        all_fully_disrupted = True
        for zone, conditions in zone_conditions.items():
            unhealthy, state = self.compute_zone_state(conditions)
            size = len(conditions)
            self.metrics.zone_size.labels(zone).set(size)
            self.metrics.unhealthy.labels(zone).set(unhealthy)
            self.metrics.zone_health.labels(zone).set(
                100.0 * (size - unhealthy) / size if size else 100.0
            )
            if state != ZoneState.FULL_DISRUPTION:
                all_fully_disrupted = False
            new_states[zone] = state
            self.states.setdefault(zone, ZoneState.INITIAL)
        all_were_fully_disrupted = True
        for zone in list(self.states):
            if zone not in zone_conditions:
                # Upstream keeps the zone's tainting queue ("zones do not get removed"):
                # nodes excluded from disruption checks are still queued and tainted there.
                self.metrics.zone_size.labels(zone).set(0)
                self.metrics.zone_health.labels(zone).set(100.0)
                self.metrics.unhealthy.labels(zone).set(0)
                del self.states[zone]
                continue
            if self.states[zone] != ZoneState.FULL_DISRUPTION:
                all_were_fully_disrupted = False
        if all_fully_disrupted and all_were_fully_disrupted:
            return
        if all_fully_disrupted:
            log.info("all nodes are not ready: entering master disruption mode")
            for node in nodes:
                await mark_reachable(node)
            for zone in self.states:
                self.tainters[zone].swap_limiter(0.0)
                self.states[zone] = ZoneState.FULL_DISRUPTION
            return
        if all_were_fully_disrupted:
            log.info("some nodes are ready: exiting master disruption mode")
            restart_health()
            for zone in self.states:
                rate = self.rate_for(new_states[zone], len(zone_conditions[zone]))
                self.tainters[zone].swap_limiter(rate)
                self.states[zone] = new_states[zone]
            return
        for zone, state in list(self.states.items()):
            new = new_states[zone]
            if state == new:
                continue
            self.tainters[zone].swap_limiter(self.rate_for(new, len(zone_conditions[zone])))
            self.states[zone] = new
