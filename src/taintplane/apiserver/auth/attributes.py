"""What a request asks to do, in authorization terms (k8s.io/apiserver's RequestInfo and
``authorizer.Attributes``), and upstream's Forbidden status for a denial."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from taintplane.admission.chain import UserInfo
from taintplane.apiserver.status import APIError

__all__ = ["Request", "forbidden", "request_attributes"]

_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch"}
_NAMESPACE_SUBRESOURCES = ("status", "finalize")
_PATH_SEGMENT = re.compile(r"^[^/%]+$")
_SELECTING = ("list", "watch", "deletecollection")


@dataclass(frozen=True)
class Request:
    """``authorizer.Attributes``: a resource request (``resource`` set) or a path."""

    user: UserInfo
    verb: str
    resource_request: bool = True
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""
    #: The ``fieldSelector`` of a list, watch or deletecollection (upstream's
    #: AuthorizeWithSelectors: the Node authorizer reads ``spec.nodeName`` in it).
    field_selector: str = ""


def _truthy(value: str | None) -> bool:
    return value in ("1", "t", "T", "TRUE", "true", "True")


def _name_from_field_selector(selector: str) -> str:
    """``metadata.name=x`` (or ``==``) among the terms: lists and watches of one object are
    authorized as that object."""
    for term in selector.split(","):
        for op in ("==", "="):
            key, sep, value = term.partition(op)
            if sep and "!" not in key and key.strip() == "metadata.name":
                value = value.strip()
                return value if value not in (".", "..") and _PATH_SEGMENT.match(value) else ""
    return ""


def request_attributes(user: UserInfo, method: str, path: str, query: Mapping[str, str]) -> Request:
    """Parse the path as upstream's RequestInfoFactory: ``/api/v1/...`` and
    ``/apis/GROUP/VERSION/...`` with at least a resource are resource requests; everything else
    is a non-resource request whose verb is the lower-cased method."""
    parts = [p for p in path.strip("/").split("/") if p]
    plain = Request(user, method.lower(), resource_request=False, path=path)
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return plain
    prefix, parts = parts[0], parts[1:]
    group = ""
    if prefix == "apis":
        if len(parts) < 3:
            return plain
        group, parts = parts[0], parts[1:]
    version, parts = parts[0], parts[1:]
    verb = _VERBS.get(method, "delete" if method == "DELETE" else "")
    if parts and parts[0] == "watch":  # the deprecated /watch/ paths
        verb, parts = "watch", parts[1:]
    namespace = ""
    if parts and parts[0] == "namespaces" and len(parts) > 1:
        namespace = parts[1]
        if len(parts) > 2 and parts[2] not in _NAMESPACE_SUBRESOURCES:
            parts = parts[2:]
    resource = parts[0] if parts else ""
    name = parts[1] if len(parts) >= 2 else ""
    subresource = parts[2] if len(parts) >= 3 else ""
    if not name and verb == "get":
        verb = "watch" if _truthy(query.get("watch")) else "list"
    if not name and verb in ("list", "watch"):
        name = _name_from_field_selector(query.get("fieldSelector", ""))
    if not name and verb == "delete":
        verb = "deletecollection"
    selector = query.get("fieldSelector", "") if verb in _SELECTING else ""
    return Request(
        user, verb, True, group, version, resource, subresource, namespace, name, path, selector
    )


def forbidden(request: Request, reason: str = "") -> APIError:
    """403 as upstream's authorization filter writes it (responsewriters.Forbidden)."""
    who = request.user.name
    if not request.resource_request:
        message = f'User "{who}" cannot {request.verb} path "{request.path}"'
    else:
        resource = request.resource
        if request.subresource:
            resource += "/" + request.subresource
        scope = (
            f'in the namespace "{request.namespace}"'
            if request.namespace
            else "at the cluster scope"
        )
        message = (
            f'User "{who}" cannot {request.verb} resource "{resource}" in API group '
            f'"{request.api_group}" {scope}'
        )
    if reason:
        message += ": " + reason
    qualified = request.resource
    if request.api_group and qualified:
        qualified += "." + request.api_group
    if not qualified:
        text = f"forbidden: {message}"
    elif request.name:
        text = f'{qualified} "{request.name}" is forbidden: {message}'
    else:
        text = f"{qualified} is forbidden: {message}"
    # errors.NewForbidden always has details, empty ({}) for a path.
    details: dict[str, str] = {}
    if request.name:
        details["name"] = request.name
    if request.api_group:
        details["group"] = request.api_group
    if request.resource:
        details["kind"] = request.resource
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
    return APIError(
        {**status, "message": text, "reason": "Forbidden", "details": details, "code": 403}
    )
