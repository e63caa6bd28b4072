"""Structural decoding of request objects against the kind's schema, as Go's decoder does it.

Before any strategy reads an object, every field the schema knows must have the JSON type its
Go field has: a string where Go has a string, a list where Go has a slice, an integer (not
``5.0``) where Go has an int. A mismatch is the decode error kube-apiserver returns (400,
``json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type
[]v1.Container``). Fields the schema does not know are reported by their full path, list
indexes included (``spec.containers[0].foo``, as sigs.k8s.io/json's strict decoder), and, with
``drop_unknown``, removed: decoding into the Go types loses them, so they are never stored.

The walk also leaves the object as Go's decoder does: optional fields sent as null are
dropped (nil, or a zero value omitempty leaves out), quantities are put in canonical form,
and times in the form Go encodes what it decoded (UTC with ``Z``; a Time in whole seconds, a
MicroTime to the microsecond), text that is no RFC 3339 time with a zone failing the decode.
``omit_empty`` does what Go's encoder does once the write is admitted and valid: empty
optional maps and lists are not written (a non-nil empty map is still non-nil to admission
and validation, as RuntimeClass admission's ``overhead: {}``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import orjson

from taintplane.api.decoding import DecodeError, canonical_time
from taintplane.api.quantity import go_parse_error
from taintplane.api.quantity_format import canonical_quantity

__all__ = ["TypeCheckError", "TypeReport", "check_object", "omit_empty", "schemas"]

#: Maps of quantities (string-valued maps by these names), which Go reads from JSON strings
#: and numbers alike.
QUANTITY_MAPS = {
    "requests",
    "limits",
    "capacity",
    "allocatable",
    "overhead",
    "podFixed",
    "allocatedResources",
    "consumedCapacity",
}
#: Struct fields of type resource.Quantity (the schemas flatten them to strings), by struct
#: and field: True for a pointer (null decodes to nil, left out), False for a value (null
#: decodes to zero, written "0"). validValues is a list of them.
QUANTITY_FIELDS = {
    ("EmptyDirVolumeSource", "sizeLimit"): True,
    ("ResourceFieldSelector", "divisor"): False,
    ("DeviceCapacity", "value"): False,
    ("Counter", "value"): False,
    ("CapacityRequestPolicy", "default"): True,
    ("CapacityRequestPolicy", "validValues"): True,
    ("CapacityRequestPolicyRange", "min"): True,
    ("CapacityRequestPolicyRange", "max"): True,
    ("CapacityRequestPolicyRange", "step"): True,
}
#: Struct fields of type metav1.MicroTime, by struct and field. The schemas give Time and
#: MicroTime the same "date-time" format, but MicroTime parses and keeps six digits of
#: fraction (coordination/v1 LeaseSpec; core/v1 and events/v1 Event and EventSeries).
MICRO_TIME_FIELDS = {
    ("LeaseSpec", "acquireTime"),
    ("LeaseSpec", "renewTime"),
    ("Event", "eventTime"),
    ("EventSeries", "lastObservedTime"),
}
_MISSING = object()
#: Type tuples for the walks' isinstance checks (a ``dict | list`` union is built anew at
#: every evaluation, which these walks do for every field).
_CONTAINERS = (dict, list)
_SCALARS = (str, int, float)
_JSON_TYPE = {
    bool: "bool",
    int: "number",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


#: Where a value is, built lazily: ``None`` for the object itself, else ``(parent, step,
#: name)``. A tuple per field costs a fraction of an object holding both renderings, and
#: the names are rendered only when a finding (an unknown or duplicate field, a type
#: error) needs them, which valid objects never do.
_Path = tuple[Any, int, Any] | None
_KEY, _INDEX, _MAP_KEY = 0, 1, 2


def _render(path: _Path) -> tuple[str, str]:
    """The path as Go's type errors name it (struct fields only) and as the strict decoder
    names it (map keys and list indexes too)."""
    steps: list[tuple[int, Any]] = []
    while path is not None:
        path, step, name = path
        steps.append((step, name))
    go = strict = ""
    for step, name in reversed(steps):
        if step == _INDEX:
            strict = f"{strict}[{name}]"
            continue
        if step == _KEY:
            go = f"{go}.{name}" if go else name
        strict = f"{strict}.{name}" if strict else name
    return go, strict


def _strict(path: _Path) -> str:
    return _render(path)[1]


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
    exact_baseline: bool = False

    def items(self, value: dict[str, Any]) -> Any:
        """``value``'s fields in the order the decoder meets them: the document's, or the
        keys sorted when the object reached it as a re-encoded Go map."""
        return sorted(value.items()) if self.sorted_walk else value.items()

    def note_duplicate(self, path: _Path) -> None:
        if self.duplicates:
            strict = _strict(path)
            if strict in self.duplicates:
                self.problems.append(f'duplicate field "{strict}"')


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
    go = _render(path)[0]
    if isinstance(value, float) and schema.get("type") == "integer":
        return TypeCheckError(
            f"json: cannot unmarshal number {value!r} into Go struct field {struct}.{go} "
            "of type int64"
        )
    return TypeCheckError(
        f"json: cannot unmarshal {json_type} into Go struct field {struct}.{go} "
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
    exact_baseline: bool = False,
    touched: Any = None,
) -> TypeReport:
    """Check ``obj`` against the schema named ``kind_schema``; raises on a type mismatch.

    Parts equal to ``baseline`` (the stored object an update starts from, checked when it
    was written) are skipped, so a small patch costs little however large the object.
    With ``exact_baseline`` a part is skipped only when it is also the same JSON as the
    stored one: Python's ``==`` takes ``1.0`` and ``True`` for ``1``, and a body decoded
    straight into the Go types (a create or an update, unlike a patch, whose result goes
    through a map first) must still fail on them. ``touched`` is a patch's shape
    (``patch_shape``): the parts it names are compared exactly, as ``exact_baseline`` does,
    since only they can hold a value of a new JSON type; the others keep the plain skip.
    ``drop_unknown`` removes the unknown fields from ``obj`` (in place). ``duplicates`` are
    reported where the walk meets them, unless the field is unknown (then it is reported as
    unknown only, as sigs.k8s.io/json does for typed objects).
    """
    report = TypeReport(
        drop_unknown=drop_unknown,
        duplicates=duplicates,
        sorted_walk=sorted_walk,
        exact_baseline=exact_baseline,
    )
    _check_struct(obj, kind_schema, None, report, baseline, touched)
    return report


@dataclass(frozen=True)
class _StructInfo:
    """What the walk needs of a struct, looked up once: its Go name, properties, required
    fields, quantity fields (True for a pointer), time fields (True for a MicroTime) and,
    for the plain scalar fields, the JSON types that need no look at the schema."""

    struct: str
    properties: dict[str, Any]
    required: frozenset[str]
    quantities: dict[str, bool]
    times: dict[str, bool]
    scalars: dict[str, frozenset[type]]


#: The Python types a decoded JSON value has when it is what a scalar schema type wants
#: (bool is not an integer here, as in Go). Any other value takes the full check.
_SCALAR_TYPES = {
    "string": frozenset({str}),
    "integer": frozenset({int}),
    "boolean": frozenset({bool}),
    "number": frozenset({int, float}),
}


@cache
def _struct_info(name: str) -> _StructInfo | None:
    schema = schemas()["schemas"].get(name)
    if schema is None:
        return None
    struct = name.rsplit(".", 1)[1]
    properties: dict[str, Any] = schema.get("properties") or {}
    return _StructInfo(
        struct,
        properties,
        frozenset(schema.get("required") or ()),
        {field: pointer for (owner, field), pointer in QUANTITY_FIELDS.items() if owner == struct},
        {
            field: (struct, field) in MICRO_TIME_FIELDS
            for field, prop in properties.items()
            if prop.get("format") == "date-time"
        },
        {
            field: _SCALAR_TYPES[prop["type"]]
            for field, prop in properties.items()
            if prop and _ref(prop) is None and prop.get("type") in _SCALAR_TYPES
        },
    )


def _check_struct(
    value: dict[str, Any],
    name: str,
    path: _Path,
    report: TypeReport,
    baseline: Mapping[str, Any] | None = None,
    touched: Any = None,
) -> None:
    info = _struct_info(name)
    if info is None:
        return
    struct, properties, required = info.struct, info.properties, info.required
    quantities, scalars, duplicates = info.quantities, info.scalars, report.duplicates
    unknown: list[str] = []
    omitted: list[str] = []
    # True: every equal part is compared exactly; a dict: the keys a patch names are.
    exact = report.exact_baseline or touched is True
    named = touched if type(touched) is dict else None
    for key, item in sorted(value.items()) if report.sorted_walk else value.items():
        before = baseline.get(key, _MISSING) if baseline is not None else _MISSING
        inner = True if exact else None if named is None else named.get(key)
        if before is not _MISSING and before == item:
            if inner is None:
                continue  # not named by the patch: the stored value, checked when written
            if type(inner) is not dict or type(item) is not dict:
                if _same_json(before, item):
                    continue
                inner = True
            # else: a map the patch named keys of, equal as a whole: walked for those keys
        child_path = (path, _KEY, key)
        prop = properties.get(key)
        if prop is None:
            if key not in ("apiVersion", "kind") or "apiVersion" not in properties:
                strict = _strict(child_path)
                report.unknown.append(strict)
                report.problems.append(f'unknown field "{strict}"')
                unknown.append(key)
            continue
        if duplicates:
            report.note_duplicate(child_path)
        if quantities and key in quantities:
            if _quantity_field(value, key, item, pointer=quantities[key]):
                omitted.append(key)
                continue
            item = value[key]
            if _is_scalar_quantity(item):
                continue
        if isinstance(item, str) and key in info.times:
            item = value[key] = _canonical_time(item, micro=info.times[key])
        wanted = scalars.get(key)
        if wanted is not None and type(item) in wanted:
            continue  # what _check_value would find: nothing to do, and not null
        _check_value(
            item,
            prop,
            struct,
            child_path,
            key,
            report,
            before if isinstance(before, dict) else None,
            inner,
        )
        if item is None and _omits_null(key, prop, required):
            omitted.append(key)
    if report.drop_unknown:
        for key in unknown:
            del value[key]
    for key in omitted:
        del value[key]


def _same_json(before: Any, item: Any) -> bool:
    """Whether two equal values are also the same JSON (not ``1`` and ``1.0`` or ``True``);
    keys in another order count as different, which only costs the check a skip."""
    try:
        return bool(orjson.dumps(before) == orjson.dumps(item))
    except orjson.JSONEncodeError:
        return False  # an integer past 64 bits: checked, as any part not skipped


def _omits_null(key: str, prop: dict[str, Any], required: frozenset[str]) -> bool:
    """Whether Go encodes nothing for a field sent as null: the nil pointer, slice or map,
    or the zero value omitempty leaves out. Required fields (no omitempty) keep what they
    have, and so do times: a metav1.Time value encodes its zero as null (pod conditions'
    lastProbeTime), except creationTimestamp, which 1.35 marks omitzero."""
    if key in required:
        return False
    return key == "creationTimestamp" or prop.get("format") != "date-time"


def _canonical_time(item: str, *, micro: bool) -> str | None:
    """A Time or MicroTime as Go stores it once decoded (UTC, ``Z``; whole seconds for a
    Time), or null for Go's zero time; text ``time.Parse`` refuses fails decoding, as
    metav1.Time.UnmarshalJSON does (``parsing time "…" as "2006-01-02T15:04:05Z07:00": …``)."""
    try:
        return canonical_time(item, micro=micro)
    except DecodeError as error:
        raise TypeCheckError(error.message) from error


def _quantity_field(value: dict[str, Any], key: str, item: Any, *, pointer: bool) -> bool:
    """Put a resource.Quantity field (or list of them) in canonical form, in place; True
    when Go leaves it out (a null pointer, an empty list)."""
    if item is None:
        if pointer:
            return True
        value[key] = "0"  # a Quantity value decodes null as zero
    elif isinstance(item, list):
        if not item:
            return True
        for i, entry in enumerate(item):
            item[i] = _canonical_or_same(entry) if entry is not None else "0"
    else:
        value[key] = _canonical_or_same(item)
    return False


def _is_scalar_quantity(item: Any) -> bool:
    """A JSON string or number: what Go's Quantity decodes (anything else is a type error)."""
    return isinstance(item, _SCALARS) and not isinstance(item, bool)


