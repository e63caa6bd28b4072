"""The checks every write goes through, in the registry's order: the body's type against the
kind's schema (``check_type``), the strategy's defaulting and preparation (``run_strategy``),
validation (``validate``) and the record of who set which fields in what is stored
(``record_fields``).
Each turns a failure into the Status kube-apiserver answers with."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from taintplane.api.decoding import DecodeError, format_time
from taintplane.api.scheme import ResourceType
from taintplane.apiserver import fieldmanager, typecheck, warning
from taintplane.apiserver.patch_shape import Shape
from taintplane.apiserver.status import APIError
from taintplane.apiserver.strict_decoding import NO_NOTES, DecodeNotes
from taintplane.clock import Clock

__all__ = [
    "Apply",
    "DecodeFailure",
    "cannot_handle",
    "check_type",
    "record_fields",
    "run_strategy",
    "validate",
]


class DecodeFailure(APIError):
    """The body could not be decoded into the kind (a type error, or unknown fields under
    ``fieldValidation=Strict``): a 400 for a create or an update, which a patch handler
    answers as its own 422 from ``detail``, the decoder's message."""

    def __init__(self, status: dict[str, Any], detail: str) -> None:
        super().__init__(status)
        self.detail = detail


@dataclass(frozen=True)
class Apply:
    """A server-side apply: the applied configuration and whether conflicts are overridden."""

    config: dict[str, Any]
    force: bool = False


def check_type(
    resource: ResourceType,
    obj: dict[str, Any],
    field_validation: str = "Warn",
    baseline: dict[str, Any] | None = None,
    notes: DecodeNotes = NO_NOTES,
    *,
    exact_baseline: bool = False,
    touched: Shape = None,
) -> None:
    """``obj`` is of the kind and version served at ``resource`` and every field has its
    schema's type. Unknown fields, and the duplicate fields ``notes`` found in the body, are
    refused under ``fieldValidation=Strict``; otherwise unknown fields are dropped, as
    decoding into the Go types does, and each finding is a warning under ``Warn``
    (handlers/create.go, update.go, patch.go: addStrictDecodingWarnings)."""
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if api_version and api_version != resource.api_version:
        raise APIError.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({resource.api_version})"
        )
    if kind and kind != resource.kind:
        raise APIError.bad_request(
            f"the kind in the data ({kind}) does not match the expected kind ({resource.kind})"
        )
    schema = typecheck.schemas()["kinds"].get(
        f"{resource.group}/{resource.version}/{resource.kind}"
    )
    if schema is None:
        return
    strict = field_validation == "Strict"
    try:
        report = typecheck.check_object(
            obj,
            schema,
            baseline,
            drop_unknown=not strict,
            duplicates=notes.inline if field_validation != "Ignore" else frozenset(),
            sorted_walk=notes.sorted_walk,
            exact_baseline=exact_baseline,
            touched=touched,
        )
    except typecheck.TypeCheckError as error:
        raise cannot_handle(resource, DecodeError(error.message)) from error
    if strict and (notes.leading or report.problems):
        found = ", ".join([*notes.leading_for_error, *report.problems])
        raise cannot_handle(resource, DecodeError(f"strict decoding error: {found}"))
    if field_validation == "Warn":
        for text in [*notes.leading, *report.problems]:
            warning.add(text)


def record_fields(
    clock: Clock,
    resource: ResourceType,
    new: dict[str, Any],
    old: dict[str, Any] | None,
    *,
    manager: str,
    apply: Apply | None,
    subresource: str,
    has_status: bool,
    merged: dict[str, Any] | None = None,
) -> None:
    """Record in ``metadata.managedFields`` (which holds the entries the write starts from)
    which fields ``manager`` set, in the object as it is stored: admitted and valid, so
    without what Go's encoder leaves out (empty optional maps and lists,
    ``typecheck.omit_empty``). An apply's changes are those of ``merged``, the object its
    configuration made before defaulting."""
    schema = typecheck.schemas()["kinds"].get(
        f"{resource.group}/{resource.version}/{resource.kind}"
    )
    if schema is not None:
        typecheck.omit_empty(new, schema, old)
    if subresource == "binding" or not manager:
        return
    now = format_time(clock.now())
    if apply is not None:
        fieldmanager.record_apply(
            new,
            old,
            apply.config,
            manager,
            resource.api_version,
            now,
            force=apply.force,
            skip_status=has_status,
            merged=merged,
        )
        fieldmanager.sync_last_applied(new, apply.config, manager)
    else:
        fieldmanager.record_update(
            new,
            old,
            manager,
            resource.api_version,
            now,
            subresource=subresource,
            skip_status=has_status,
        )


def run_strategy(resource: ResourceType, step: Callable[[], None]) -> None:
    """Run a strategy step (defaulting, preparing), its decoding errors answered as 400."""
    try:
        step()
    except DecodeError as error:
        raise cannot_handle(resource, error) from error


def validate(resource: ResourceType, name: str, check: Callable[[], Sequence[Any]]) -> None:
    """Run a validation: its field errors answered as 422 Invalid."""
    try:
        errors = check()
    except DecodeError as error:
        raise cannot_handle(resource, error) from error
    if errors:
        raise APIError.invalid(resource, name, errors)


def cannot_handle(resource: ResourceType, error: DecodeError) -> DecodeFailure:
    status = APIError.bad_request(
        f'{resource.kind} in version "{resource.version}" cannot be handled as a '
        f"{resource.kind}: {error.message}"
    ).status
    return DecodeFailure(status, error.message)
