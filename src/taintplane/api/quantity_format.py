"""Quantities as kube-apiserver stores and returns them: ``resource.Quantity``'s JSON form.

Go decodes a quantity into a fixed-point value that remembers its suffix's format (DecimalSI,
BinarySI or DecimalExponent) and encodes it in canonical form: no fractional digits, the
largest suffix of that format that loses no precision (``0.1`` -> ``100m``, ``1.5Gi`` ->
``1536Mi``, ``1000m`` -> ``1``). Amounts finer than a nanounit are rounded up, away from zero.
A string the parser found already canonical is kept as it was written (``ParseQuantity``
caches it), which is why ``+1`` and ``007`` come back unchanged. This follows
apimachinery's pkg/api/resource (quantity.go ParseQuantity and CanonicalizeBytes, amount.go
AsCanonicalBytes, suffix.go).
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["canonical_quantity"]

_DECIMAL_SUFFIXES = {
    "": 0,
    "n": -9,
    "u": -6,
    "m": -3,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_DECIMAL_BY_EXPONENT = {exponent: suffix for suffix, exponent in _DECIMAL_SUFFIXES.items()}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BINARY_BY_POWER = {power // 10: suffix for suffix, power in _BINARY_SUFFIXES.items()}
_SUFFIX_LETTERS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
#: strings.TrimSpace's unicode.IsSpace, which Quantity.UnmarshalJSON strips.
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_MAX_INT64 = 2**63 - 1
_NANO = -9
_DECIMAL_SI, _BINARY_SI, _DECIMAL_EXPONENT = "DecimalSI", "BinarySI", "DecimalExponent"


def canonical_quantity(raw: str | int | float) -> str | None:
    """What kube-apiserver writes for the quantity ``raw`` (a JSON string or number), or
    None when Go refuses it (a validation matter) or when releases disagree on its form."""
    if isinstance(raw, bool):
        return None
    # A JSON number reaches Go as its text; Python keeps only its value, so the shortest
    # text for that value stands in (``1e3`` sent as a number comes back ``1k``, not ``1e3``).
    text = raw.strip(_GO_SPACE) if isinstance(raw, str) else repr(raw)
    return _canonical(text)


@lru_cache(maxsize=4096)
def _canonical(text: str) -> str | None:
    if text == "0":
        return text
    parts = _split(text)
    if parts is None:
        return None
    positive, value, num, denom, suffix = parts
    interpreted = _interpret(suffix)
    if interpreted is None:
        return None
    base, exponent, form = interpreted
    fast = _fast_path(text, positive, num, denom, base, exponent, form)
    if fast is not None:
        return fast
    amount = _exact(value, base, exponent)
    if amount is None:
        return None
    mantissa, power = _round_up_to_nano(*amount)
    if form == _BINARY_SI:
        # A binary amount has no decimal exponent: power is between -9 and 0 here.
        if abs(mantissa) > _MAX_INT64 * 10**-power:
            mantissa, power = (_MAX_INT64 if mantissa > 0 else -_MAX_INT64), 0
        if 0 < abs(mantissa) < 10**-power:
            form = _DECIMAL_SI
    return _format(mantissa, power, form)


def _split(text: str) -> tuple[bool, str, str, str, str] | None:
    """parseQuantityString: the sign, the numeric text, its whole and fractional digits
    (leading zeros dropped) and the suffix; None where Go reports ErrFormatWrong."""
    end = len(text)
    if not end:
        return None
    positive, pos = True, 0
    if text[0] in "+-":
        positive, pos = text[0] == "+", 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos >= end:
        return positive, text, text[start:], "", ""
    num = text[start:pos] or "0"
    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        if pos >= end:
            return positive, text, num, text[start:], ""
        denom = text[start:pos]
    value, suffix_start = text[:pos], pos
    while pos < end and text[pos] in _SUFFIX_LETTERS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        return None
    return positive, value, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, str] | None:
    """The suffix's base, exponent and format (suffix.go interpret)."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], _DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], _BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:].lstrip("+-")
        if len(suffix) - len(digits) > 2 or not digits:
            return None
        exponent = int(suffix[1:])
        # Past int32, releases differ (older ones truncate the exponent, newer refuse it).
        if abs(exponent) > 2**31 - 1:
            return None
        return 10, exponent, _DECIMAL_EXPONENT
    return None


def _fast_path(
    text: str, positive: bool, num: str, denom: str, base: int, exponent: int, form: str
) -> str | None:
    """ParseQuantity's int64 path: exact amounts of at most 18 digits, no finer than a
    nanounit. Returns the stored form, or None where Go takes the inf.Dec path."""
    mantissa = 1
    if base == 10:
        scale = exponent
        precision = 18 - (len(num) + len(denom))
    elif denom:
        return None
    else:
        scale = 0
        mantissa = 1 << exponent
        precision = 15 - len(num) - exponent * 3 // 10 - 1
    if precision < 0:
        return None
    scale -= len(denom)
    if scale < _NANO:
        return None
    shifted = num + denom
    value = int(shifted)
    result = value * mantissa
    if result > _MAX_INT64:
        return None
    if base == 2:
        if value & 0x07:
            return text
    elif scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0":
        return text
    return _format(result if positive else -result, scale, form)


def _exact(value: str, base: int, exponent: int) -> tuple[int, int] | None:
    """``value`` times the suffix as an integer and a power of ten (inf.Dec SetString)."""
    sign = -1 if value[:1] == "-" else 1
    digits = value[1:] if value[:1] in ("-", "+") else value
    whole, _, fraction = digits.partition(".")
    if not (whole or fraction) or not (whole + fraction).isdigit():
        return None
    mantissa = sign * int(whole + fraction)
    if base == 2:
        return mantissa << exponent, -len(fraction)
    return mantissa, exponent - len(fraction)


def _round_up_to_nano(mantissa: int, power: int) -> tuple[int, int]:
    """Amounts finer than 1n rounded up, away from zero (inf.RoundUp at scale 9)."""
    if power >= _NANO or not mantissa:
        return mantissa, power
    magnitude, drop = abs(mantissa), _NANO - power
    # past its digits, any amount rounds up to one nanounit
    rounded = 1 if drop > len(str(magnitude)) else -(-magnitude // 10**drop)
    return (rounded if mantissa > 0 else -rounded), _NANO


def _format(mantissa: int, power: int, form: str) -> str | None:
    """CanonicalizeBytes for ``mantissa`` * 10**``power``: the largest suffix of the
    format that loses nothing."""
    if not mantissa:
        return "0"
    sign = "-" if mantissa < 0 else ""
    magnitude = abs(mantissa)
    if form == _BINARY_SI:
        # power is at most 0 for a binary amount
        whole, rest = divmod(magnitude, 10**-power)
        if whole < 1024 or rest:
            form = _DECIMAL_SI
        else:
            steps = 0
            while whole % 1024 == 0:
                whole //= 1024
                steps += 1
            return f"{sign}{whole}{_BINARY_BY_POWER.get(steps, '')}"
    while magnitude % 10 == 0:
        magnitude //= 10
        power += 1
    shift = power % 3
    magnitude, power = magnitude * 10**shift, power - shift
    if form == _DECIMAL_EXPONENT:
        return f"{sign}{magnitude}" + (f"e{power}" if power else "")
    suffix = _DECIMAL_BY_EXPONENT.get(power)
    if suffix is None:
        # Past E: 1.35 drops the exponent ("1000E" -> "1"), later releases write "1e21".
        return None
    return f"{sign}{magnitude}{suffix}"
