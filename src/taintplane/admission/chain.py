"""The admission chain: plugins run in order; the first refusal ends the request."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from taintplane.api.scheme import ResourceType

__all__ = ["Attributes", "Chain", "Forbidden", "Lookup", "Plugin"]


class Forbidden(Exception):
    """A plugin's refusal; ``reason`` is the text after ``is forbidden:``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Attributes:
    operation: str  # CREATE, UPDATE or DELETE
    resource: ResourceType
    namespace: str
    obj: dict[str, Any] | None  # the new object (mutable), None on DELETE
    old: dict[str, Any] | None  # the stored object, None on CREATE
    subresource: str = ""  # "status", "binding", ... ("" for the object itself)

    def is_pod(self) -> bool:
        """A write to a pod itself (not one of its subresources)."""
        return self.resource.group == "" and self.resource.kind == "Pod" and not self.subresource


class Lookup(Protocol):
    """Read access to the cluster for plugins (served from the store by the API server)."""

    async def list(self, api_version: str, kind: str) -> Sequence[dict[str, Any]]:
        """Every object of a cluster-scoped kind (read-only: they may be shared)."""
        ...


class Plugin(Protocol):
    name: str

    async def admit(self, attributes: Attributes) -> None:
        """Mutate ``attributes.obj`` or raise ``Forbidden``."""
        ...


class Chain:
    def __init__(self, plugins: Sequence[Plugin]) -> None:
        self.plugins = list(plugins)

    async def admit(self, attributes: Attributes) -> None:
        for plugin in self.plugins:
            await plugin.admit(attributes)
