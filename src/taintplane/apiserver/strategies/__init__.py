"""Per-kind strategies, looked up by resource type."""

from __future__ import annotations

from taintplane.api.features import FeatureGates
from taintplane.api.scheme import ResourceType
from taintplane.apiserver.strategies.apps import (
    ControllerRevisionStrategy,
    DaemonSetStrategy,
    DeploymentStrategy,
    ReplicaSetStrategy,
)
from taintplane.apiserver.strategies.base import Strategy
from taintplane.apiserver.strategies.core import (
    EventStrategy,
    NamespaceStrategy,
    NodeStrategy,
    PriorityClassStrategy,
    RbacStrategy,
    RuntimeClassStrategy,
)
from taintplane.apiserver.strategies.pods import PodStrategy
from taintplane.apiserver.strategies.policy import PodDisruptionBudgetStrategy
from taintplane.apiserver.strategies.resource import (
    ClockedStrategy,
    DeviceClassStrategy,
    DeviceTaintRuleStrategy,
    ResourceClaimStrategy,
    ResourceClaimTemplateStrategy,
    ResourceSliceStrategy,
)
from taintplane.clock import Clock

__all__ = ["Strategy", "strategy_for"]

_BY_KIND: dict[tuple[str, str], type[Strategy]] = {
    ("", "Pod"): PodStrategy,
    ("", "Node"): NodeStrategy,
    ("", "Namespace"): NamespaceStrategy,
    ("", "Event"): EventStrategy,
    ("apps", "Deployment"): DeploymentStrategy,
    ("apps", "ReplicaSet"): ReplicaSetStrategy,
    ("apps", "DaemonSet"): DaemonSetStrategy,
    ("apps", "ControllerRevision"): ControllerRevisionStrategy,
    ("policy", "PodDisruptionBudget"): PodDisruptionBudgetStrategy,
    ("node.k8s.io", "RuntimeClass"): RuntimeClassStrategy,
    ("scheduling.k8s.io", "PriorityClass"): PriorityClassStrategy,
    ("rbac.authorization.k8s.io", "Role"): RbacStrategy,
    ("rbac.authorization.k8s.io", "RoleBinding"): RbacStrategy,
    ("rbac.authorization.k8s.io", "ClusterRole"): RbacStrategy,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): RbacStrategy,
    ("resource.k8s.io", "DeviceClass"): DeviceClassStrategy,
    ("resource.k8s.io", "ResourceSlice"): ResourceSliceStrategy,
    ("resource.k8s.io", "ResourceClaim"): ResourceClaimStrategy,
    ("resource.k8s.io", "ResourceClaimTemplate"): ResourceClaimTemplateStrategy,
    ("resource.k8s.io", "DeviceTaintRule"): DeviceTaintRuleStrategy,
}
_TRACKS_GENERATION = {
    "Pod",  # since PodObservedGenerationTracking (KEP-5067)
    "Deployment",
    "ReplicaSet",
    "DaemonSet",
    "PodDisruptionBudget",
    "DeviceTaintRule",
}


def strategy_for(
    resource: ResourceType, features: FeatureGates, clock: Clock | None = None
) -> Strategy:
    cls = _BY_KIND.get((resource.group, resource.kind), Strategy)
    strategy = cls(resource, features)
    if clock is not None and isinstance(strategy, ClockedStrategy):
        strategy.clock = clock  # timestamps a strategy writes (device taints' timeAdded)
    if resource.kind in _TRACKS_GENERATION:
        strategy.tracks_generation = True
    return strategy
