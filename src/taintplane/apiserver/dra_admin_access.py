"""Admin access to devices needs a labelled namespace (``pkg/registry/resource``'s
``AuthorizedForAdmin``).

Creating a ResourceClaim or ResourceClaimTemplate with a request that asks for
``exactly.adminAccess: true`` (subrequests cannot) is refused unless the namespace carries
``resource.kubernetes.io/admin-access: "true"``. Upstream's strategies check this in their
synchronous Validate; here the namespace read is asynchronous, so the check runs right after
the strategy's validation, still before validating admission: a claim with other invalid
fields is refused for those first. Updates are not checked (the spec is immutable), and with
DRAAdminAccess off the strategies have already dropped the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taintplane.admission import Lookup
from taintplane.api.field import ErrorType, FieldError, Path
from taintplane.api.scheme import ResourceType

__all__ = ["ADMIN_ACCESS_LABEL", "authorized_for_admin"]

ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
_KINDS = ("ResourceClaim", "ResourceClaimTemplate")


def _claim_spec(resource: ResourceType, obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    if resource.kind == "ResourceClaimTemplate":
        inner = spec.get("spec")
        return inner if isinstance(inner, dict) else {}
    return spec


def _admin_access_path(resource: ResourceType, obj: Mapping[str, Any]) -> Path | None:
    """The first request asking for admin access. Upstream names it
    ``spec.devices.requests[i].adminAccess`` for templates too, without ``exactly``."""
    devices = _claim_spec(resource, obj).get("devices")
    requests = devices.get("requests") if isinstance(devices, dict) else None
    for i, request in enumerate(requests if isinstance(requests, list) else []):
        exactly = request.get("exactly") if isinstance(request, dict) else None
        if isinstance(exactly, dict) and exactly.get("adminAccess") is True:
            return Path.root("spec", "devices", "requests").index(i).child("adminAccess")
    return None


async def authorized_for_admin(
    lookup: Lookup, resource: ResourceType, namespace: str, obj: Mapping[str, Any]
) -> list[FieldError]:
    if resource.group != "resource.k8s.io" or resource.kind not in _KINDS:
        return []
    path = _admin_access_path(resource, obj)
    if path is None:
        return []
    found = await lookup.get("v1", "Namespace", namespace)
    if found is None:
        detail = (
            "could not retrieve namespace to verify admin access: "
            f'namespaces "{namespace}" not found'
        )
        return [FieldError(ErrorType.INTERNAL, str(path), detail=detail)]
    labels = (found.get("metadata") or {}).get("labels") or {}
    if labels.get(ADMIN_ACCESS_LABEL) != "true":
        detail = (
            f"admin access to devices requires the `{ADMIN_ACCESS_LABEL}: true` label on the "
            "containing namespace"
        )
        return [FieldError.forbidden(path, detail)]
    return []
