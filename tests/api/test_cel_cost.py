"""Worst-case selector costs as upstream's estimator gives them (the expected figures are
those of k8s.io/dynamic-resource-allocation/cel's compile tests), and the limit."""

from __future__ import annotations

import pytest

from taintplane.api.cel_cost import CEL_SELECTOR_EXPRESSION_MAX_COST, estimate_cost

TEN = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
DEEP = (
    f"{TEN}.all(x, {TEN}.all(y, {TEN}.all(z, {TEN}.all(z2, {TEN}.all(z3, {TEN}.all(z4, "
    f"{TEN}.all(z5, int('1'.find('[0-9]*')) < 100)))))))"
)
ALL = """
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
"""
DRA = 'device.attributes["dra.example.com"]'
CAP = 'device.capacity["dra.example.com"]'


@pytest.mark.parametrize(
    ("expression", "cost"),
    [
        (
            f'{DRA.replace("dra.example.com", "no-such-domain")}.noSuchAttr.isGreaterThan(quantity("0"))',
            6,
        ),
        ('"no-such-domain" in device.attributes', 3),
        ('device.driver == ""', 2),
        ('device.driver == "dra.example.com"', 4),
        (f"{DRA}.name", 4),
        (f'{DRA}["name"]', 4),
        (f"cel.bind(dra, {DRA}, dra.name)", 15),
        (f"{DRA}.name > 0", 5),
        (f'{DRA}.name == "fish"', 5),
        (f'{DRA}.name.isGreaterThan(semver("0.0.1"))', 6),
        (f'{DRA}.name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)', 7),
        (f'{CAP}.name.isGreaterThan(quantity("1Ki"))', 6),
        (f'"name" in {CAP} && {CAP}.name.isGreaterThan(quantity("1Ki"))', 10),
        (f'!("name" in {CAP}) || {CAP}.name.isGreaterThan(quantity("1Ki"))', 11),
        (ALL, 52),
        (f"{DRA}.a && {DRA}.b && {DRA}.c", 12),
        ('device.attributes.exists_one(x, x == "dra.example.com")', 164),
        (f'{DRA}.exists_one(x, x == "services")', 133),
        (f'{DRA}.services.split("example").size() >= 2', 19),
        (f'{DRA}.services.matches("[^a]?sym")', 18),
        ('device.capacity.exists_one(x, x == "dra.example.com")', 164),
        (f'{CAP}.exists_one(x, x == "memory")', 133),
        (DEEP, 85555551),
    ],
)
def test_upstreams_estimates(expression: str, cost: int) -> None:
    assert estimate_cost(expression) == cost


def test_the_limit_sits_between_three_and_four_nested_loops_over_attributes() -> None:
    three = f"{DRA}.all(a, {DRA}.all(b, {DRA}.all(c, a != c)))"
    four = f"{DRA}.all(a, {DRA}.all(b, {DRA}.all(c, {DRA}.all(d, a != d))))"
    assert estimate_cost(three) <= CEL_SELECTOR_EXPRESSION_MAX_COST < estimate_cost(four)


UNBOUNDED = 2**64 - 1


@pytest.mark.parametrize(
    ("expression", "cost"),
    [
        # A map literal costs 30, an index 1, an equality of scalars 1.
        ('{"a": 1}["a"] == 1', 32),
        ("{}.size() == 0", 32),
        # ?: costs the condition and the dearer branch.
        ('device.driver == "a" ? 1 : 2', 3),
        # `in` a list: one per element; a list literal 10.
        ("1 in [1, 2, 3]", 13),
        # Concatenated strings: 0.1 per character of the result (1 + 63).
        ('"a" + device.driver == "x"', 10),
        ('has(device.attributes["d"].x)', 4),
        ('device.driver.contains("gpu")', 9),
        ('device.driver.startsWith("gpu")', 3),
        ('device.driver < "b"', 3),
        ("1 < 2", 1),
        ("!true", 1),
        ("[].all(x, true)", 11),
        ("x.y", 2),
        ("cel.bind(1, 2, true)", 10),
        # Two-variable comprehension over the domains: 32 * (12 + 1).
        ("device.attributes.map(d, v, v).size() > 0", 2 + 11 + 32 * 13 + 1 + 1),
        ('device.attributes["d"].x.find("[0-9]+") == "1"', 4 + 7 * 2 + 1),
    ],
)
def test_costs_by_cel_gos_rules(expression: str, cost: int) -> None:
    assert estimate_cost(expression) == cost


def test_a_loop_over_something_of_unknown_size_costs_the_most() -> None:
    assert estimate_cost('device.attributes["d"].x.lowerAscii().all(c, c != "a")') == UNBOUNDED
    assert estimate_cost("[].all(x, x == foo())") == 11
