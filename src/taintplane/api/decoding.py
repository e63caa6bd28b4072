"""Reading typed fields out of wire JSON, with the errors Go's JSON decoder would give.

Objects travel as plain dicts; the value types of the semantic core are parsed from them at
the edge. A wrongly typed field is a decode error (HTTP 400 in the API server), worded as
``encoding/json`` words it, e.g.
``json: cannot unmarshal string into Go struct field Toleration.spec.tolerations.tolerationSeconds
of type int64``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from taintplane.api.field import Path

__all__ = [
    "DecodeError",
    "canonical_time",
    "format_time",
    "json_type",
    "optional_int64",
    "optional_str",
    "optional_time",
    "parse_go_time",
    "parse_timestamp",
]

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


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
    return parse_go_time(value)


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
    """A Time or MicroTime the server stored; None when absent.

    Before timestamps were decoded as Go decodes them, what clients sent was stored as sent,
    so a data dir may hold a time without a zone (``datetime.utcnow().isoformat()``) or one
    that is no time at all. Comparing a naive time with the aware clock stops the
    component that reads it, so a naive time reads as UTC (what such clients meant) and
    unreadable text as absent, as if never set."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


# ---- metav1.Time and metav1.MicroTime, as their UnmarshalJSON parses them ----------------------

#: The layouts metav1.Time (time.RFC3339) and metav1.MicroTime (metav1.RFC3339Micro) parse.
RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"
#: The literal text before each layout element, and the element, as Go's parser walks them.
_ELEMENTS = (("", "2006"), ("-", "01"), ("-", "02"), ("T", "15"), (":", "04"), (":", "05"))
_ZONE = "Z07:00"
_MICRO_FRACTION = ".000000"
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class _BadElement(Exception):
    """Go's errBad: the value does not have the layout element's form here."""


def _go_quote(text: str) -> str:
    """Go's time.quote: double quotes, with bytes outside printable ASCII as ``\\x``."""
    out = []
    for char in text:
        if char < " " or char >= "\x80":
            out.append("".join(f"\\x{byte:02x}" for byte in char.encode("utf-8", "replace")))
        elif char in '"\\':
            out.append("\\" + char)
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _parse_error(
    layout: str, value: str, element: str, rest: str, message: str = ""
) -> DecodeError:
    """Go's time.ParseError text."""
    if message:
        return DecodeError(f"parsing time {_go_quote(value)}{message}")
    return DecodeError(
        f"parsing time {_go_quote(value)} as {_go_quote(layout)}: cannot parse "
        f"{_go_quote(rest)} as {_go_quote(element)}"
    )


def _is_digit(text: str, at: int) -> bool:
    return at < len(text) and "0" <= text[at] <= "9"


def _number(text: str, *, fixed: bool) -> tuple[int, str]:
    """Go's getnum: one or two digits (exactly two when ``fixed``)."""
    if not _is_digit(text, 0):
        raise _BadElement
    if not _is_digit(text, 1):
        if fixed:
            raise _BadElement
        return int(text[0]), text[1:]
    return int(text[:2]), text[2:]


def _atoi(text: str) -> int:
    """Go's time.atoi: an optional sign, then only digits."""
    digits = text[1:] if text[:1] in ("-", "+") else text
    if not digits or not digits.isascii() or not digits.isdigit():
        raise _BadElement
    return -int(digits) if text[:1] == "-" else int(digits)


def _nanoseconds(text: str, width: int) -> int:
    """Go's parseNanoseconds: a period or comma, then digits (at most nine count)."""
    if text[0] not in ".,":
        raise _BadElement
    width = min(width, 10)
    scale: int = 10 ** (10 - width)  # the digits the layout's width leaves out
    return _atoi(text[1:width]) * scale


def _days_in(month: int, year: int) -> int:
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 29 if month == 2 and leap else _DAYS_IN_MONTH[month - 1]