def _canonical_or_same(item: Any) -> Any:
    """A quantity's canonical form. A string Go's ParseQuantity refuses fails decoding, as
    Quantity.UnmarshalJSON does (``quantities must match the regular expression …``);
    other values it cannot put in canonical form stay as sent, for the type check to report."""
    if isinstance(item, str):
        item = item.strip()  # UnmarshalJSON trims the string before parsing it
        refusal = go_parse_error(item)
        if refusal is not None:
            raise TypeCheckError(refusal)
    if _is_scalar_quantity(item):
        canonical = canonical_quantity(item)
        if canonical is not None:
            return canonical
    return item


def _check_value(
    value: Any,
    schema: dict[str, Any],
    struct: str,
    path: _Path,
    key: str,
    report: TypeReport,
    baseline: Mapping[str, Any] | None = None,
    touched: Any = None,
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
            _check_struct(value, ref, path, report, baseline, touched)
        return
    kind = schema.get("type")
    if kind == "array":
        if not isinstance(value, list):
            raise _fail(value, struct, path, schema)
        items = schema.get("items") or {}
        wanted = _scalar_types(items)
        for i, item in enumerate(value):
            if item is None:
                # A null element decodes as the element type's zero value ("", 0, false, an
                # empty struct), which validation then judges (containers: [null] is
                # ``spec.containers[0].name: Required value``); pointers and maps stay nil.
                zero = _zero_element(items)
                if zero is not None:
                    value[i] = zero
                continue
            if wanted is not None and type(item) in wanted:
                continue  # a plain scalar of the element's type: nothing to find
            _check_value(item, items, struct, (path, _INDEX, i), key, report)
    elif kind == "object":
        if not isinstance(value, dict):
            raise _fail(value, struct, path, schema)
        inner = schema.get("additionalProperties")
        if isinstance(inner, dict):
            quantities = key in QUANTITY_MAPS and _is_plain_string(inner)
            wanted = _scalar_types(inner)
            for name, item in report.items(value):
                item_path = (path, _MAP_KEY, name)
                if report.duplicates:
                    report.note_duplicate(item_path)
                if item is None:
                    # a map's null value decodes as the element's zero value
                    if quantities:
                        value[name] = "0"
                    elif _is_plain_string(inner):
                        value[name] = ""
                    continue
                if quantities and _is_scalar_quantity(item):
                    value[name] = _canonical_or_same(item)
                    continue
                if wanted is not None and type(item) in wanted:
                    continue  # a plain scalar of the value's type: nothing to find
                _check_value(item, inner, struct, item_path, key, report)
    elif (
        (kind == "string" and not isinstance(value, str))
        or (kind == "integer" and (isinstance(value, bool) or not isinstance(value, int)))
        or (kind == "boolean" and not isinstance(value, bool))
        or (kind == "number" and (isinstance(value, bool) or not isinstance(value, int | float)))
    ):
        raise _fail(value, struct, path, schema)


_SCALARS_OF: dict[int, frozenset[type] | None] = {}


def _scalar_types(schema: dict[str, Any]) -> frozenset[type] | None:
    """For a scalar schema (no reference), the types its values need no further look at;
    memoized by identity, as :func:`_ref` (the schemas never change)."""
    if not schema:
        return None  # untyped, or an empty stand-in built on the fly (never cached)
    key = id(schema)
    if key not in _SCALARS_OF:
        kind = schema.get("type")
        _SCALARS_OF[key] = (
            _SCALAR_TYPES[kind] if _ref(schema) is None and kind in _SCALAR_TYPES else None
        )
    return _SCALARS_OF[key]


def _zero_element(schema: dict[str, Any]) -> Any:
    """The zero value Go decodes a null list element of this schema into, or None (nil)."""
    ref = _ref(schema)
    if ref is not None:
        target = schemas()["schemas"].get(ref, {})
        return {} if target.get("type") == "object" and "properties" in target else None
    if _is_plain_string(schema):
        return ""
    return {"integer": 0, "number": 0, "boolean": False}.get(str(schema.get("type")))


def _is_plain_string(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "string" and "format" not in schema


def omit_empty(
    obj: dict[str, Any], kind_schema: str, baseline: Mapping[str, Any] | None = None
) -> None:
    """Remove, in place, the empty maps and lists of optional fields (omitempty), as
    encoding the Go object for storage does; empty structs stay (a non-nil pointer is
    encoded). Parts equal to ``baseline`` (the stored object) are skipped."""
    _omit_in_struct(obj, kind_schema, baseline)


def _omit_in_struct(value: dict[str, Any], name: str, baseline: Mapping[str, Any] | None) -> None:
    info = _struct_info(name)
    if info is None:
        return
    properties, required = info.properties, info.required
    empty: list[str] = []
    for key, item in value.items():
        if not isinstance(item, _CONTAINERS):
            continue
        before = baseline.get(key, _MISSING) if baseline is not None else _MISSING
        if before is not _MISSING and before == item:
            continue
        prop = properties.get(key)
        if prop is None:
            continue
        if not item:
            if key not in required and prop.get("type") in ("object", "array"):
                empty.append(key)
            continue
        _omit_in_value(item, prop, before if isinstance(before, dict) else None)
    for key in empty:
        del value[key]


def _omit_in_value(value: Any, schema: dict[str, Any], baseline: Mapping[str, Any] | None) -> None:
    ref = _ref(schema)
    if ref is not None:
        if isinstance(value, dict):
            _omit_in_struct(value, ref, baseline)
        return
    kind = schema.get("type")
    inner = schema.get("items") if kind == "array" else schema.get("additionalProperties")
    if not isinstance(inner, dict) or _ref(inner) is None:
        return  # only structs hold optional fields
    items = value if isinstance(value, list) else value.values()
    for item in items:
        if isinstance(item, dict):
            _omit_in_struct(item, _ref(inner) or "", None)
