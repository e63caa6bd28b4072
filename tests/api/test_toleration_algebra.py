import pytest
from hypothesis import given
from hypothesis import strategies as st

from taintplane.api.taints import Taint
from taintplane.api.toleration_algebra import (
    add_or_update,
    is_superset,
    merge,
    verify_against_whitelist,
)
from taintplane.api.tolerations import Toleration, tolerate_taint

NE = "NoExecute"
NS = "NoSchedule"


# Cases from Kubernetes' pkg/util/tolerations TestIsSuperset.
@pytest.mark.parametrize(
    ("ss", "t", "expected"),
    [
        pytest.param(
            Toleration("k", "Equal", "v", NS), Toleration("k", "Equal", "v", NS), True, id="equal"
        ),
        pytest.param(
            Toleration("k", "", "v", NS),
            Toleration("k", "", "v", NS),
            True,
            id="identical-absent-operators",
        ),
        pytest.param(
            Toleration("k", "Exists", "", NS),
            Toleration("k", "Equal", "v", NS),
            True,
            id="exists-covers-equal",
        ),
        pytest.param(
            Toleration("k", "Equal", "v", NS),
            Toleration("k", "Exists", "", NS),
            False,
            id="equal-does-not-cover-exists",
        ),
        pytest.param(
            Toleration("", "Exists"),
            Toleration("k", "Equal", "v", NE, 5),
            True,
            id="tolerate-all-covers-all",
        ),
        pytest.param(
            Toleration("", "Equal", "v"),
            Toleration("k", "Equal", "v"),
            False,
            id="empty-key-needs-exists",
        ),
        pytest.param(
            Toleration("k", "Exists"),
            Toleration("k", "Exists", "", NS),
            True,
            id="empty-effect-covers-effect",
        ),
        pytest.param(
            Toleration("k", "Exists", "", NS),
            Toleration("k", "Exists"),
            False,
            id="effect-does-not-cover-empty",
        ),
        pytest.param(
            Toleration("k", "Exists", "", NS),
            Toleration("k", "Exists", "", NE),
            False,
            id="different-effects",
        ),
        pytest.param(
            Toleration("a", "Exists"), Toleration("b", "Exists"), False, id="different-keys"
        ),
        pytest.param(
            Toleration("k", "Equal", "v"),
            Toleration("k", "Equal", "w"),
            False,
            id="different-values",
        ),
        pytest.param(
            Toleration("k", "Exists", "", NE, 10),
            Toleration("k", "Exists", "", NE, 5),
            True,
            id="longer-seconds-cover-shorter",
        ),
        pytest.param(
            Toleration("k", "Exists", "", NE, 5),
            Toleration("k", "Exists", "", NE, 10),
            False,
            id="shorter-seconds-do-not-cover-longer",
        ),
        pytest.param(
            Toleration("k", "Exists", "", NE, 5),
            Toleration("k", "Exists", "", NE),
            False,
            id="seconds-do-not-cover-forever",
        ),
        pytest.param(
            Toleration("k", "Exists", "", NE),
            Toleration("k", "Exists", "", NE, 5),
            True,
            id="forever-covers-seconds",
        ),
        # An absent operator is not "Equal" here: upstream compares t's operator literally.
        pytest.param(
            Toleration("k", "Equal", "v"),
            Toleration("k", "", "v"),
            False,
            id="equal-does-not-cover-absent",
        ),
        pytest.param(
            Toleration("k", "", "v"), Toleration("k", "Equal", "v"), True, id="absent-covers-equal"
        ),
        pytest.param(
            Toleration("k", "Gt", "5"),
            Toleration("k", "Gt", "7"),
            False,
            id="gt-covers-only-itself",
        ),
        pytest.param(
            Toleration("k", "Gt", "5"), Toleration("k", "Gt", "5"), True, id="identical-gt"
        ),
        pytest.param(
            Toleration("k", "Exists"), Toleration("k", "Lt", "5"), True, id="exists-covers-lt"
        ),
        pytest.param(
            Toleration("k", "Equal", "5"),
            Toleration("k", "Lt", "5"),
            False,
            id="equal-does-not-cover-lt",
        ),
    ],
)
def test_is_superset(ss, t, expected):
    assert is_superset(ss, t) is expected


# Cases in the spirit of Kubernetes' TestMergeTolerations.
@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        pytest.param([], [], [], id="empty"),
        pytest.param([Toleration("a", "Exists")], [], [Toleration("a", "Exists")], id="first-only"),
        pytest.param(
            [], [Toleration("a", "Exists")], [Toleration("a", "Exists")], id="second-only"
        ),
        pytest.param(
            [Toleration("a", "Exists")],
            [Toleration("a", "Exists")],
            [Toleration("a", "Exists")],
            id="dedupe",
        ),
        pytest.param(
            [Toleration("a", "Equal", "v")],
            [Toleration("a", "Exists")],
            [Toleration("a", "Exists")],
            id="later-superset-wins",
        ),
        pytest.param(
            [Toleration("a", "Exists")],
            [Toleration("a", "Equal", "v")],
            [Toleration("a", "Exists")],
            id="earlier-superset-wins",
        ),
        pytest.param(
            [Toleration("a", "Exists", "", NE, 5)],
            [Toleration("a", "Exists", "", NE, 10)],
            [Toleration("a", "Exists", "", NE, 10)],
            id="longest-seconds-kept",
        ),
        pytest.param(
            [Toleration("a", "", "v")],
            [Toleration("a", "Equal", "v")],
            [Toleration("a", "", "v")],
            id="absent-covers-equal-later",
        ),
        pytest.param(
            [Toleration("a", "Equal", "v")],
            [Toleration("a", "", "v")],
            [Toleration("a", "", "v")],
            id="absent-later-covers-equal",
        ),
        pytest.param(
            [Toleration("a", "Exists", "", NS), Toleration("b", "Equal", "x")],
            [Toleration("c", "Exists"), Toleration("", "Exists", "", NS)],
            [
                Toleration("b", "Equal", "x"),
                Toleration("c", "Exists"),
                Toleration("", "Exists", "", NS),
            ],
            id="order-preserved-subsumed-dropped",
        ),
    ],
)
def test_merge(first, second, expected):
    assert merge(first, second) == expected


