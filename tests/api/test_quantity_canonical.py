"""resource.Quantity's JSON form: the tables of apimachinery's quantity_test.go
(TestQuantityParse, TestQuantityString, TestQuantityParseEmit), and properties of the
canonical form checked against an exact model."""

from __future__ import annotations

from decimal import Decimal, localcontext

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taintplane.api.quantity import parse_quantity
from taintplane.api.quantity_format import canonical_quantity


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        # the examples kube-apiserver answers with
        (0.1, "100m"),
        ("1.5Gi", "1536Mi"),
        ("1000m", "1"),
        (1, "1"),
        ("1024Ki", "1Mi"),
        ("1e3", "1e3"),
        ("0.5", "500m"),
        ("100M", "100M"),
        ("1Gi", "1Gi"),
        # TestQuantityParseEmit
        ("1024Mi", "1Gi"),
        ("1000M", "1G"),
        (".001Ki", "1024m"),
        (".000001Ki", "1024u"),
        (".000000001Ki", "1024n"),
        (".000000000001Ki", "2n"),
        ("-.001Ki", "-1024m"),
        # TestQuantityString's alternates
        ("307200Ki", "300Mi"),
        ("1025024Mi", "1001Gi"),
        ("5000m", "5"),
        ("1080000000n", "1080m"),
        ("1.08", "1080m"),
        (".001e12", "1e9"),
        ("0.001e0", "1e-3"),
        ("1000e-12", "1e-9"),
        ("00", "0"),
        # sub-nanounit amounts round up, away from zero (0.0001 is exact: 100u)
        ("0.0001", "100u"),
        ("3.001n", "4n"),
        ("0.0000000001", "1n"),
        ("0.00000012345", "124n"),
        ("-0.0000000001", "-1n"),
        # binary amounts below 1024, or not whole, print as DecimalSI
        ("0.5Ki", "512"),
        ("1.5Ki", "1536"),
        ("1.1Ki", "1126400m"),
        ("0.5Mi", "512Ki"),
        # binary amounts are capped at 2^63-1
        ("9Ei", "9223372036854775807"),
        ("1.2e3", "1200"),
        ("1.3E+6", "1300e3"),
        (2.5, "2500m"),
        ("0", "0"),
        ("0Ki", "0"),
        ("-0", "0"),
        (" 100m ", "100m"),
        # ParseQuantity keeps a string it found canonical as it was written
        ("+1", "+1"),
        ("007", "007"),
        ("1.500", "1.500"),
        ("1E3", "1E3"),
        ("1.G", "1.G"),
        ("12E", "12E"),
    ],
)
def test_stored_form(sent: str | int | float, stored: str) -> None:
    assert canonical_quantity(sent) == stored


@pytest.mark.parametrize(
    "refused",
    ["", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", "1e+"],
)
def test_what_go_refuses_is_left_alone(refused: str) -> None:
    assert canonical_quantity(refused) is None


def test_forms_releases_disagree_on_are_left_alone() -> None:
    # Past E, 1.35 drops the exponent and later releases write 1e21; exponents past int32
    # are truncated by some releases and refused by others.
    assert canonical_quantity("1000E") is None
    assert canonical_quantity("1e4294967297") is None
    assert canonical_quantity(True) is None


_SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "e3", "e-2"]

quantities = st.builds(
    lambda sign, whole, fraction, suffix: f"{sign}{whole}{fraction}{suffix}",
    st.sampled_from(["", "-", "+"]),
    st.integers(min_value=0, max_value=10**12).map(str),
    st.one_of(st.just(""), st.integers(min_value=0, max_value=10**6).map(lambda n: f".{n}")),
    st.sampled_from(_SUFFIXES),
)


def _stored(sent: str) -> str | None:
    """The stored form; None only past E, the form releases disagree on."""
    stored = canonical_quantity(sent)
    if stored is None:
        assert abs(parse_quantity(sent)) >= 10**21
    return stored


def _nano_ceiling(amount: Decimal) -> Decimal:
    """The amount rounded up, away from zero, to a nanounit."""
    scaled = (abs(amount) * 10**9).to_integral_value(rounding="ROUND_CEILING")
    return (scaled if amount >= 0 else -scaled) / 10**9


@given(quantities)
def test_canonical_form_keeps_the_amount_to_a_nanounit(sent: str) -> None:
    stored = _stored(sent)
    if stored is None:
        return
    with localcontext(prec=100):  # the model computes exactly
        expected = _nano_ceiling(parse_quantity(sent))
        if sent.endswith(("Ki", "Mi", "Gi", "Ti")) and abs(expected) > 2**63 - 1:
            expected = Decimal(2**63 - 1).copy_sign(expected)
        assert parse_quantity(stored) == expected


@given(quantities)
def test_canonical_form_is_stable(sent: str) -> None:
    stored = _stored(sent)
    assert stored is None or canonical_quantity(stored) == stored


@given(quantities)
def test_canonical_form_has_no_fraction_and_keeps_the_format(sent: str) -> None:
    stored = _stored(sent)
    if stored is None or stored == sent:
        return  # kept as written
    assert "." not in stored
    assert not stored.startswith("+")
    binary = sent.endswith(("Ki", "Mi", "Gi", "Ti"))
    exponent = sent.endswith(("e3", "e-2"))
    if stored.endswith(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")):
        assert binary
    if "e" in stored:
        assert exponent
    if not binary and not exponent:
        assert stored[-1].isdigit() or stored[-1] in "numkMGTPE"


@given(st.integers(min_value=-(10**17), max_value=10**17))
def test_json_integers_are_decimal_si(number: int) -> None:
    stored = canonical_quantity(number)
    assert stored is not None
    assert parse_quantity(stored) == number