def parse_go_time(value: str, *, micro: bool = False) -> datetime:
    """``time.Parse(time.RFC3339, value)`` (``metav1.RFC3339Micro`` when ``micro``), as
    metav1.Time and MicroTime decode a JSON string, in UTC; its errors are Go's.

    Go's parser is lenient where the layout lets it be (a one-digit hour, a comma before the
    fraction, a fraction Time drops) and strict on the zone: a time without one, which is
    what Python's ``datetime.isoformat()`` gives for a naive time, is refused
    (``cannot parse "" as "Z07:00"``). Microseconds are kept: Time drops them on encoding."""
    layout = RFC3339_MICRO if micro else RFC3339
    rest = value
    fields: list[int] = []
    for literal, element in _ELEMENTS:
        if literal:
            if rest[:1] != literal:
                raise _parse_error(layout, value, literal, rest)
            rest = rest[1:]
        held = rest
        try:
            if element == "2006":
                if len(rest) < 4 or not _is_digit(rest, 0):
                    raise _BadElement
                number, rest = _atoi(rest[:4]), rest[4:]
            else:
                number, rest = _number(rest, fixed=element != "15")
        except _BadElement:
            raise _parse_error(layout, value, element, held) from None
        bounds = _RANGES.get(element)
        if bounds is not None and not bounds[1] <= number <= bounds[2]:
            raise _parse_error(layout, value, element, rest, f": {bounds[0]} out of range")
        fields.append(number)
    nanos, rest = _fraction(layout, value, rest, micro=micro)
    offset, rest = _zone(layout, value, rest)
    if rest:
        raise _parse_error(layout, value, "", rest, f": extra text: {_go_quote(rest)}")
    year, month, day, hour, minute, second = fields
    if not 1 <= day <= _days_in(month, year):
        raise _parse_error(layout, value, "", rest, ": day out of range")
    try:
        moment = datetime(year, month, day, hour, minute, second, nanos // 1000, tzinfo=UTC)
        return moment - timedelta(seconds=offset)
    except (ValueError, OverflowError):
        # Go holds year 0 and instants past 9999 in UTC; Python cannot, and neither is a
        # time any client means, so they are refused rather than stored unreadable.
        raise DecodeError(f"parsing time {_go_quote(value)}: year out of range") from None


#: Layout elements Go checks as it reads them: name, least and greatest value (the day is
#: checked once the month and year are known).
_RANGES = {"01": ("month", 1, 12), "15": ("hour", 0, 23), "04": ("minute", 0, 59)}
_RANGES["05"] = ("second", 0, 59)


def _fraction(layout: str, value: str, rest: str, *, micro: bool) -> tuple[int, str]:
    """The nanoseconds after the seconds, and what follows them."""
    if micro:
        # RFC3339Micro's ".000000": exactly six digits, after a period or comma.
        try:
            if len(rest) < len(_MICRO_FRACTION):
                raise _BadElement
            nanos = _nanoseconds(rest, len(_MICRO_FRACTION))
        except _BadElement:
            raise _parse_error(layout, value, _MICRO_FRACTION, rest) from None
        if nanos < 0:
            raise _parse_error(layout, value, "", rest, ": fractional second out of range")
        return nanos, rest[len(_MICRO_FRACTION) :]
    if len(rest) >= 2 and rest[0] in ".," and _is_digit(rest, 1):
        # RFC3339 has no fraction, yet Go reads one after the seconds (any number of digits).
        width = 2
        while _is_digit(rest, width):
            width += 1
        return _nanoseconds(rest, width), rest[width:]
    return 0, rest


def _zone(layout: str, value: str, rest: str) -> tuple[int, str]:
    """The zone's offset east of UTC in seconds, and what follows it (Z07:00)."""
    if rest[:1] == "Z":
        return 0, rest[1:]
    if len(rest) < 6 or rest[3] != ":":
        raise _parse_error(layout, value, _ZONE, rest)
    hours = minutes = 0
    well_formed = True
    try:
        hours = _number(rest[1:3], fixed=True)[0]
        minutes = _number(rest[4:6], fixed=True)[0]
    except _BadElement:
        well_formed = False
    # Go tests the range before the form, and lets through offsets of 24 hours or 60 minutes.
    too_far = "minute" if minutes > 60 else "hour" if hours > 24 else ""
    if too_far:
        raise _parse_error(
            layout, value, _ZONE, rest[6:], f": time zone offset {too_far} out of range"
        )
    if not well_formed or rest[0] not in "+-":
        raise _parse_error(layout, value, _ZONE, rest)
    offset = (hours * 60 + minutes) * 60
    return (-offset if rest[0] == "-" else offset), rest[6:]


@lru_cache(maxsize=4096)
def canonical_time(value: str, *, micro: bool = False) -> str | None:
    """A Time (MicroTime when ``micro``) as Go stores what it decoded: UTC with ``Z``, whole
    seconds (fraction truncated) or six digits of fraction; None for Go's zero time, which
    encodes as null. Writes in a burst carry the same few instants, hence the cache."""
    moment = parse_go_time(value, micro=micro)
    if moment == _ZERO_TIME:
        return None
    text = f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}"
    return f"{text}.{moment.microsecond:06d}Z" if micro else f"{text}Z"


_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)
