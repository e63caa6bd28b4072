"""The CEL parse tree and printer behind the rewrite of the optional syntax and cel.bind:
printing and parsing again gives the same tree, and rewriting leaves other expressions be."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taintplane.api.cel_syntax import (
    Binary,
    Call,
    CelSyntaxError,
    Cond,
    Expr,
    Ident,
    Index,
    ListLit,
    Lit,
    MapLit,
    Select,
    Unary,
    needs_rewrite,
    parse,
    rewrite,
    unparse,
    without_optional_markers,
)

names = st.sampled_from(["device", "x", "a", "attributes", "model"])
literals = st.sampled_from(['"s"', "'t'", "1", "2u", "1.5", 'b"x"', "0x1F"]).map(Lit)
leaves = st.one_of(literals, names.map(Ident))


def _extend(inner: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    return st.one_of(
        st.builds(Select, inner, names, st.booleans()),
        st.builds(Index, inner, inner, st.booleans()),
        st.builds(Call, st.none() | inner, names, st.lists(inner, max_size=2).map(tuple)),
        st.lists(inner, max_size=3).map(lambda items: ListLit(tuple(items))),
        st.lists(st.tuples(inner, inner), max_size=2).map(lambda e: MapLit(tuple(e))),
        st.builds(Cond, inner, inner, inner),
        st.builds(Unary, st.sampled_from(["!", "-"]), inner),
        st.builds(
            Binary,
            st.sampled_from(["||", "&&", "==", "<", "in", "+", "-", "*", "%"]),
            inner,
            inner,
        ),
    )


trees = st.recursive(leaves, _extend, max_leaves=12)


@given(trees)
def test_printing_then_parsing_gives_the_same_tree(tree: Expr) -> None:
    assert parse(unparse(tree)) == tree


@pytest.mark.parametrize(
    "expression",
    ['device.driver == "x"', "[1, 2].all(x, x > 0)", "a.b[c](", "?!", "Msg{f: 1}"],
)
def test_expressions_without_the_syntax_are_never_rewritten(expression: str) -> None:
    assert rewrite(expression) == expression


def test_the_rewrite() -> None:
    assert rewrite('m.?a.b[?"k"].orValue(1)') == (
        '(((has(m.a) && has(m.a.b)) && __tp_has_index(m.a.b, "k")) ? '
        'optional.of(m.a.b["k"]) : optional.none()).orValue(1)'
    )
    assert rewrite("cel.bind(v, a.b, v.c + v.d)") == "(a.b.c + a.b.d)"
    assert rewrite("cel.bind(v, 1, [2].map(v, v) == [v])") == "([2].map(v, v) == [1])"


def test_a_bind_whose_value_a_comprehension_would_capture_is_refused() -> None:
    with pytest.raises(CelSyntaxError):
        rewrite("cel.bind(v, x, [1].all(x, x == v))")


@pytest.mark.parametrize(
    "expression",
    [
        "a.?b == (c",  # unclosed
        "a.?b c",  # something after the end
        "a.?1",  # a number for a field name
        "a.?b == M{f: 1}",  # message literals are left to the evaluator
        "[?a.?b]",  # optional list entries too
        "{?'k': a.?b}",  # and optional map entries
        "a.?b == ]",  # no operand
    ],
)
def test_what_the_parser_leaves_to_the_evaluator(expression: str) -> None:
    with pytest.raises(CelSyntaxError):
        rewrite(expression)


def test_markers_are_blanked_in_place() -> None:
    assert without_optional_markers("m.?a[?'k'] # x") == "m.?a[?'k'] # x"
    assert without_optional_markers("m.?a[?'k']") == "m. a[ 'k']"
    assert not needs_rewrite("a # b")
    # A character CEL has not: the evaluator's parser says so.
    assert rewrite("a.?b # c") == "a.?b # c"


def test_rewrites_reach_into_every_kind_of_expression() -> None:
    assert rewrite(".m.?a.orValue({'k': -c ? [1] : [2]})") == (
        "(has(.m.a) ? optional.of(.m.a) : optional.none()).orValue({'k': (-c ? [1] : [2])})"
    )
    assert rewrite("cel.bind(v, [-a, {a: 1}], [1].all(x, v[0] == x) && v[1].a == {v: v}[v])") == (
        "([1].all(x, ([-a, {a: 1}][0] == x)) && ([-a, {a: 1}][1].a == "
        "{[-a, {a: 1}]: [-a, {a: 1}]}[[-a, {a: 1}]]))"
    )
    assert rewrite("cel.bind(v, a + 1, [1].all(x, v == x))") == "[1].all(x, ((a + 1) == x))"
    with pytest.raises(CelSyntaxError, match="simple identifier"):
        rewrite("cel.bind(a.b, 1, true)")
