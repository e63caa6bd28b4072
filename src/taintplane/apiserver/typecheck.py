"""Structural decoding of request objects against the kind's schema, as Go's decoder does it.

Before any strategy reads an object, every field the schema knows must have the JSON type its
Go field has: a string where Go has a string, a list where Go has a slice, an integer (not
``5.0``) where Go has an int. A mismatch is the decode error kube-apiserver returns (400,
``json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type
[]v1.Container``). Fields the schema does not know are reported by their full path, list
indexes included (``spec.containers[0].foo``, as sigs.k8s.io/json's strict decoder), and, with
``drop_unknown``, removed: decoding into the Go types loses them, so they are never stored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["TypeCheckError", "TypeReport", "check_object", "schemas"]

#: Maps of quantities, which Go reads from JSON strings and numbers alike.
QUANTITY_MAPS = {"requests", "limits", "capacity", "allocatable", "overhead", "podFixed"}
_MISSING = object()
_JSON_TYPE = {
    bool: "bool",
    int: "number",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


class TypeCheckError(ValueError):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class TypeReport:
    """What a check found: ``unknown`` fields' strict paths, and ``problems``, the strict
    decoder's findings in its order (unknown fields, and the ``duplicates`` the body set
    twice, which the caller found in the raw body)."""

    unknown: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    drop_unknown: bool = False
    duplicates: frozenset[str] = frozenset()
    sorted_walk: bool = False

    def items(self, value: dict[str, Any]) -> Any:
        """``value``'s fields in the order the decoder meets them: the document's, or the
        keys sorted when the object reached it as a re-encoded Go map."""
        return sorted(value.items()) if self.sorted_walk else value.items()

    def note_duplicate(self, path: str) -> None:
        if self.duplicates and path in self.duplicates:
            self.problems.append(f'duplicate field "{path}"')


@cache
def schemas() -> dict[str, Any]:
    text = resources.files("taintplane.apiserver").joinpath("openapi_schemas.json").read_text()
    data: dict[str, Any] = json.loads(text)
    return data


_REFS: dict[int, str | None] = {}


def _ref(schema: dict[str, Any]) -> str | None:
    """The schema a property refers to. Memoized by identity: the schemas are loaded once and
    never change, and this runs for every field of every object written."""
    if not schema:
        return None  # the empty stand-ins built on the fly are never cached by identity
    key = id(schema)
    if key not in _REFS:
        found = None
        if "$ref" in schema:
            found = str(schema["$ref"]).rsplit("/", 1)[1]
        for part in schema.get("allOf") or []:
            if found is None and "$ref" in part:
                found = str(part["$ref"]).rsplit("/", 1)[1]
        _REFS[key] = found
    return _REFS[key]


def _go_type(schema: dict[str, Any]) -> str:
    ref = _ref(schema)
    if ref is not None:
        parts = ref.split(".")
        return f"{parts[-2]}.{parts[-1]}"
    kind = schema.get("type")
    if kind == "array":
        return "[]" + _go_type(schema.get("items") or {})
    if kind == "object":
        value = schema.get("additionalProperties")
        return (
            f"map[string]{_go_type(value)}"
            if isinstance(value, dict)
            else "map[string]interface {}"
        )
    return {"string": "string", "integer": "int64", "boolean": "bool", "number": "float64"}.get(
        str(kind), "interface {}"
    )


def _fail(value: Any, struct: str, path: _Path, schema: dict[str, Any]) -> TypeCheckError:
    json_type = _JSON_TYPE.get(type(value), "value")
    if isinstance(value, float) and schema.get("type") == "integer":
        return TypeCheckError(
            f"json: cannot unmarshal number {value!r} into Go struct field {struct}.{path.go} "
            "of type int64"
        )
    return TypeCheckError(
        f"json: cannot unmarshal {json_type} into Go struct field {struct}.{path.go} "
        f"of type {_go_type(schema)}"
    )


def check_object(
    obj: dict[str, Any],
    kind_schema: str,
    baseline: Mapping[str, Any] | None = None,
    *,
    drop_unknown: bool = False,
    duplicates: frozenset[str] = frozenset(),
    sorted_walk: bool = False,
) -> TypeReport:
    """Check ``obj`` against the schema named ``kind_schema``; raises on a type mismatch.

    Parts equal to ``baseline`` (the stored object an update starts from, checked when it
    was written) are skipped, so a small patch costs little however large the object.
    ``drop_unknown`` removes the unknown fields from ``obj`` (in place). ``duplicates`` are
    reported where the walk meets them, unless the field is unknown (then it is reported as
    unknown only, as sigs.k8s.io/json does for typed objects).
    """
    report = TypeReport(drop_unknown=drop_unknown, duplicates=duplicates, sorted_walk=sorted_walk)
    _check_struct(obj, kind_schema, _Path("", ""), report, baseline)
    return report


@dataclass(frozen=True)
class _Path:
    """Where a value is: as Go's type errors name it (struct fields only) and as the strict
    decoder names it (map keys and list indexes too)."""

    go: str
    strict: str

    def key(self, name: str) -> _Path:
        return _Path(
            f"{self.go}.{name}" if self.go else name,
            f"{self.strict}.{name}" if self.strict else name,
        )

    def index(self, i: int) -> _Path:
        return _Path(self.go, f"{self.strict}[{i}]")

    def map_key(self, name: str) -> _Path:
        return _Path(self.go, f"{self.strict}.{name}" if self.strict else name)


def _check_struct(
    value: dict[str, Any],
    name: str,
    path: _Path,
    report: TypeReport,
    baseline: Mapping[str, Any] | None = None,
) -> None:
    schema = schemas()["schemas"].get(name)
    if schema is None:
        return
    struct = name.rsplit(".", 1)[1]
    properties: dict[str, Any] = schema.get("properties") or {}
    unknown: list[str] = []
    for key, item in report.items(value):
        before = baseline.get(key, _MISSING) if baseline is not None else _MISSING
        if before is not _MISSING and before == item:
            continue
        child_path = path.key(key)
        prop = properties.get(key)
        if prop is None:
            if key not in ("apiVersion", "kind") or "apiVersion" not in properties:
                report.unknown.append(child_path.strict)
                report.problems.append(f'unknown field "{child_path.strict}"')
                unknown.append(key)
            continue
        report.note_duplicate(child_path.strict)
        _check_value(
            item,
            prop,
            struct,
            child_path,
            key,
            report,
            before if isinstance(before, Mapping) else None,
        )
    if report.drop_unknown:
        for key in unknown:
            del value[key]


def _check_value(
    value: Any,
    schema: dict[str, Any],
    struct: str,
    path: _Path,
    key: str,
    report: TypeReport,
    baseline: Mapping[str, Any] | None = None,
) -> None:
    if value is None or not schema:
        # null is Go's zero value; an untyped field (IntOrString, RawExtension) takes anything.
        return
    ref = _ref(schema)
    if ref is not None:
        target = schemas()["schemas"].get(ref, {})
        if target.get("type") == "object" and "properties" in target:
            if not isinstance(value, dict):
                raise _fail(value, struct, path, schema)
            _check_struct(value, ref, path, report, baseline)
        return
    kind = schema.get("type")
    if kind == "array":
        if not isinstance(value, list):
            raise _fail(value, struct, path, schema)
        for i, item in enumerate(value):
            _check_value(item, schema.get("items") or {}, struct, path.index(i), key, report)
    elif kind == "object":
        if not isinstance(value, dict):
            raise _fail(value, struct, path, schema)
        inner = schema.get("additionalProperties")
        if isinstance(inner, dict):
            for name, item in report.items(value):
                report.note_duplicate(path.map_key(name).strict)
                if (
                    key in QUANTITY_MAPS
                    and isinstance(item, int | float)
                    and not isinstance(item, bool)
                ):
                    continue
                _check_value(item, inner, struct, path.map_key(name), key, report)
    elif (
        (kind == "string" and not isinstance(value, str))
        or (kind == "integer" and (isinstance(value, bool) or not isinstance(value, int)))
        or (kind == "boolean" and not isinstance(value, bool))
        or (kind == "number" and (isinstance(value, bool) or not isinstance(value, int | float)))
    ):
        raise _fail(value, struct, path, schema)
