"""Kubernetes ``Status`` errors: one exception type, and the builders for each reason.

Every failure the API server reports goes through :class:`APIError`, whose ``status`` is the
``metav1.Status`` body (its ``code`` is the HTTP status). Store errors map to Statuses in
:func:`from_store_error`, the one table for that.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taintplane.api.field import FieldError, aggregate_message
from taintplane.api.scheme import ResourceType
from taintplane.store import errors as store_errors

__all__ = ["APIError", "from_store_error", "success", "too_large_resource_version"]


class APIError(Exception):
    def __init__(self, status: dict[str, Any]) -> None:
        super().__init__(status.get("message", ""))
        self.status = status

    @property
    def code(self) -> int:
        return int(self.status["code"])

    # ---- builders, named after apimachinery's errors.New* ---------------------------------

    @classmethod
    def make(
        cls,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
    ) -> APIError:
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
        }
        if details:
            status["details"] = details
        elif code in _ALWAYS_DETAILED:
            # Every 404 and 405 apimachinery builds carries details: NewNotFound and
            # NewMethodNotSupported name what was asked for, and NewGenericServerResponse (a
            # path or method the server does not serve) an empty object. Clients rely on it:
            # kubectl debug dereferences the details of the 404 for ephemeralcontainers.
            status["details"] = {}
        status["code"] = code
        return cls(status)

    @classmethod
    def route_not_found(cls) -> APIError:
        """NewGenericServerResponse(404): a path the server does not serve."""
        return cls.make(404, "NotFound", "the server could not find the requested resource")

    @classmethod
    def not_found(cls, resource: ResourceType | str, name: str) -> APIError:
        qualified = resource.group_resource if isinstance(resource, ResourceType) else resource
        details = {"name": name, "kind": _kind_of(resource)}
        if isinstance(resource, ResourceType) and resource.group:
            details = {"name": name, "group": resource.group, "kind": resource.plural}
        return cls.make(404, "NotFound", f'{qualified} "{name}" not found', details)

    @classmethod
    def already_exists(cls, resource: ResourceType, name: str) -> APIError:
        details: dict[str, Any] = {"name": name}
        if resource.group:
            details["group"] = resource.group
        details["kind"] = resource.plural
        return cls.make(
            409, "AlreadyExists", f'{resource.group_resource} "{name}" already exists', details
        )

    @classmethod
    def generate_name_conflict(cls, resource: ResourceType, name: str) -> APIError:
        """errors.NewGenerateNameConflict: every generated name tried was taken (the
        AlreadyExists Status, with its reason told and a retry after one second)."""
        status = cls.already_exists(resource, name).status
        status["message"] += ", the server was not able to generate a unique name for the object"
        status["details"]["retryAfterSeconds"] = 1
        return cls(status)

    @classmethod
    def conflict(cls, resource: ResourceType, name: str, why: str) -> APIError:
        details: dict[str, Any] = {"name": name}
        if resource.group:
            details["group"] = resource.group
        details["kind"] = resource.plural
        message = f'Operation cannot be fulfilled on {resource.group_resource} "{name}": {why}'
        return cls.make(409, "Conflict", message, details)

    @classmethod
    def conflict_binding(cls, name: str, why: str) -> APIError:
        message = f'Operation cannot be fulfilled on pods/binding "{name}": {why}'
        return cls.make(409, "Conflict", message, {"name": name, "kind": "pods/binding"})

    @classmethod
    def invalid(cls, resource: ResourceType, name: str, errors: Sequence[FieldError]) -> APIError:
        causes = [{"reason": e.type.reason, "message": e.body, "field": e.field} for e in errors]
        details: dict[str, Any] = {"name": name}
        if resource.group:
            details["group"] = resource.group
        details["kind"] = resource.kind
        details["causes"] = causes
        kind = f"{resource.kind}.{resource.group}" if resource.group else resource.kind
        message = f'{kind} "{name}" is invalid: {aggregate_message(errors)}'
        return cls.make(422, "Invalid", message, details)

    @classmethod
    def bad_request(cls, message: str) -> APIError:
        return cls.make(400, "BadRequest", message)

    @classmethod
    def method_not_allowed(cls, message: str) -> APIError:
        return cls.make(405, "MethodNotAllowed", message)

    @classmethod
    def unsupported_media_type(cls, content_type: str) -> APIError:
        return cls.make(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - "
            f"accepted media types include: application/json, application/yaml, "
            f"application/vnd.kubernetes.protobuf ({content_type})",
        )

    @classmethod
    def not_acceptable(cls, accept: str) -> APIError:
        return cls.make(
            406,
            "NotAcceptable",
            f"only the following media types are accepted: "
            f"application/json, application/yaml ({accept})",
        )

    @classmethod
    def too_large(cls, message: str = "the request is too large") -> APIError:
        return cls.make(413, "RequestEntityTooLarge", message)

    @classmethod
    def gone(cls, message: str) -> APIError:
        return cls.make(410, "Expired", message)

    @classmethod
    def forbidden(cls, resource: ResourceType, name: str, why: str) -> APIError:
        details: dict[str, Any] = {"name": name}
        if resource.group:
            details["group"] = resource.group
        details["kind"] = resource.plural
        message = f'{resource.group_resource} "{name}" is forbidden: {why}'
        return cls.make(403, "Forbidden", message, details)

    @classmethod
    def internal(cls, message: str) -> APIError:
        return cls.make(
            500,
            "InternalError",
            f"Internal error occurred: {message}",
            {"causes": [{"message": message}]},
        )


#: The codes whose Status always has a details object (see :meth:`APIError.make`).
_ALWAYS_DETAILED = frozenset({404, 405})


def _kind_of(resource: ResourceType | str) -> str:
    return resource.plural if isinstance(resource, ResourceType) else resource


def from_store_error(error: store_errors.StoreError, resource: ResourceType, name: str) -> APIError:
    if isinstance(error, store_errors.NotFound):
        return APIError.not_found(resource, name)
    if isinstance(error, store_errors.AlreadyExists):
        return APIError.already_exists(resource, name)
    if isinstance(error, store_errors.Conflict):
        return APIError.conflict(
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version "
            "and try again",
        )
    if isinstance(error, store_errors.Compacted):
        return APIError.gone(
            f"too old resource version: {error.requested} ({error.compact_revision})"
        )
    if isinstance(error, store_errors.FutureRevision):
        return too_large_resource_version(error)
    if isinstance(error, store_errors.TooLarge):
        return APIError.too_large("etcdserver: request is too large")
    return APIError.internal(str(error))


def too_large_resource_version(error: store_errors.FutureRevision) -> APIError:
    """The cacher's answer for a revision the store has not reached."""
    return APIError.make(
        504,
        "Timeout",
        f"Timeout: Too large resource version: {error.requested}, current: {error.current}",
        {
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
    )


def success(code: int = 200, details: dict[str, Any] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
    }
    if details:
        status["details"] = details
    status["code"] = code
    return status
