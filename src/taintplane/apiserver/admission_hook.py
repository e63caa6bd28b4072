"""Connects the admission chain to the registry: lookups read through its cached lists;
refusals become 403 Forbidden statuses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taintplane.admission import Attributes, Chain, Forbidden
from taintplane.admission.default_toleration_seconds import DefaultTolerationSeconds
from taintplane.admission.priority import SYSTEM_PRIORITY_CLASSES, Priority
from taintplane.admission.taint_nodes_by_condition import TaintNodesByCondition
from taintplane.api.scheme import ResourceType, Scheme
from taintplane.apiserver.registry import Registry
from taintplane.apiserver.status import APIError

__all__ = ["RegistryLookup", "create_system_priority_classes", "install_admission"]


class RegistryLookup:
    def __init__(self, registry: Registry, scheme: Scheme) -> None:
        self.registry = registry
        self.scheme = scheme

    async def list(self, api_version: str, kind: str) -> Sequence[dict[str, Any]]:
        resource = self.scheme.by_kind(api_version, kind)
        if resource is None or resource.namespaced:
            raise LookupError(f"no cluster-scoped kind {kind} in {api_version}")
        return await self.registry.list_cached(resource)


def install_admission(
    registry: Registry,
    scheme: Scheme,
    *,
    not_ready_seconds: int = 300,
    unreachable_seconds: int = 300,
) -> Chain:
    """The default plugin chain, wired as the registry's admission hook."""
    # Upstream's default-on plugins that concern us, in kube-apiserver's order.
    chain = Chain(
        [
            TaintNodesByCondition(),
            Priority(RegistryLookup(registry, scheme)),
            DefaultTolerationSeconds(not_ready_seconds, unreachable_seconds),
        ]
    )

    async def admit(
        operation: str,
        resource: ResourceType,
        namespace: str,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        subresource: str = "",
    ) -> None:
        try:
            await chain.admit(Attributes(operation, resource, namespace, obj, old, subresource))
        except Forbidden as refusal:
            name = str(((obj or old or {}).get("metadata") or {}).get("name") or "")
            raise APIError.forbidden(resource, name, refusal.reason) from refusal

    registry.admit = admit
    return chain


async def create_system_priority_classes(registry: Registry, scheme: Scheme) -> None:
    """The built-in classes every cluster has (system-node-critical, system-cluster-critical)."""
    resource = scheme.by_kind("scheduling.k8s.io/v1", "PriorityClass")
    assert resource is not None
    for name, (value, description) in SYSTEM_PRIORITY_CLASSES.items():
        body = {"metadata": {"name": name}, "value": value, "description": description}
        try:
            await registry.create(resource, "", body)
        except APIError as error:
            if error.code != 409:
                raise
