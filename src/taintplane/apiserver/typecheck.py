"""Structural decoding of request objects against the kind's schema, as Go's decoder does it.

Before any strategy reads an object, every field the schema knows must have the JSON type its
Go field has: a string where Go has a string, a list where Go has a slice, an integer (not
``5.0``) where Go has an int. A mismatch is the decode error kube-apiserver returns (400,
``json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type
[]v1.Container``). Fields the schema does not know are kept (objects are plain JSON here) and
reported for ``fieldValidation=Strict`` (400) and ``Warn`` (a warning), as kube-apiserver does.
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
    unknown: list[str] = field(default_factory=list)


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


def _fail(value: Any, struct: str, path: str, schema: dict[str, Any]) -> TypeCheckError:
    json_type = _JSON_TYPE.get(type(value), "value")
    if isinstance(value, float) and schema.get("type") == "integer":
        return TypeCheckError(
            f"json: cannot unmarshal number {value!r} into Go struct field {struct}.{path} "
            "of type int64"
        )
    return TypeCheckError(
        f"json: cannot unmarshal {json_type} into Go struct field {struct}.{path} "
        f"of type {_go_type(schema)}"
    )


def check_object(
    obj: dict[str, Any], kind_schema: str, baseline: Mapping[str, Any] | None = None
) -> TypeReport:
    """Check ``obj`` against the schema named ``kind_schema``; raises on a type mismatch.

    Parts equal to ``baseline`` (the stored object an update starts from, checked when it
    was written) are skipped, so a small patch costs little however large the object.
    """
    report = TypeReport()
    _check_struct(obj, kind_schema, "", report, baseline)
    return report


def _check_struct(
    value: dict[str, Any],
    name: str,
    path: str,
    report: TypeReport,
    baseline: Mapping[str, Any] | None = None,
) -> None:
    schema = schemas()["schemas"].get(name)
    if schema is None:
        return
    struct = name.rsplit(".", 1)[1]
    properties: dict[str, Any] = schema.get("properties") or {}
    for key, item in value.items():
        before = baseline.get(key, _MISSING) if baseline is not None else _MISSING
        if before is not _MISSING and before == item:
            continue
        child_path = f"{path}.{key}" if path else key
        prop = properties.get(key)
        if prop is None:
            if key not in ("apiVersion", "kind") or "apiVersion" not in properties:
                report.unknown.append(child_path)
            continue
        _check_value(
            item,
            prop,
            struct,
            child_path,
            key,
            report,
            before if isinstance(before, Mapping) else None,
        )


def _check_value(
    value: Any,
    schema: dict[str, Any],
    struct: str,
    path: str,
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
        for item in value:
            _check_value(item, schema.get("items") or {}, struct, path, key, report)
    elif kind == "object":
        if not isinstance(value, dict):
            raise _fail(value, struct, path, schema)
        inner = schema.get("additionalProperties")
        if isinstance(inner, dict):
            for item in value.values():
                if (
                    key in QUANTITY_MAPS
                    and isinstance(item, int | float)
                    and not isinstance(item, bool)
                ):
                    continue
                _check_value(item, inner, struct, path, key, report)
    elif (
        (kind == "string" and not isinstance(value, str))
        or (kind == "integer" and (isinstance(value, bool) or not isinstance(value, int)))
        or (kind == "boolean" and not isinstance(value, bool))
        or (kind == "number" and (isinstance(value, bool) or not isinstance(value, int | float)))
    ):
        raise _fail(value, struct, path, schema)
