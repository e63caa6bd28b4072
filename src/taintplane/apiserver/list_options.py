"""A list or watch request's resourceVersion options, checked as upstream's
ValidateListOptions (apimachinery/pkg/apis/meta/internalversion/validation) with the WatchList
feature on, as in v1.35."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from taintplane.api.field import FieldError, Path, aggregate_message
from taintplane.apiserver.status import APIError

__all__ = ["EXACT", "NOT_OLDER_THAN", "ListOptions", "validate_list_options"]

EXACT = "Exact"
NOT_OLDER_THAN = "NotOlderThan"


@dataclass(frozen=True)
class ListOptions:
    watch: bool
    resource_version: str
    resource_version_match: str
    #: None when the request did not say (a pointer in upstream's ListOptions).
    send_initial_events: bool | None
    continue_token: str


def validate_list_options(options: ListOptions) -> None:
    """422 ``ListOptions.meta.k8s.io "" is invalid: …`` for a combination upstream forbids."""
    errors = _watch_errors(options) if options.watch else _list_errors(options)
    if not errors:
        return
    causes = [{"reason": e.type.reason, "message": e.body, "field": e.field} for e in errors]
    # errors.NewInvalid with an empty name: details.name is omitempty.
    details: dict[str, Any] = {"group": "meta.k8s.io", "kind": "ListOptions", "causes": causes}
    message = f'ListOptions.meta.k8s.io "" is invalid: {aggregate_message(errors)}'
    raise APIError.make(422, "Invalid", message, details)


_MATCH = Path.root("resourceVersionMatch")
_SEND_INITIAL_EVENTS = Path.root("sendInitialEvents")


def _list_errors(options: ListOptions) -> list[FieldError]:
    match_path = _MATCH
    errors: list[FieldError] = []
    match = options.resource_version_match
    if match:
        if not options.resource_version:
            detail = "resourceVersionMatch is forbidden unless resourceVersion is provided"
            errors.append(FieldError.forbidden(match_path, detail))
        if options.continue_token:
            detail = "resourceVersionMatch is forbidden when continue is provided"
            errors.append(FieldError.forbidden(match_path, detail))
        if match not in (EXACT, NOT_OLDER_THAN):
            errors.append(FieldError.not_supported(match_path, match, [EXACT, NOT_OLDER_THAN, ""]))
        if match == EXACT and options.resource_version == "0":
            detail = 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
            errors.append(FieldError.forbidden(match_path, detail))
    if options.send_initial_events:
        detail = "sendInitialEvents is forbidden for list"
        errors.append(FieldError.forbidden(_SEND_INITIAL_EVENTS, detail))
    return errors


def _watch_errors(options: ListOptions) -> list[FieldError]:
    match_path = _MATCH
    errors: list[FieldError] = []
    match = options.resource_version_match
    if options.send_initial_events is not None and match != NOT_OLDER_THAN:
        detail = "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
        errors.append(FieldError.forbidden(match_path, detail))
    if match:
        if options.send_initial_events is None:
            detail = (
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
            )
            errors.append(FieldError.forbidden(match_path, detail))
        if match != NOT_OLDER_THAN:
            errors.append(FieldError.not_supported(match_path, match, [NOT_OLDER_THAN]))
        if options.continue_token:
            detail = "resourceVersionMatch is forbidden when continue is provided"
            errors.append(FieldError.forbidden(match_path, detail))
    return errors
