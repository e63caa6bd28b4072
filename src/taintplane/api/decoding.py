"""Reading typed fields out of wire JSON, with the errors Go's JSON decoder would give.

Objects travel as plain dicts; the value types of the semantic core are parsed from them at
the edge. A wrongly typed field is a decode error (HTTP 400 in the API server), worded as
``encoding/json`` words it, e.g.
``json: cannot unmarshal string into Go struct field Toleration.spec.tolerations.tolerationSeconds
of type int64``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from taintplane.api.field import Path

__all__ = [
    "DecodeError",
    "format_time",
    "json_type",
    "optional_int64",
    "optional_str",
    "optional_time",
]

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

# RFC 3339 as Go's time.Parse(time.RFC3339, …) accepts it: fractional seconds are allowed
# when parsing even though the layout has none.
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})", re.ASCII
)


class DecodeError(ValueError):
    """A field of the wrong JSON type, or a value that cannot be decoded."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @classmethod
    def wrong_type(cls, value: object, struct: str, path: Path, go_type: str) -> DecodeError:
        return cls(
            f"json: cannot unmarshal {json_type(value)} into Go struct field "
            f"{struct}.{path.json_path()} of type {go_type}"
        )


def json_type(value: object) -> str:
    """The JSON type name Go's UnmarshalTypeError gives (``Value``)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def optional_str(data: Mapping[str, Any], name: str, struct: str, path: Path) -> str:
    """A string field; absent and ``null`` read as ``""`` (Go's zero value)."""
    value = data.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DecodeError.wrong_type(value, struct, path.child(name), "string")
    return value


def optional_int64(data: Mapping[str, Any], name: str, struct: str, path: Path) -> int | None:
    """A ``*int64`` field; absent and ``null`` read as ``None``."""
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, float) or (
        isinstance(value, int)
        and not isinstance(value, bool)
        and not INT64_MIN <= value <= INT64_MAX
    ):
        # Go accepts only integer text for int64: 5.0 and 1.5 are refused, as is overflow.
        raise DecodeError(
            f"json: cannot unmarshal number {value!r} into Go struct field "
            f"{struct}.{path.child(name).json_path()} of type int64"
        )
    if isinstance(value, bool) or not isinstance(value, int):
        raise DecodeError.wrong_type(value, struct, path.child(name), "int64")
    return value


def optional_time(data: Mapping[str, Any], name: str, struct: str, path: Path) -> datetime | None:
    """A ``*metav1.Time`` field in RFC 3339; absent and ``null`` read as ``None``."""
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise DecodeError.wrong_type(value, struct, path.child(name), "v1.Time")
    match = _RFC3339.fullmatch(value)
    if match is None:
        raise DecodeError(
            f'parsing time "{value}" as "2006-01-02T15:04:05Z07:00": cannot parse "{value}" '
            "as RFC 3339 time"
        )
    month, day, hour, minute, second = (int(match.group(i)) for i in range(2, 7))
    for part, number, limit in (
        ("month", month, 12),
        ("day", day, 31),
        ("hour", hour, 23),
        ("minute", minute, 59),
        ("second", second, 59),
    ):
        if number > limit or (part in ("month", "day") and number < 1):
            raise DecodeError(f'parsing time "{value}": {part} out of range')
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as error:  # a day past the end of its month, as 2023-02-30
        raise DecodeError(f'parsing time "{value}": day out of range') from error
    return parsed.astimezone(UTC)


def format_time(moment: datetime) -> str:
    """``metav1.Time`` on the wire: UTC, whole seconds, ``Z``."""
    # Writes in a burst stamp the same instant (always so on virtual time): formatting once
    # per instant saved ~3 % of a mass eviction.
    global _last_formatted
    last_moment, text = _last_formatted
    if moment == last_moment and moment.tzinfo is not None:
        return text
    text = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    _last_formatted = (moment, text)
    return text


_last_formatted: tuple[datetime, str] = (datetime.min.replace(tzinfo=UTC), "")


def format_micro_time(moment: datetime) -> str:
    """``metav1.MicroTime`` on the wire (Lease renewTime, eventTime): microseconds, ``Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_timestamp(value: object) -> datetime | None:
    """A Time or MicroTime the server already stored (so well formed); None when absent."""
    if not isinstance(value, str) or not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
