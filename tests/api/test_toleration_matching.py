import pytest

from taintplane.api.decoding import DecodeError
from taintplane.api.field import Path
from taintplane.api.taints import Taint
from taintplane.api.tolerations import (
    TaintFilter,
    Toleration,
    find_untolerated_taint,
    matching_tolerations,
    min_toleration_seconds,
    parse_int64,
    parse_tolerations,
    tolerate_taint,
    tolerations_to_list,
)

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
PREFER = "PreferNoSchedule"


# Cases from Kubernetes' TestTolerationToleratesTaint (core/v1 toleration_test.go).
@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        pytest.param(
            Toleration("foo", "Exists", "", NO_SCHEDULE),
            Taint("foo", NO_SCHEDULE),
            True,
            id="exists-same-key-effect-taint-without-value",
        ),
        pytest.param(
            Toleration("foo", "Exists", "", NO_SCHEDULE),
            Taint("foo", NO_SCHEDULE, "bar"),
            True,
            id="exists-same-key-effect-taint-with-value",
        ),
        pytest.param(
            Toleration("", "Exists", "", NO_SCHEDULE),
            Taint("foo", NO_SCHEDULE, "bar"),
            True,
            id="empty-key-exists-matches-every-key",
        ),
        pytest.param(
            Toleration("foo", "Equal", "bar", NO_SCHEDULE),
            Taint("foo", NO_SCHEDULE, "bar"),
            True,
            id="equal-same-key-value-effect",
        ),
        pytest.param(
            Toleration("foo", "Equal", "value1", NO_SCHEDULE),
            Taint("foo", NO_SCHEDULE, "value2"),
            False,
            id="equal-different-values",
        ),
        pytest.param(
            Toleration("foo", "Equal", "bar", NO_EXECUTE),
            Taint("foo", NO_SCHEDULE, "bar"),
            False,
            id="equal-different-effects",
        ),
        pytest.param(
            Toleration("foo", "", "bar", NO_SCHEDULE),
            Taint("foo", NO_SCHEDULE, "bar"),
            True,
            id="empty-operator-means-equal",
        ),
        pytest.param(
            Toleration("foo", "", "", NO_SCHEDULE),
            Taint("foo", NO_SCHEDULE, "bar"),
            False,
            id="empty-operator-empty-value-needs-empty-taint-value",
        ),
        pytest.param(
            Toleration("foo", "Exists", "", ""),
            Taint("foo", NO_EXECUTE, "x"),
            True,
            id="empty-effect-matches-every-effect",
        ),
        pytest.param(
            Toleration("", "Exists", "", ""),
            Taint("anything", PREFER, "x"),
            True,
            id="empty-key-exists-empty-effect-tolerates-everything",
        ),
        pytest.param(
            Toleration("foo", "Exists", "", NO_SCHEDULE),
            Taint("bar", NO_SCHEDULE),
            False,
            id="different-keys",
        ),
        pytest.param(
            Toleration("foo", "Bogus", "bar", NO_SCHEDULE),
            Taint("foo", NO_SCHEDULE, "bar"),
            False,
            id="unknown-operator-matches-nothing",
        ),
        # Upstream skips the key check for any empty key; validation is what forbids it.
        pytest.param(
            Toleration("", "Equal", "", ""),
            Taint("k", NO_SCHEDULE),
            True,
            id="empty-key-with-equal-still-matches-any-key",
        ),
        pytest.param(
            Toleration("", "Equal", "v", ""),
            Taint("k", NO_SCHEDULE),
            False,
            id="empty-key-with-equal-compares-values",
        ),
    ],
)
def test_a_toleration_tolerates_a_taint_as_kubernetes_decides(toleration, taint, expected):
    assert toleration.tolerates(taint) is expected
    # The comparison gate changes nothing for Equal and Exists.
    assert toleration.tolerates(taint, comparison_operators=True) is expected


