"""The per-kind strategy: defaulting, preparation, validation and field selectors.

The generic registry calls a kind's strategy at fixed points, as kube-apiserver's
``rest.RESTCreateStrategy``/``RESTUpdateStrategy`` do: defaults, then ``prepare_for_create`` /
``prepare_for_update`` (which decide what a request may change, e.g. that the main resource
cannot write ``status``), then validation. Kinds without special rules use the base class.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from taintplane.api import names
from taintplane.api.features import FeatureGates
from taintplane.api.field import ErrorType, FieldError, Path
from taintplane.api.scheme import ResourceType
from taintplane.api.validation import validate_label_name, validate_labels

__all__ = ["Strategy", "meta", "spec_of"]

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024


def meta(obj: dict[str, Any]) -> dict[str, Any]:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
        obj["metadata"] = metadata
    return metadata


def spec_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


class Strategy:
    """Default behaviour for a kind; subclasses override what their kind does differently."""

    #: Name syntax: "subdomain" (most kinds), "label" (namespaces) or "path" (anything
    #: that is a valid path segment, as RBAC kinds allow).
    name_format = "subdomain"
    #: Kinds whose spec changes bump ``metadata.generation``.
    tracks_generation = False
    #: The metadata a status write may not change (its status strategy's reset fields
    #: beyond the spec): upstream's status strategies reset only the spec for most kinds,
    #: so labels, annotations, finalizers and owners written with a status are kept.
    status_resets_metadata: tuple[str, ...] = ()
    #: Whether the kind has a top-level ``spec`` (Go always serializes it, even empty, and
    #: JSON patches rely on it being there); ``status`` likewise when it is a subresource.
    has_spec = True

    def __init__(self, resource: ResourceType, features: FeatureGates) -> None:
        self.resource = resource
        self.features = features

    @property
    def has_status(self) -> bool:
        return self.resource.has_subresource("status")

    # ---- defaulting and preparation -------------------------------------------------------

    def default(self, obj: dict[str, Any]) -> None:
        """Fill in defaults (``SetDefaults_*``); runs on every write."""
        for field, present in (("spec", self.has_spec), ("status", self.has_status)):
            if present and obj.get(field) is None:
                obj[field] = {}

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        if self.tracks_generation:
            meta(obj)["generation"] = 1

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        """An update of the main resource cannot change status (when status is separate)."""
        if self.has_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        if self.tracks_generation:
            generation = int(meta(old).get("generation") or 1)
            if new.get("spec") != old.get("spec"):
                generation += 1
            meta(new)["generation"] = generation

    def prepare_for_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        """A status update changes only status (and leaves spec and most metadata alone)."""
        for key, value in old.items():
            if key not in ("status", "metadata"):
                new[key] = value
        for key in list(new):
            if key not in old and key not in ("status", "metadata", "apiVersion", "kind"):
                del new[key]
        new_meta, old_meta = meta(new), meta(old)
        for key in ("generation", *self.status_resets_metadata):
            if key in old_meta:
                new_meta[key] = old_meta[key]
            else:
                new_meta.pop(key, None)

    # ---- validation -----------------------------------------------------------------------

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return self.validate_object_meta(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        return self.validate(new)

    def validate_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        return self.validate_object_meta(new)

    def validate_object_meta(self, obj: dict[str, Any]) -> list[FieldError]:
        errors: list[FieldError] = []
        metadata = meta(obj)
        path = Path.root("metadata")
        name = metadata.get("name") or ""
        if not name:
            errors.append(
                FieldError.required(path.child("name"), "name or generateName is required")
            )
        else:
            errors += [
                FieldError.invalid(path.child("name"), name, m) for m in self.name_problems(name)
            ]
        namespace = metadata.get("namespace") or ""
        if self.resource.namespaced and not namespace:
            errors.append(FieldError.required(path.child("namespace")))
        if not self.resource.namespaced and namespace:
            errors.append(FieldError.forbidden(path.child("namespace"), "not allowed on this type"))
        labels = metadata.get("labels") or {}
        if isinstance(labels, dict):
            errors += validate_labels(
                {str(k): str(v) for k, v in labels.items()}, path.child("labels")
            )
        annotations = metadata.get("annotations") or {}
        if isinstance(annotations, dict):
            size = 0
            for key in sorted(annotations):
                errors += validate_label_name(str(key).lower(), path.child("annotations"))
                size += len(str(key)) + len(str(annotations[key]))
            if size > TOTAL_ANNOTATION_SIZE_LIMIT:
                errors.append(
                    FieldError(
                        ErrorType.TOO_LONG,
                        str(path.child("annotations")),
                        detail=f"may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes",
                    )
                )
        return errors

    def name_problems(self, name: str) -> list[str]:
        if self.name_format == "label":
            return _dns1123_label(name)
        if self.name_format == "path":
            return _path_segment(name)
        return names.is_dns1123_subdomain(name)

    # ---- selectors and deletion -----------------------------------------------------------

    def field_values(self, obj: Mapping[str, Any]) -> dict[str, str]:
        """The fields a field selector can name for this kind."""
        metadata = obj.get("metadata") or {}
        fields = {"metadata.name": str(metadata.get("name") or "")}
        if self.resource.namespaced:
            fields["metadata.namespace"] = str(metadata.get("namespace") or "")
        return fields

    def supports_field(self, field: str) -> bool:
        return field in self.field_values({})

    def grace_period_seconds(self, obj: Mapping[str, Any], requested: int | None) -> int:
        """How long a delete waits before the object goes (0: at once)."""
        return 0


_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"


def _dns1123_label(value: str) -> list[str]:
    problems = []
    if len(value) > 63:
        problems.append(names.max_len_error(63))
    if not re.fullmatch(_DNS1123_LABEL_FMT, value, re.ASCII):
        problems.append(
            names.regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
                "'-', and must start and end with an alphanumeric character",
                _DNS1123_LABEL_FMT,
                "my-name",
                "123-abc",
            )
        )
    return problems


def _path_segment(value: str) -> list[str]:
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]
