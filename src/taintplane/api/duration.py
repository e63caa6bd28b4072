"""Go's ``time.ParseDuration`` and ``Duration.String``: "5m", "1h30m", "300ms", "-1.5h"."""

from __future__ import annotations

import re

__all__ = ["DurationError", "format_duration", "parse_duration"]

_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


class DurationError(ValueError):
    pass


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string; errors worded as Go's."""
    original = text
    sign = 1.0
    if text[:1] in "+-" and text:
        sign = -1.0 if text[0] == "-" else 1.0
        text = text[1:]
    if text == "0":
        return 0.0
    if not text:
        raise DurationError(f'time: invalid duration "{original}"')
    total = 0.0
    position = 0
    while position < len(text):
        match = _PART.match(text, position)
        if match is None:
            rest = text[position:]
            if re.match(r"(\d+\.?\d*|\.\d+)", rest) and not re.match(
                r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)", rest
            ):
                number = re.match(r"(\d+\.?\d*|\.\d+)", rest)
                assert number is not None
                unit = rest[number.end() :]
                if not unit:
                    raise DurationError(f'time: missing unit in duration "{original}"')
                raise DurationError(f'time: unknown unit "{unit}" in duration "{original}"')
            raise DurationError(f'time: invalid duration "{original}"')
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    return sign * total


def format_duration(seconds: float) -> str:
    """``Duration.String`` for whole and fractional seconds: "1h2m3s", "1.5s", "0s"."""
    if seconds == 0:
        return "0s"
    sign = "-" if seconds < 0 else ""
    remaining = abs(seconds)
    if remaining < 1:
        milliseconds = remaining * 1000
        return f"{sign}{milliseconds:g}ms"
    hours, remaining = divmod(remaining, 3600)
    minutes, remaining = divmod(remaining, 60)
    text = f"{remaining:.9f}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{sign}{int(hours)}h{int(minutes)}m{text}"
    if minutes:
        return f"{sign}{int(minutes)}m{text}"
    return sign + text
