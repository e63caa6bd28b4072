"""The controller manager: shared informers and the controllers that read them.

``taintplane up`` runs one in-process; each controller is named as in kube-controller-manager
(``--controllers``) so a cluster can run a subset.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from prometheus_client import CollectorRegistry

from taintplane.api.features import DRA_DEVICE_TAINTS, FeatureGates
from taintplane.client import Client
from taintplane.client.ratelimit import rate_limited
from taintplane.client.shared import SharedInformers
from taintplane.clock import Clock
from taintplane.controllers.clusterroleaggregation import ClusterRoleAggregationController
from taintplane.controllers.daemonset import DaemonSetController
from taintplane.controllers.deployment import DeploymentController
from taintplane.controllers.devicetainteviction import DeviceTaintEvictionController
from taintplane.controllers.disruption import DisruptionController
from taintplane.controllers.garbagecollector import GarbageCollector
from taintplane.controllers.namespace import NamespaceController
from taintplane.controllers.nodelifecycle import NodeLifecycleConfig, NodeLifecycleController
from taintplane.controllers.podgc import PodGCController
from taintplane.controllers.replicaset import ReplicaSetController
from taintplane.controllers.resourceclaim import ResourceClaimController
from taintplane.controllers.tainteviction import TaintEvictionController

__all__ = ["ALL_CONTROLLERS", "ControllerConfig", "ControllerManager"]

log = logging.getLogger(__name__)


class Controller(Protocol):
    async def run(self) -> None: ...


@dataclass
class ControllerConfig:
    features: FeatureGates = field(default_factory=FeatureGates)
    #: Which controllers run (kube-controller-manager's names).
    controllers: Sequence[str] | None = None  # None: every controller
    extra: dict[str, Any] = field(default_factory=dict)
    node_lifecycle: NodeLifecycleConfig = field(default_factory=NodeLifecycleConfig)
    #: Give the controllers that have one their client-side rate limit (see _resource_claim).
    client_rate_limits: bool = True


class ControllerManager:
    def __init__(
        self,
        client: Client,
        clock: Clock,
        config: ControllerConfig | None = None,
        *,
        registry: CollectorRegistry | None = None,
        informers: SharedInformers | None = None,
    ) -> None:
        self.client = client
        self.clock = clock
        self.config = config or ControllerConfig()
        self.registry = registry or CollectorRegistry()
        # `taintplane up` shares one set of informers (one cache per kind) among its
        # components; a controller manager on its own keeps its own.
        self._own_informers = informers is None
        self.informers = informers or SharedInformers(client, clock=clock)
        self.controllers: dict[str, Controller] = {}
        for name in self.config.controllers or ALL_CONTROLLERS:
            factory = _FACTORIES.get(name)
            if factory is None:
                raise ValueError(f"unknown controller {name!r}; known: {', '.join(_FACTORIES)}")
            if not all(self.config.features.enabled(g) for g in _REQUIRED_GATES.get(name, ())):
                log.info("%s disabled: its feature gates are off", name)
                continue
            self.controllers[name] = factory(self)

    async def run(self) -> None:
        self.informers.start()
        tasks: list[asyncio.Task[None]] = []
        try:
            await self.informers.wait_synced()
            tasks = [
                asyncio.create_task(controller.run(), name=name)
                for name, controller in self.controllers.items()
            ]
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self._own_informers:
                await self.informers.stop()


Factory = Callable[[ControllerManager], Controller]


def _taint_eviction(m: ControllerManager) -> Controller:
    return TaintEvictionController(
        m.client,
        m.clock,
        m.informers,
        registry=m.registry,
        comparison_operators=m.config.features.enabled("TaintTolerationComparisonOperators"),
    )


def _node_lifecycle(m: ControllerManager) -> Controller:
    return NodeLifecycleController(
        m.client, m.clock, m.informers, m.config.node_lifecycle, registry=m.registry
    )


def _daemonset(m: ControllerManager) -> Controller:
    return DaemonSetController(
        m.client,
        m.clock,
        m.informers,
        comparison_operators=m.config.features.enabled("TaintTolerationComparisonOperators"),
    )


def _podgc(m: ControllerManager) -> Controller:
    threshold = int(m.config.extra.get("terminated-pod-gc-threshold", 12500))
    return PodGCController(
        m.client, m.clock, m.informers, terminated_pod_threshold=threshold, registry=m.registry
    )


def _resource_claim(m: ControllerManager) -> Controller:
    # Its own client with kube-controller-manager's client-side limit (20 qps, burst 30): a
    # Deployment whose pods are evicted as soon as they are bound (a device taint tolerated
    # for less time than has passed since timeAdded) is replaced at the pace at which this
    # controller can make and clean up claims, as upstream's, not in a burst at one instant.
    client = rate_limited(m.client, m.clock) if m.config.client_rate_limits else m.client
    return ResourceClaimController(client, m.clock, m.informers)


def _device_taint_eviction(m: ControllerManager) -> Controller:
    return DeviceTaintEvictionController(
        m.client,
        m.clock,
        m.informers,
        registry=m.registry,
        device_taint_rules=m.config.features.device_taint_rules,
    )


_FACTORIES: dict[str, Factory] = {
    "taint-eviction-controller": _taint_eviction,
    "device-taint-eviction-controller": _device_taint_eviction,
    "replicaset-controller": lambda m: ReplicaSetController(m.client, m.clock, m.informers),
    "deployment-controller": lambda m: DeploymentController(m.client, m.clock, m.informers),
    "node-lifecycle-controller": _node_lifecycle,
    "daemonset-controller": _daemonset,
    "pod-garbage-collector-controller": _podgc,
    "garbage-collector-controller": lambda m: GarbageCollector(m.client, m.clock, m.informers),
    "namespace-controller": lambda m: NamespaceController(m.client, m.clock, m.informers),
    "disruption-controller": lambda m: DisruptionController(m.client, m.clock, m.informers),
    "resourceclaim-controller": _resource_claim,
    "clusterrole-aggregation-controller": lambda m: ClusterRoleAggregationController(
        m.client, m.clock, m.informers
    ),
}

ALL_CONTROLLERS: tuple[str, ...] = tuple(_FACTORIES)

#: A controller's descriptor's ``requiredFeatureGates``: without them it does not start.
_REQUIRED_GATES: dict[str, tuple[str, ...]] = {
    "device-taint-eviction-controller": (DRA_DEVICE_TAINTS,),
}
