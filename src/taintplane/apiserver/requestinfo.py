"""Turn a request path into what it addresses: group, version, resource, namespace, name,
subresource (``k8s.io/apiserver``'s RequestInfo)."""

from __future__ import annotations

from dataclasses import dataclass

from taintplane.api.scheme import ResourceType, Scheme
from taintplane.apiserver.status import APIError

__all__ = ["RequestInfo", "parse_resource_path"]


@dataclass(frozen=True, slots=True)
class RequestInfo:
    resource: ResourceType
    namespace: str
    name: str
    subresource: str


def parse_resource_path(
    scheme: Scheme, group: str, version: str, segments: list[str]
) -> RequestInfo:
    """``segments`` follow the group-version: ``[namespaces/<ns>/]<plural>[/<name>[/<sub>]]``."""
    namespace = ""
    if (
        len(segments) >= 3
        and segments[0] == "namespaces"
        and scheme.lookup(group, version, segments[2]) is not None
        and segments[2] not in ("status", "finalize")
    ):
        namespace = segments[1]
        segments = segments[2:]
    if not segments:
        raise APIError.route_not_found()
    plural = segments[0]
    resource = scheme.lookup(group, version, plural)
    if resource is None:
        raise APIError.route_not_found()
    name = segments[1] if len(segments) > 1 else ""
    subresource = segments[2] if len(segments) > 2 else ""
    if len(segments) > 3 or (subresource and not resource.has_subresource(subresource)):
        raise APIError.route_not_found()
    if namespace and not resource.namespaced:
        raise APIError.route_not_found()
    return RequestInfo(resource, namespace, name, subresource)
