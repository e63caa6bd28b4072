"""Go's ``time.ParseDuration`` and ``Duration.String``: "5m", "1h30m", "300ms", "-1.5h".

Both work in whole nanoseconds as Go does (a ``time.Duration`` is an int64), so values,
rounding, overflow limits and error messages are Go's.
"""

from __future__ import annotations

from decimal import Decimal

__all__ = ["DurationError", "format_duration", "parse_duration", "parse_duration_ns"]

_UNITS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_DIGITS = "0123456789"
_MAX = 1 << 63  # |d| <= 2^63 while parsing; a positive result must be < 2^63


class DurationError(ValueError):
    pass


def _quote(text: str) -> str:
    """Go's ``time.quote``: non-ASCII and control bytes as \\xNN, `"` and `\\` escaped."""
    out: list[str] = []
    for char in text:
        if char < " " or char >= "\x80":
            out.extend(f"\\x{byte:02x}" for byte in char.encode("utf-8", "surrogatepass"))
        else:
            out.append("\\" + char if char in '"\\' else char)
    return '"' + "".join(out) + '"'


def parse_duration_ns(text: str) -> int:
    """Nanoseconds in a Go duration string (a ``time.Duration``); errors worded as Go's."""
    invalid = DurationError(f"time: invalid duration {_quote(text)}")
    rest, negative = text, False
    if rest[:1] in ("-", "+"):
        negative, rest = rest[0] == "-", rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise invalid
    total = 0
    while rest:
        if rest[0] != "." and rest[0] not in _DIGITS:
            raise invalid
        end = 0
        while end < len(rest) and rest[end] in _DIGITS:
            end += 1
        whole, fraction, rest = rest[:end], "", rest[end:]
        if whole and int(whole) > _MAX:
            raise invalid
        if rest[:1] == ".":
            end = 1
            while end < len(rest) and rest[end] in _DIGITS:
                end += 1
            fraction, rest = rest[1:end], rest[end:]
        if not whole and not fraction:  # ".s", "-.s"
            raise invalid
        end = 0
        while end < len(rest) and rest[end] != "." and rest[end] not in _DIGITS:
            end += 1
        if end == 0:
            raise DurationError(f"time: missing unit in duration {_quote(text)}")
        unit_name, rest = rest[:end], rest[end:]
        unit = _UNITS.get(unit_name)
        if unit is None:
            raise DurationError(
                f"time: unknown unit {_quote(unit_name)} in duration {_quote(text)}"
            )
        value = int(whole or "0")
        if value > _MAX // unit:
            raise invalid
        value *= unit
        # Go keeps fraction digits while they fit in an int64 and truncates the product.
        kept, scale = 0, 1
        for digit in fraction:
            if kept > (_MAX - 1) // 10 or kept * 10 + int(digit) > _MAX:
                break
            kept, scale = kept * 10 + int(digit), scale * 10
        if kept:
            value += int(float(kept) * (float(unit) / float(scale)))
        total += value
        if total > _MAX:
            raise invalid
    if not negative and total >= _MAX:
        raise invalid
    return -total if negative else total


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string; errors worded as Go's."""
    return parse_duration_ns(text) / 1_000_000_000  # int / int: correctly rounded


def _fraction(value: int, precision: int) -> tuple[str, int]:
    """Go's ``fmtFrac``: the fraction's digits without trailing zeros, and the integer part."""
    digits = ""
    for _ in range(precision):
        value, digit = divmod(value, 10)
        if digits or digit:
            digits = str(digit) + digits
    return ("." + digits if digits else ""), value


def format_duration(seconds: float) -> str:
    """``Duration.String`` of a number of seconds (rounded to nanoseconds): "1h2m3s", "1.5s",
    "300ms", "0s"."""
    # From the float's shortest decimal form, so 1234567.891 is exactly 1234567891000000 ns.
    nanoseconds = round(Decimal(repr(float(seconds))).scaleb(9))
    sign = "-" if nanoseconds < 0 else ""
    value = abs(nanoseconds)
    if value == 0:
        return "0s"
    if value < 1_000:
        return f"{sign}{value}ns"
    if value < 1_000_000_000:
        unit, precision = ("µs", 3) if value < 1_000_000 else ("ms", 6)
        fraction, whole = _fraction(value, precision)
        return f"{sign}{whole}{fraction}{unit}"
    fraction, whole = _fraction(value, 9)
    hours, remainder = divmod(whole, 3600)
    minutes, secs = divmod(remainder, 60)
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}{fraction}s"
    if minutes:
        return f"{sign}{minutes}m{secs}{fraction}s"
    return f"{sign}{secs}{fraction}s"