# Gt/Lt compare the taint's value against the toleration's: Gt tolerates a larger taint value.
@pytest.mark.parametrize(
    ("operator", "toleration_value", "taint_value", "expected"),
    [
        pytest.param("Gt", "5", "10", True, id="gt-taint-larger"),
        pytest.param("Gt", "10", "5", False, id="gt-taint-smaller"),
        pytest.param("Gt", "5", "5", False, id="gt-equal-is-not-greater"),
        pytest.param("Lt", "10", "5", True, id="lt-taint-smaller"),
        pytest.param("Lt", "5", "10", False, id="lt-taint-larger"),
        pytest.param("Lt", "5", "5", False, id="lt-equal-is-not-less"),
        pytest.param("Gt", "-3", "2", True, id="negative-toleration-value"),
        pytest.param("Gt", "-3", "+2", False, id="plus-sign-is-not-canonical"),
        pytest.param("Gt", "1", "007", False, id="leading-zeros-are-not-canonical"),
        pytest.param("Gt", "-1", "0", True, id="zero"),
        pytest.param("Lt", "1", "-0", False, id="minus-zero-is-not-canonical"),
        pytest.param("Gt", "5", "abc", False, id="non-numeric-taint-value"),
        pytest.param("Lt", "x", "1", False, id="non-numeric-toleration-value"),
        pytest.param("Gt", "1", "1_000", False, id="underscores-are-not-digits"),
        pytest.param("Gt", "1", " 5", False, id="spaces-are-not-digits"),
        pytest.param("Gt", "1", "9223372036854775808", False, id="int64-overflow"),
        pytest.param("Lt", "9223372036854775807", "-9223372036854775808", True, id="int64-bounds"),
    ],
)
def test_comparison_operators_compare_integers_when_the_gate_is_on(
    operator, toleration_value, taint_value, expected
):
    toleration = Toleration("gpu-mem", operator, toleration_value, NO_SCHEDULE)
    taint = Taint("gpu-mem", NO_SCHEDULE, taint_value)
    assert toleration.tolerates(taint, comparison_operators=True) is expected
    assert toleration.tolerates(taint) is False  # gate off: Lt/Gt never match


def test_parse_int64_is_go_strconv_parse_int():
    assert parse_int64("42") == 42
    assert parse_int64("0") == 0
    assert parse_int64("-0") is None
    assert parse_int64("-") is None
    assert parse_int64("") is None
    assert parse_int64("٣") is None  # only ASCII digits


def test_a_list_tolerates_a_taint_if_any_toleration_does():
    taint = Taint("foo", NO_SCHEDULE, "bar")
    assert tolerate_taint([Toleration("x", "Exists"), Toleration("foo", "Equal", "bar")], taint)
    assert not tolerate_taint([Toleration("x", "Exists")], taint)
    assert not tolerate_taint([], taint)


NODE_TAINTS = [
    Taint("pref", PREFER),
    Taint("sched", NO_SCHEDULE, "a"),
    Taint("exec", NO_EXECUTE),
]


@pytest.mark.parametrize(
    ("tolerations", "taint_filter", "expected"),
    [
        pytest.param([], TaintFilter.ALL, NODE_TAINTS[0], id="all-first-is-prefer"),
        pytest.param([], TaintFilter.DO_NOT_SCHEDULE, NODE_TAINTS[1], id="skip-prefer"),
        pytest.param([], TaintFilter.NO_EXECUTE, NODE_TAINTS[2], id="noexecute-only"),
        pytest.param(
            [Toleration("sched", "Exists")],
            TaintFilter.DO_NOT_SCHEDULE,
            NODE_TAINTS[2],
            id="first-tolerated-then-next",
        ),
        pytest.param(
            [Toleration("sched", "Exists"), Toleration("exec", "Exists", "", NO_EXECUTE)],
            TaintFilter.DO_NOT_SCHEDULE,
            None,
            id="all-tolerated",
        ),
        pytest.param([Toleration("", "Exists")], TaintFilter.ALL, None, id="tolerate-everything"),
        pytest.param([], lambda t: t.key == "exec", NODE_TAINTS[2], id="custom-filter"),
    ],
)
def test_first_untolerated_taint_respects_node_order_and_filter(
    tolerations, taint_filter, expected
):
    assert find_untolerated_taint(NODE_TAINTS, tolerations, taint_filter) == expected


def test_no_taints_means_nothing_untolerated():
    assert find_untolerated_taint([], [], TaintFilter.ALL) is None


