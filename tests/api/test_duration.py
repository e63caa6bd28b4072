"""Go's time.ParseDuration and Duration.String (tables from Go's time_test.go)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taintplane.api.duration import (
    DurationError,
    format_duration,
    parse_duration,
    parse_duration_ns,
)

NS = 1
US = 1_000
MS = 1_000_000
S = 1_000_000_000
M = 60 * S
H = 60 * M


@pytest.mark.parametrize(
    ("text", "nanoseconds"),
    [
        # simple
        ("0", 0),
        ("5s", 5 * S),
        ("30s", 30 * S),
        ("1478s", 1478 * S),
        # sign
        ("-5s", -5 * S),
        ("+5s", 5 * S),
        ("-0", 0),
        ("+0", 0),
        ("0s", 0),
        ("-0s", 0),
        # decimal
        ("5.0s", 5 * S),
        ("5.6s", 5 * S + 600 * MS),
        ("5.s", 5 * S),
        (".5s", 500 * MS),
        ("1.s", 1 * S),
        ("1.0s", 1 * S),
        ("1.00s", 1 * S),
        ("1.004s", 1 * S + 4 * MS),
        ("1.0040s", 1 * S + 4 * MS),
        ("100.00100s", 100 * S + 1 * MS),
        ("1.5h", 90 * M),
        ("-1.5h", -90 * M),
        # every unit
        ("10ns", 10 * NS),
        ("11us", 11 * US),
        ("12µs", 12 * US),  # U+00B5 micro sign
        ("12μs", 12 * US),  # U+03BC Greek mu
        ("13ms", 13 * MS),
        ("14s", 14 * S),
        ("15m", 15 * M),
        ("16h", 16 * H),
        # composite durations
        ("3h30m", 3 * H + 30 * M),
        ("1h30m", 90 * M),
        ("10.5s4m", 4 * M + 10 * S + 500 * MS),
        ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)),
        ("1h2m3s4ms5us6ns", 1 * H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS),
        ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS),
        ("1s1s", 2 * S),
        ("0h0m0s", 0),
        ("00s", 0),
        # large values
        ("52763797000ns", 52763797000 * NS),
        # more than 9 digits after the decimal point (golang.org/issue/6617)
        ("0.3333333333333333333h", 20 * M),
        # 1<<53+1 cannot be held exactly by a float64
        ("9007199254740993ns", (1 << 53) + 1),
        # the largest durations an int64 holds
        ("9223372036854775807ns", (1 << 63) - 1),
        ("9223372036854775.807us", (1 << 63) - 1),
        ("9223372036s854ms775us807ns", (1 << 63) - 1),
        ("2562047h47m16.854775807s", (1 << 63) - 1),
        ("-9223372036854775808ns", -(1 << 63)),
        ("-9223372036854775.808us", -(1 << 63)),
        ("-9223372036s854ms775us808ns", -(1 << 63)),
        ("-2562047h47m16.854775808s", -(1 << 63)),
        # a huge fraction (issue 15011) and the first overflow check in leadingFraction
        ("0.100000000000000000000h", 6 * M),
        ("0.830103483285477580700h", 49 * M + 48 * S + 372539827 * NS),
        # the second overflow check: a 19th digit that would pass 2^63 is dropped
        ("0.9223372036854775808s", 922337203 * NS),
        ("0.9223372036854775809s", 922337203 * NS),
    ],
)
def test_parse_duration_matches_go(text, nanoseconds):
    assert parse_duration_ns(text) == nanoseconds
    assert parse_duration(text) == nanoseconds / 1e9


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # neither a number nor a unit
        ("", 'time: invalid duration ""'),
        ("x", 'time: invalid duration "x"'),
        ("-", 'time: invalid duration "-"'),
        ("+", 'time: invalid duration "+"'),
        ("s", 'time: invalid duration "s"'),
        (".", 'time: invalid duration "."'),
        ("-.", 'time: invalid duration "-."'),
        (".s", 'time: invalid duration ".s"'),
        ("+.s", 'time: invalid duration "+.s"'),
        ("--5s", 'time: invalid duration "--5s"'),
        ("+-5s", 'time: invalid duration "+-5s"'),
        (" 5s", 'time: invalid duration " 5s"'),
        ("1s.", 'time: invalid duration "1s."'),
        ("1s.s", 'time: invalid duration "1s.s"'),
        # only ASCII digits are digits
        ("\u0661s", 'time: invalid duration "\\xd9\\xa1s"'),
        # Go's quoting: non-ASCII and control characters as \xNN, quotes and backslashes escaped
        ("\ufffd", 'time: invalid duration "\\xef\\xbf\\xbd"'),
        (
            "\ufffd hello \ufffd world",
            'time: invalid duration "\\xef\\xbf\\xbd hello \\xef\\xbf\\xbd world"',
        ),
        ('"5s"', 'time: invalid duration "\\"5s\\""'),
        ("\\5s", 'time: invalid duration "\\\\5s"'),
        ("\t5s", 'time: invalid duration "\\x095s"'),
        # a number without a unit
        ("1", 'time: missing unit in duration "1"'),
        ("3", 'time: missing unit in duration "3"'),
        ("-1", 'time: missing unit in duration "-1"'),
        ("00", 'time: missing unit in duration "00"'),
        ("1.5", 'time: missing unit in duration "1.5"'),
        ("1.", 'time: missing unit in duration "1."'),
        ("1h30", 'time: missing unit in duration "1h30"'),
        ("1.2.3s", 'time: missing unit in duration "1.2.3s"'),
        # units are everything up to the next digit or point
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        ("5d", 'time: unknown unit "d" in duration "5d"'),
        ("1sx", 'time: unknown unit "sx" in duration "1sx"'),
        ("1mx", 'time: unknown unit "mx" in duration "1mx"'),
        ("1S", 'time: unknown unit "S" in duration "1S"'),
        ("1H", 'time: unknown unit "H" in duration "1H"'),
        ("1 s", 'time: unknown unit " s" in duration "1 s"'),
        ("1s ", 'time: unknown unit "s " in duration "1s "'),
        ("1h-2m", 'time: unknown unit "h-" in duration "1h-2m"'),
        ("1e3s", 'time: unknown unit "e" in duration "1e3s"'),
        ("1sec", 'time: unknown unit "sec" in duration "1sec"'),
        ("1µ", 'time: unknown unit "\\xc2\\xb5" in duration "1\\xc2\\xb5"'),
        # overflow
        ("9223372036854775810ns", 'time: invalid duration "9223372036854775810ns"'),
        ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
        ("-9223372036854775809ns", 'time: invalid duration "-9223372036854775809ns"'),
        ("9223372036854776us", 'time: invalid duration "9223372036854776us"'),
        ("3000000h", 'time: invalid duration "3000000h"'),
        ("9223372036854775.808us", 'time: invalid duration "9223372036854775.808us"'),
        ("9223372036854ms775us808ns", 'time: invalid duration "9223372036854ms775us808ns"'),
        ("2562047h47m16.854775808s", 'time: invalid duration "2562047h47m16.854775808s"'),
        ("2562047h2562047h", 'time: invalid duration "2562047h2562047h"'),
        ("-2562047h2562047h", 'time: invalid duration "-2562047h2562047h"'),
        # an integer part beyond 2^63 fails before its unit is read
        ("99999999999999999999", 'time: invalid duration "99999999999999999999"'),
        ("99999999999999999999d", 'time: invalid duration "99999999999999999999d"'),
    ],
)
def test_parse_duration_errors_are_go_s(text, message):
    with pytest.raises(DurationError) as raised:
        parse_duration(text)
    assert str(raised.value) == message
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (1e-9, "1ns"),
        (999e-9, "999ns"),
        (1.1e-6, "1.1µs"),
        (2.2e-3, "2.2ms"),
        (0.3, "300ms"),
        (0.1234567, "123.4567ms"),
        (0.999, "999ms"),
        (1, "1s"),
        (3.3, "3.3s"),
        (59, "59s"),
        (60, "1m0s"),
        (90, "1m30s"),
        (4 * 60 + 5, "4m5s"),
        (4 * 60 + 5.001, "4m5.001s"),
        (3600, "1h0m0s"),
        (5400, "1h30m0s"),
        (5 * 3600 + 6 * 60 + 7.001, "5h6m7.001s"),
        (8 * 60 + 1e-9, "8m0.000000001s"),
        (100 * 3600, "100h0m0s"),
        (-1e-9, "-1ns"),
        (-1.5, "-1.5s"),
        (-90, "-1m30s"),
        (-5400, "-1h30m0s"),
    ],
)
def test_format_duration_matches_go(seconds, text):
    assert format_duration(seconds) == text
    assert parse_duration(text) == pytest.approx(seconds, abs=1e-12)


@given(st.integers(min_value=-9_223_372_036_854, max_value=9_223_372_036_854))
def test_whole_milliseconds_round_trip(milliseconds):
    text = format_duration(milliseconds / 1000)
    assert parse_duration_ns(text) == milliseconds * MS
    assert parse_duration(text) == milliseconds / 1000


@given(
    st.one_of(
        st.text(),
        st.text(alphabet="0123456789.+-nsuµμmhd x"),
        st.from_regex(r"\A[+-]?([0-9]*(\.[0-9]*)?(ns|us|µs|μs|ms|s|m|h|d)?)+\Z"),
    )
)
def test_parse_raises_nothing_but_duration_error(text):
    message = ""
    try:
        value = parse_duration_ns(text)
    except DurationError as error:
        message = str(error)
    else:
        assert -(1 << 63) <= value < (1 << 63)
    assert message == "" or message.startswith("time: ")
