"""Connects the admission chain to the registry: lookups read the store; refusals become
403 Forbidden statuses."""

from __future__ import annotations

from typing import Any

from taintplane.admission import Attributes, Chain, Forbidden
from taintplane.admission.priority import SYSTEM_PRIORITY_CLASSES, Priority
from taintplane.api.scheme import ResourceType, Scheme
from taintplane.apiserver.registry import Registry
from taintplane.apiserver.status import APIError

__all__ = ["RegistryLookup", "create_system_priority_classes", "install_admission"]


def _resource(scheme: Scheme, group: str, kind: str) -> ResourceType:
    for resource in scheme:
        if resource.group == group and resource.kind == kind and resource.preferred:
            return resource
    raise LookupError(f"no resource for {group}/{kind}")


class RegistryLookup:
    def __init__(self, registry: Registry, scheme: Scheme) -> None:
        self.registry = registry
        self.scheme = scheme

    async def get(self, group: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return await self.registry.get(_resource(self.scheme, group, kind), namespace, name)
        except APIError as error:
            if error.code == 404:
                return None
            raise

    async def list(self, group: str, kind: str, namespace: str) -> list[dict[str, Any]]:
        return (await self.registry.list(_resource(self.scheme, group, kind), namespace)).items


def install_admission(registry: Registry, scheme: Scheme) -> Chain:
    """The default plugin chain, wired as the registry's admission hook."""
    chain = Chain([Priority(RegistryLookup(registry, scheme))])

    async def admit(
        operation: str,
        resource: ResourceType,
        namespace: str,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
    ) -> None:
        try:
            await chain.admit(Attributes(operation, resource, namespace, obj, old))
        except Forbidden as refusal:
            name = str(((obj or old or {}).get("metadata") or {}).get("name") or "")
            raise APIError.forbidden(resource, name, refusal.reason) from refusal

    registry.admit = admit
    return chain


async def create_system_priority_classes(registry: Registry, scheme: Scheme) -> None:
    """The built-in classes every cluster has (system-node-critical, system-cluster-critical)."""
    resource = _resource(scheme, "scheduling.k8s.io", "PriorityClass")
    for name, (value, description) in SYSTEM_PRIORITY_CLASSES.items():
        body = {"metadata": {"name": name}, "value": value, "description": description}
        try:
            await registry.create(resource, "", body)
        except APIError as error:
            if error.code != 409:
                raise
