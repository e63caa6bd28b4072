"""``json.Unmarshal`` of a namespace's toleration annotation into ``[]v1.Toleration``, as
PodTolerationRestriction does upstream with Go's ``encoding/json`` (not the API server's
decoder): object keys match the struct's fields exactly or else case-insensitively (``"Key"``
is ``key``), unknown keys are ignored, a later key overwrites an earlier one, ``null`` leaves
a string field alone and clears ``tolerationSeconds``, and the first value of the wrong type is
the error, in Go's words (``json: cannot unmarshal string into Go struct field
Toleration.tolerationSeconds of type int64``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from taintplane.api import gojson

__all__ = ["unmarshal_tolerations"]

_STRING_FIELDS = ("key", "operator", "value", "effect")
_SECONDS = "tolerationSeconds"
_FIELDS = (*_STRING_FIELDS, _SECONDS)
_INTEGER = re.compile(r"-?(0|[1-9][0-9]*)")
_INT64 = (-(2**63), 2**63 - 1)


class _Number(str):
    """A JSON number, kept as written (Go words a bad one with its literal)."""


class _Object(list[tuple[str, Any]]):
    """A JSON object as its (key, value) pairs, in order."""


def _go_type(value: object) -> str:
    if isinstance(value, _Object):
        return "object"
    if isinstance(value, _Number):
        return "number"
    return gojson.json_type(value)


def _field(name: str) -> str | None:
    if name in _FIELDS:
        return name
    folded = name.casefold()
    return next((field for field in _FIELDS if field.casefold() == folded), None)


def _toleration(pairs: _Object, errors: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in pairs:
        field = _field(name)
        if field is None or (value is None and field != _SECONDS):
            continue
        if value is None:
            out.pop(field, None)
            continue
        go_type = "int64" if field == _SECONDS else "string"
        if field == _SECONDS and isinstance(value, _Number):
            if _INTEGER.fullmatch(value) and _INT64[0] <= int(value) <= _INT64[1]:
                out[field] = int(value)
                continue
            found = f"number {value}"
        elif field != _SECONDS and isinstance(value, str) and not isinstance(value, _Number):
            out[field] = value
            continue
        else:
            found = _go_type(value)
        errors.append(
            f"json: cannot unmarshal {found} into Go struct field Toleration.{field} of type "
            f"{go_type}"
        )
    return out


def unmarshal_tolerations(text: str) -> list[dict[str, Any]]:
    """The tolerations, as JSON with the API's field names; ``GoJSONError`` as Go fails."""
    gojson.check_valid(text.encode())
    items = json.loads(text, object_pairs_hook=_Object, parse_int=_Number, parse_float=_Number)
    if items is None:
        return []
    if not isinstance(items, list) or isinstance(items, _Object):
        raise gojson.GoJSONError(
            f"json: cannot unmarshal {_go_type(items)} into Go value of type []v1.Toleration"
        )
    errors: list[str] = []
    tolerations: list[dict[str, Any]] = []
    for item in items:
        if item is None:
            tolerations.append({})
        elif isinstance(item, _Object):
            tolerations.append(_toleration(item, errors))
        else:
            errors.append(
                f"json: cannot unmarshal {_go_type(item)} into Go value of type v1.Toleration"
            )
    if errors:
        raise gojson.GoJSONError(errors[0])
    return tolerations