def test_matching_tolerations_takes_the_first_match_per_taint():
    first = Toleration("a", "Exists", "", NO_EXECUTE, 10)
    second = Toleration("a", "Exists", "", "", 5)
    other = Toleration("b", "Exists")
    taints = [Taint("a", NO_EXECUTE), Taint("b", NO_EXECUTE)]
    assert matching_tolerations(taints, [first, second, other]) == [first, other]
    assert matching_tolerations(taints, [first]) is None
    assert matching_tolerations([], []) == []
    assert matching_tolerations(taints, []) is None


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        pytest.param([], 0, id="no-tolerations-means-now"),
        pytest.param([None], None, id="unset-means-forever"),
        pytest.param([None, None], None, id="all-unset-means-forever"),
        pytest.param([300], 300, id="one"),
        pytest.param([300, 60, None], 60, id="minimum-of-set"),
        pytest.param([300, 0], 0, id="zero-means-now"),
        pytest.param([300, -5], 0, id="negative-means-now"),
        pytest.param([2**63 - 1], 2**63 - 1, id="huge-is-kept"),
    ],
)
def test_min_toleration_seconds(seconds, expected):
    tolerations = [Toleration("k", "Exists", "", NO_EXECUTE, s) for s in seconds]
    assert min_toleration_seconds(tolerations) == expected


@pytest.mark.parametrize(
    "wire",
    [
        pytest.param({}, id="empty"),
        pytest.param({"key": "k", "value": "v", "effect": "NoSchedule"}, id="absent-operator"),
        pytest.param({"key": "k", "operator": "Equal", "value": "v"}, id="explicit-equal"),
        pytest.param({"operator": "Exists"}, id="tolerate-all"),
        pytest.param(
            {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0},
            id="zero-seconds",
        ),
        pytest.param(
            {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": -7},
            id="negative-seconds",
        ),
    ],
)
def test_a_toleration_round_trips_and_keeps_an_absent_operator_absent(wire):
    toleration = Toleration.from_dict(wire)
    assert toleration.to_dict() == wire
    assert tolerations_to_list([toleration]) == [wire]


def test_absent_operator_differs_from_equal_but_matches_the_same():
    absent = Toleration.from_dict({"key": "k", "value": "v"})
    equal = Toleration.from_dict({"key": "k", "operator": "Equal", "value": "v"})
    assert absent != equal
    assert absent.operator == ""
    taint = Taint("k", NO_SCHEDULE, "v")
    assert absent.tolerates(taint)
    assert equal.tolerates(taint)


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        pytest.param(
            {"tolerationSeconds": "300"},
            "json: cannot unmarshal string into Go struct field "
            "Toleration.spec.tolerations.tolerationSeconds of type int64",
            id="string-seconds",
        ),
        pytest.param(
            {"tolerationSeconds": 1.5},
            "json: cannot unmarshal number 1.5 into Go struct field "
            "Toleration.spec.tolerations.tolerationSeconds of type int64",
            id="fractional-seconds",
        ),
        pytest.param(
            {"tolerationSeconds": 2**63},
            "json: cannot unmarshal number 9223372036854775808 into Go struct field "
            "Toleration.spec.tolerations.tolerationSeconds of type int64",
            id="overflow",
        ),
        pytest.param(
            {"tolerationSeconds": True},
            "json: cannot unmarshal bool into Go struct field "
            "Toleration.spec.tolerations.tolerationSeconds of type int64",
            id="bool-seconds",
        ),
        pytest.param(
            {"operator": {"x": 1}},
            "json: cannot unmarshal object into Go struct field "
            "Toleration.spec.tolerations.operator of type string",
            id="object-operator",
        ),
    ],
)
def test_wrongly_typed_toleration_fields_are_decode_errors(wire, message):
    with pytest.raises(DecodeError) as caught:
        parse_tolerations([wire], Path.root("spec", "tolerations"))
    assert caught.value.message == message


def test_toleration_lists_parse_null_and_refuse_non_lists():
    assert parse_tolerations(None, Path.root("spec", "tolerations")) == []
    with pytest.raises(DecodeError, match=r"of type \[\]v1\.Toleration"):
        parse_tolerations({"key": "k"}, Path.root("spec", "tolerations"))
    with pytest.raises(DecodeError, match=r"of type v1\.Toleration"):
        parse_tolerations([7], Path.root("spec", "tolerations"))


def test_match_toleration_ignores_seconds_only():
    a = Toleration("k", "Exists", "", NO_EXECUTE, 1)
    assert a.matches(Toleration("k", "Exists", "", NO_EXECUTE, 99))
    assert not a.matches(Toleration("k", "", "", NO_EXECUTE, 1))
