"""Connects the admission chain to the registry: lookups read through it (cluster-scoped
lists cached); the mutating and validating phases are the registry's two hooks; refusals
become 403 Forbidden statuses, plain errors 500s as upstream."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from taintplane.admission import Attributes, Chain, Forbidden, NotFound, Rejected
from taintplane.admission.default_toleration_seconds import DefaultTolerationSeconds
from taintplane.admission.extended_resource_toleration import ExtendedResourceToleration
from taintplane.admission.node_restriction import NodeRestriction
from taintplane.admission.plugins import AdmissionSetup
from taintplane.admission.pod_node_selector import PodNodeSelector
from taintplane.admission.pod_toleration_restriction import PodTolerationRestriction
from taintplane.admission.priority import SYSTEM_PRIORITY_CLASSES, Priority
from taintplane.admission.runtime_class import RuntimeClass
from taintplane.admission.taint_nodes_by_condition import TaintNodesByCondition
from taintplane.api.scheme import ResourceType, Scheme
from taintplane.apiserver.auth.guard import CURRENT_USER
from taintplane.apiserver.dra_admin_access import authorized_for_admin
from taintplane.apiserver.registry import Admit, Registry
from taintplane.apiserver.status import APIError

__all__ = [
    "RegistryLookup",
    "admitted",
    "create_system_priority_classes",
    "install_admission",
]

_ADMITTED: ContextVar[bool] = ContextVar("admitted", default=False)


@contextmanager
def admitted() -> Iterator[None]:
    """Writes made on behalf of a request admission has already passed: upstream's
    EvictionREST admits the Eviction, then updates and deletes the pod through the store,
    below admission (a node evicting its own pod is not a node updating pod status)."""
    token = _ADMITTED.set(True)
    try:
        yield
    finally:
        _ADMITTED.reset(token)


class RegistryLookup:
    def __init__(self, registry: Registry, scheme: Scheme) -> None:
        self.registry = registry
        self.scheme = scheme

    async def list(self, api_version: str, kind: str) -> Sequence[dict[str, Any]]:
        resource = self.scheme.by_kind(api_version, kind)
        if resource is None or resource.namespaced:
            raise LookupError(f"no cluster-scoped kind {kind} in {api_version}")
        return await self.registry.list_cached(resource)

    async def get(
        self, api_version: str, kind: str, name: str, namespace: str = ""
    ) -> dict[str, Any] | None:
        resource = self.scheme.by_kind(api_version, kind)
        if resource is None:
            raise LookupError(f"no kind {kind} in {api_version}")
        try:
            return await self.registry.get(resource, namespace if resource.namespaced else "", name)
        except APIError as error:
            if error.code == 404:
                return None
            raise


def install_admission(
    registry: Registry,
    scheme: Scheme,
    *,
    not_ready_seconds: int = 300,
    unreachable_seconds: int = 300,
    setup: AdmissionSetup | None = None,
) -> Chain:
    """The plugin chain ``setup`` enables (upstream's default-on plugins without one), wired
    as the registry's admission hook."""
    setup = setup or AdmissionSetup()
    lookup = RegistryLookup(registry, scheme)
    chain = Chain(
        setup.select(
            [
                NodeRestriction(lookup),
                TaintNodesByCondition(),
                PodNodeSelector(lookup, setup.node_selectors),
                Priority(lookup),
                DefaultTolerationSeconds(not_ready_seconds, unreachable_seconds),
                PodTolerationRestriction(lookup, setup.toleration_restriction),
                ExtendedResourceToleration(),
                RuntimeClass(lookup),
            ]
        )
    )

    def phase(run: Callable[[Attributes], Awaitable[None]]) -> Admit:
        async def hook(
            operation: str,
            resource: ResourceType,
            namespace: str,
            obj: dict[str, Any] | None,
            old: dict[str, Any] | None,
            subresource: str = "",
        ) -> None:
            if _ADMITTED.get():
                return
            user = CURRENT_USER.get()
            try:
                await run(Attributes(operation, resource, namespace, obj, old, subresource, user))
            except Forbidden as refusal:
                name = refusal.name
                if name is None:
                    name = _admission_name(obj or old)
                raise _forbidden(resource, name, refusal.reason) from refusal
            except NotFound as missing:
                raise APIError.not_found(missing.plural, missing.name) from missing
            except Rejected as refusal:
                # A plain error upstream: ErrorToAPIStatus makes it a 500 with no reason.
                status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
                raise APIError({**status, "message": refusal.message, "code": 500}) from refusal

        return hook

    validate_chain = phase(chain.validate)

    async def validate(
        operation: str,
        resource: ResourceType,
        namespace: str,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        subresource: str = "",
    ) -> None:
        # Part of the claim strategies' validation upstream, not a plugin: always on.
        if operation == "CREATE" and obj is not None and not subresource:
            errors = await authorized_for_admin(lookup, resource, namespace, obj)
            if errors:
                name = str((obj.get("metadata") or {}).get("name") or "")
                raise APIError.invalid(resource, name, errors)
        await validate_chain(operation, resource, namespace, obj, old, subresource)

    registry.admit = phase(chain.mutate)
    registry.validate_admission = validate
    return chain


def _admission_name(obj: dict[str, Any] | None) -> str:
    """The name admission.NewForbidden reports: the object's, else its generateName (a
    mutating plugin runs before the name is generated)."""
    metadata = (obj or {}).get("metadata") or {}
    return str(metadata.get("name") or metadata.get("generateName") or "")


def _forbidden(resource: ResourceType, name: str, reason: str) -> APIError:
    if name:
        return APIError.forbidden(resource, name, reason)
    # errors.NewForbidden without a name: "<resource> is forbidden: ..." and details.name "".
    unnamed = APIError.forbidden(resource, "", reason)
    unnamed.status["message"] = f"{resource.group_resource} is forbidden: {reason}"
    return unnamed


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
