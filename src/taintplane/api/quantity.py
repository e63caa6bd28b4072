"""Kubernetes resource quantities (``100m``, ``128Mi``, ``1.5G``, ``2e3``) as integers.

The scheduler counts CPU in millicores and everything else in whole units, rounding up, as
``Quantity.MilliValue()`` and ``Quantity.Value()`` do.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache

__all__ = ["QuantityError", "go_parse_error", "milli_value", "parse_quantity", "value"]

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_FORM = re.compile(
    r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?",
    re.ASCII,
)


class QuantityError(ValueError):
    pass


#: resource.ErrFormatWrong, ErrSuffix: what ParseQuantity (and so decoding) says.
FORMAT_WRONG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
SUFFIX_WRONG = "unable to parse quantity's suffix"
#: parseQuantityString's shape: a number, then suffix letters, then an optional signed integer.
_GO_SHAPE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eEinumkKMGTP]*[-+]?[0-9]*", re.ASCII)


def go_parse_error(text: str) -> str | None:
    """The error ``resource.ParseQuantity`` returns for ``text``, or None when it parses:
    a string that is not a number followed by suffix letters is ErrFormatWrong; a suffix
    that names no unit is ErrSuffix."""
    if _FORM.fullmatch(text):
        return None
    if not _GO_SHAPE.fullmatch(text):
        return FORMAT_WRONG
    return SUFFIX_WRONG


def parse_quantity(text: str | int | float) -> Decimal:
    """The exact amount a quantity names."""
    return _parse_quantity(text)


# A node's status report carries a dozen quantities, the same ones every time: answers are
# kept (typed: True, 1 and 1.0 are different inputs here).
@lru_cache(maxsize=4096, typed=True)
def _parse_quantity(text: str | int | float) -> Decimal:
    if isinstance(text, bool):
        raise QuantityError(f"quantities must match the regular expression: {text!r}")
    if isinstance(text, int | float):
        return Decimal(str(text))
    match = _FORM.fullmatch(text.strip())
    if match is None:
        raise QuantityError(
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )
    number, suffix = match.group(1), match.group(2) or ""
    try:
        amount = Decimal(number)
    except InvalidOperation as error:  # pragma: no cover - the pattern admits only numbers
        raise QuantityError(str(error)) from error
    if suffix in _BINARY:
        return amount * _BINARY[suffix]
    if suffix in _DECIMAL:
        return amount * _DECIMAL[suffix]
    return amount * (Decimal(10) ** int(suffix[1:]))


def value(text: str | int | float) -> int:
    """``Quantity.Value()``: whole units, rounded up."""
    return math.ceil(parse_quantity(text))


def milli_value(text: str | int | float) -> int:
    """``Quantity.MilliValue()``: thousandths, rounded up (CPU in millicores)."""
    return math.ceil(parse_quantity(text) * 1000)
