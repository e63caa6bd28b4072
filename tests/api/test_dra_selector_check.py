"""The compile-time checks of DRA selectors (dracel.CompileCELExpression's): what upstream
accepts passes, undeclared names and unknown device fields are refused with cel-go's
location, and a result of a known non-bool type is refused."""

from __future__ import annotations

import pytest

from taintplane.api.dra_selector_check import selector_problem

ACCEPTED = [
    'device.driver == "gpu.example.com"',
    'device.attributes["d"].numa',  # an attribute value has the unknown type
    'device.capacity["d"].memory.compareTo(quantity("1Gi")) >= 0',
    'device.capacity["d"].memory.isGreaterThan(quantity("1Gi"))',
    'device.attributes["d"].model.startsWith("a100")',
    '!(device.driver == "x")',
    'device.driver == "a" ? true : false',
    'device.driver == "a" ? 1 : 2.0',  # branches of different types: unknown
    'strings.quote("a") == "a"',
    "size(device.driver) > 0",
    '{"a": 1}["a"] == 1',
    "-1 < 0 && 1u == 1u && 0x10 == 16 && 1.5 > 1.0 && .5 < 1.0",
    'b"ab" == b"ab" && r"a" == "a"',
    'has(device.attributes["d"].x)',
    'device.attributes["d"].x in [1, 2]',
    "[1, 2].all(x, x > 0)",
    "[1, 2].exists_one(x, x == 1)",
    "[1, 2].map(x, x * 2).size() == 2",
    "[1, 2].filter(x, x % 2 == 0).size() == 1",
    "{'a': 1}.map(k, v, v).size() == 1",
    "cel.bind(x, 1, x == 1)",
    "null == null",
    '1 + 2 == 3 && "a" + "b" == "ab" && 6 / 2 == 3',
    "[1, 'a'] == [1, 'a']",
    "[] == []",
    'device.attributes["d"].x.add(quantity("1")).sign() > 0',
    'semver("1.2.3").major() == 1 && isSemver("1.0.0")',
    'device.driver.matches("^gpu") // a comment',
    '"""long""" == "long"',
    "device.attributes[\"d\"][?'x'].orValue(1) == 1",
    "- -1 == 1",
    "device == device",
]


@pytest.mark.parametrize("expression", ACCEPTED)
def test_what_upstream_compiles_passes(expression: str) -> None:
    assert selector_problem(expression) is None


@pytest.mark.parametrize(
    ("expression", "kind"),
    [
        ("1", "int"),
        ("1 + 1", "int"),
        ("-1", "int"),
        ("-1.5", "double"),
        ("1u", "uint"),
        ("1.0", "double"),
        ("0x1F", "int"),
        ("1e3", "double"),
        ('"a"', "string"),
        ('"a" + "b"', "string"),
        ('b"x"', "bytes"),
        ('quantity("1")', "kubernetes.Quantity"),
        ('semver("1.0.0")', "kubernetes.Semver"),
        ("device", "kubernetes.DRADevice"),
        ("[1, 2]", "list(int)"),
        ("[device]", "list(kubernetes.DRADevice)"),
        ("(1)", "int"),
        ("null", "null_type"),
        ("device.driver.size()", "int"),
        ("device.driver.lowerAscii()", "string"),
        ('device.capacity["d"].memory', "kubernetes.Quantity"),
    ],
)
def test_a_known_non_bool_result_is_refused(expression: str, kind: str) -> None:
    assert selector_problem(expression) == (
        f"must evaluate to bool or the unknown type, not {kind}"
    )


def test_undeclared_names_and_unknown_device_fields_name_their_place() -> None:
    assert selector_problem("foo == 1") == (
        "compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' "
        "(in container '')\n | foo == 1\n | ^"
    )
    assert selector_problem("Foo{a: 1}.a == 1") == (
        "compilation failed: ERROR: <input>:1:1: undeclared reference to 'Foo' "
        "(in container '')\n | Foo{a: 1}.a == 1\n | ^"
    )
    assert selector_problem('device.name == "x"') == (
        "compilation failed: ERROR: <input>:1:7: undefined field 'name'\n"
        ' | device.name == "x"\n | ......^'
    )
    two = selector_problem('device.driver == "a" &&\n  bar && baz')
    assert two == (
        "compilation failed: ERROR: <input>:2:3: undeclared reference to 'bar' "
        "(in container '')\n |   bar && baz\n | ..^\n"
        "ERROR: <input>:2:10: undeclared reference to 'baz' (in container '')\n"
        " |   bar && baz\n | .........^"
    )


def test_a_syntax_error_is_a_compilation_failure() -> None:
    problem = selector_problem("device.attributes[")
    assert problem is not None
    assert problem.startswith("compilation failed: ERROR: <input>:1:19: Syntax error: ")
    assert "\n | device.attributes[\n | ..................^" in problem


@pytest.mark.parametrize(
    ("expression", "column"),
    [("cel.bind(a.b, 1, a.b)", 11), ("cel.bind(1, 2, true)", 10)],
)
def test_a_bind_needs_a_plain_variable_name(expression: str, column: int) -> None:
    assert selector_problem(expression) == (
        f"compilation failed: ERROR: <input>:1:{column}: cel.bind() variable names must be "
        f"simple identifiers\n | {expression}\n | " + "." * (column - 1) + "^"
    )