@pytest.mark.parametrize(
    ("tolerations", "whitelist", "expected"),
    [
        pytest.param([], [Toleration("a", "Exists")], True, id="no-tolerations"),
        pytest.param([Toleration("a", "Exists")], [], True, id="no-whitelist"),
        pytest.param(
            [Toleration("a", "Equal", "v")], [Toleration("a", "Exists")], True, id="covered"
        ),
        pytest.param(
            [Toleration("a", "Exists")],
            [Toleration("a", "Equal", "v")],
            False,
            id="broader-than-whitelist",
        ),
        pytest.param(
            [Toleration("a", "Exists"), Toleration("b", "Exists")],
            [Toleration("a", "Exists")],
            False,
            id="one-not-covered",
        ),
        pytest.param(
            [Toleration("dedicated", "Equal", "banana", NS)],
            [Toleration("dedicated", "Equal", "banana")],
            True,
            id="dedicated-namespace",
        ),
        pytest.param(
            [Toleration("dedicated", "", "banana")],
            [Toleration("dedicated", "Equal", "banana")],
            False,
            id="absent-operator-not-covered-by-equal",
        ),
    ],
)
def test_verify_against_whitelist(tolerations, whitelist, expected):
    assert verify_against_whitelist(tolerations, whitelist) is expected


def test_add_or_update_appends_replaces_or_leaves_alone():
    base = [Toleration("a", "Exists", "", NE, 300), Toleration("b", "Exists")]
    same, changed = add_or_update(base, Toleration("a", "Exists", "", NE, 300))
    assert (same, changed) == (base, False)
    updated, changed = add_or_update(base, Toleration("a", "Exists", "", NE))
    assert changed is True
    assert updated == [Toleration("a", "Exists", "", NE), Toleration("b", "Exists")]
    added, changed = add_or_update(base, Toleration("c", "Exists"))
    assert changed is True
    assert added == [*base, Toleration("c", "Exists")]
    assert base == [Toleration("a", "Exists", "", NE, 300), Toleration("b", "Exists")]  # untouched


def test_add_or_update_replaces_every_duplicate():
    dupes = [Toleration("a", "Exists", "", NE, 1), Toleration("a", "Exists", "", NE, 2)]
    result, changed = add_or_update(dupes, Toleration("a", "Exists", "", NE))
    assert changed is True
    assert result == [Toleration("a", "Exists", "", NE), Toleration("a", "Exists", "", NE)]


# ---- invariants -------------------------------------------------------------------------

keys = st.sampled_from(["", "a", "b"])
values = st.sampled_from(["", "1", "5", "x"])
effects = st.sampled_from(["", "NoSchedule", "PreferNoSchedule", "NoExecute"])
operators = st.sampled_from(["", "Equal", "Exists", "Lt", "Gt"])
seconds = st.sampled_from([None, 0, 5, 10])
tolerations = st.builds(
    Toleration,
    key=keys,
    operator=operators,
    value=values,
    effect=effects,
    toleration_seconds=seconds,
)
toleration_lists = st.lists(tolerations, max_size=6)
node_taints = st.builds(Taint, key=keys.filter(bool), effect=effects.filter(bool), value=values)
gates = st.booleans()


def tolerated(tolerations_, taint, gate):
    return tolerate_taint(tolerations_, taint, comparison_operators=gate)


@given(toleration_lists, toleration_lists, node_taints, gates)
def test_merge_tolerates_exactly_what_its_inputs_tolerate(first, second, taint, gate):
    merged = merge(first, second)
    assert tolerated(merged, taint, gate) == tolerated([*first, *second], taint, gate)


@given(toleration_lists, toleration_lists, node_taints, gates)
def test_merge_is_order_insensitive_in_what_it_tolerates(first, second, taint, gate):
    assert tolerated(merge(first, second), taint, gate) == tolerated(
        merge(second, first), taint, gate
    )


@given(toleration_lists, toleration_lists)
def test_merge_is_idempotent(first, second):
    merged = merge(first, second)
    assert merge(merged, []) == merged
    assert merge([], merged) == merged
    assert merge(merged, merged) == merged


@given(tolerations, tolerations, node_taints, gates)
def test_a_superset_tolerates_at_least_as_much(ss, t, taint, gate):
    if is_superset(ss, t) and t.tolerates(taint, comparison_operators=gate):
        assert ss.tolerates(taint, comparison_operators=gate)


@given(toleration_lists, toleration_lists, node_taints, gates)
def test_a_list_that_covers_another_tolerates_at_least_as_much(covered, whitelist, taint, gate):
    if (
        whitelist
        and verify_against_whitelist(covered, whitelist)
        and tolerated(covered, taint, gate)
    ):
        assert tolerated(whitelist, taint, gate)


@given(toleration_lists, tolerations, node_taints, gates)
def test_add_or_update_keeps_the_new_toleration(existing, new, taint, gate):
    result, _ = add_or_update(existing, new)
    assert new in result
    if new.tolerates(taint, comparison_operators=gate):
        assert tolerated(result, taint, gate)
