"""The admission chain: plugins run in order; the first refusal ends the request."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from taintplane.api.scheme import ResourceType

__all__ = [
    "Attributes",
    "Chain",
    "Forbidden",
    "Lookup",
    "NotFound",
    "Plugin",
    "Rejected",
    "UserInfo",
]


class Forbidden(Exception):
    """A plugin's refusal; ``reason`` is the text after ``is forbidden:``.

    Without ``name`` the server names the object as upstream's ``admission.NewForbidden``
    does (its name, else its generateName); a plugin that calls ``errors.NewForbidden`` with
    the pod's name upstream passes that name as it stands (empty before name generation)."""

    def __init__(self, reason: str, *, name: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.name = name


class NotFound(Exception):
    """An object a plugin needs is missing, returned upstream as the lister's NotFound error
    (404 ``<plural> "<name>" not found``)."""

    def __init__(self, plural: str, name: str) -> None:
        super().__init__(f'{plural} "{name}" not found')
        self.plural = plural
        self.name = name


class Rejected(Exception):
    """A refusal upstream returns as a plain Go error, not a Status: the API server answers
    500 with no reason and the text alone (kubectl: ``Error from server: <text>``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class UserInfo:
    """Who sent the request, as authentication found it (``user.Info``)."""

    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""


@dataclass
class Attributes:
    operation: str  # CREATE, UPDATE or DELETE
    resource: ResourceType
    namespace: str
    obj: dict[str, Any] | None  # the new object (mutable), None on DELETE
    old: dict[str, Any] | None  # the stored object, None on CREATE
    subresource: str = ""  # "status", "binding", ... ("" for the object itself)
    user: UserInfo | None = None  # None when the server runs without --auth

    def is_pod(self) -> bool:
        """A write to a pod itself (not one of its subresources)."""
        return self.resource.group == "" and self.resource.kind == "Pod" and not self.subresource


class Lookup(Protocol):
    """Read access to the cluster for plugins (served from the store by the API server)."""

    async def list(self, api_version: str, kind: str) -> Sequence[dict[str, Any]]:
        """Every object of a cluster-scoped kind (read-only: they may be shared)."""
        ...

    async def get(
        self, api_version: str, kind: str, name: str, namespace: str = ""
    ) -> dict[str, Any] | None:
        """One object (read-only), or None when there is none by that name."""
        ...


class Plugin(Protocol):
    name: str

    async def admit(self, attributes: Attributes) -> None:
        """Mutate ``attributes.obj`` or raise ``Forbidden``."""
        ...


class Chain:
    """Upstream's two phases: every plugin's ``admit`` (mutating) in order, then every
    ``validate`` a plugin has (validating), in the same order, on the final object."""

    def __init__(self, plugins: Sequence[Plugin]) -> None:
        self.plugins = list(plugins)

    @property
    def names(self) -> list[str]:
        return [plugin.name for plugin in self.plugins]

    async def admit(self, attributes: Attributes) -> None:
        await self.mutate(attributes)
        await self.validate(attributes)

    async def mutate(self, attributes: Attributes) -> None:
        """The mutating phase (the API server runs it before name generation)."""
        for plugin in self.plugins:
            await plugin.admit(attributes)

    async def validate(self, attributes: Attributes) -> None:
        """The validating phase (after the strategy's own validation)."""
        for plugin in self.plugins:
            validate = getattr(plugin, "validate", None)
            if validate is not None:
                await validate(attributes)
