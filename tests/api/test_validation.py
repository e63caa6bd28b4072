import pytest

from taintplane.api.field import ErrorType, FieldError, Path, aggregate_message
from taintplane.api.taints import Taint
from taintplane.api.tolerations import Toleration
from taintplane.api.validation import (
    comparison_operators_allowed,
    validate_labels,
    validate_node_taints,
    validate_runtimeclass_scheduling,
    validate_toleration_update,
    validate_tolerations,
)

TOLERATIONS = Path.root("spec", "tolerations")
# Kubernetes validates Node spec.taints under this path; the messages users see show it.
NODE_TAINTS = Path.root("metadata", "taints")

LABEL_VALUE_REGEX_ERROR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
NAME_REGEX_ERROR = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def messages(errors):
    return [str(e) for e in errors]


@pytest.mark.parametrize(
    "tolerations",
    [
        pytest.param([Toleration("foo", "Exists", "", "NoSchedule")], id="exists"),
        pytest.param([Toleration("foo", "Equal", "bar", "NoSchedule")], id="equal"),
        pytest.param([Toleration("foo", "", "bar", "PreferNoSchedule")], id="empty-operator"),
        pytest.param([Toleration("", "Exists")], id="tolerate-everything"),
        pytest.param(
            [Toleration("foo", "Exists", "", "NoExecute", 60)], id="seconds-with-noexecute"
        ),
        pytest.param(
            [Toleration("foo", "Exists", "", "NoExecute", -1)], id="negative-seconds-allowed"
        ),
        pytest.param([Toleration("foo", "Equal", "")], id="equal-empty-value"),
        pytest.param(
            [Toleration("a", "Exists"), Toleration("a", "Exists")], id="duplicates-allowed-in-pods"
        ),
    ],
)
def test_valid_tolerations(tolerations):
    assert validate_tolerations(tolerations, TOLERATIONS) == []


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        pytest.param(
            Toleration("foo", "Foo", "bar"),
            [
                'spec.tolerations[0].operator: Unsupported value: "Foo": supported values: "Equal", "Exists"'
            ],
            id="unknown-operator",
        ),
        pytest.param(
            Toleration("", "Equal", "bar"),
            [
                'spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, which means "match all values and all keys"'
            ],
            id="empty-key-needs-exists",
        ),
        pytest.param(
            Toleration("", "", ""),
            [
                'spec.tolerations[0].operator: Invalid value: "": operator must be Exists when `key` is empty, which means "match all values and all keys"'
            ],
            id="empty-key-empty-operator",
        ),
        pytest.param(
            Toleration("foo", "Exists", "bar", "NoSchedule"),
            [
                'spec.tolerations[0].operator: Invalid value: {"Key":"foo","Operator":"Exists",'
                '"Value":"bar","Effect":"NoSchedule","TolerationSeconds":null}: '
                "value must be empty when `operator` is 'Exists'"
            ],
            id="exists-with-value",
        ),
        pytest.param(
            Toleration("foo", "Exists", "", "NoSchedule", 20),
            [
                "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set"
            ],
            id="seconds-without-noexecute",
        ),
        pytest.param(
            Toleration("foo", "Exists", "", "", 20),
            [
                "spec.tolerations[0].effect: Invalid value: \"\": effect must be 'NoExecute' when `tolerationSeconds` is set"
            ],
            id="seconds-with-empty-effect",
        ),
        pytest.param(
            Toleration("foo", "Equal", "bar", "NoScheduleNoAdmit"),
            [
                'spec.tolerations[0].effect: Unsupported value: "NoScheduleNoAdmit": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"'
            ],
            id="unknown-effect",
        ),
        pytest.param(
            Toleration("foo", "Equal", "-bad-"),
            [f'spec.tolerations[0].operator: Invalid value: "-bad-": {LABEL_VALUE_REGEX_ERROR}'],
            id="bad-value-is-reported-at-operator",
        ),
        pytest.param(
            Toleration("foo", "Equal", "_" * 64),
            [
                f'spec.tolerations[0].operator: Invalid value: "{"_" * 64}": must be no more than 63 bytes;{LABEL_VALUE_REGEX_ERROR}'
            ],
            id="value-problems-joined-with-semicolon",
        ),
        pytest.param(
            Toleration("foo bar", "Exists"),
            [f'spec.tolerations[0].key: Invalid value: "foo bar": {NAME_REGEX_ERROR}'],
            id="bad-key",
        ),
        pytest.param(
            Toleration("foo", "Lt", "5", "NoSchedule"),
            [
                'spec.tolerations[0].operator: Unsupported value: "Lt": supported values: "Equal", "Exists", "Lt", "Gt"'
            ],
            id="lt-with-gate-off",
        ),
        pytest.param(
            Toleration("", "Gt", "5"),
            [
                'spec.tolerations[0].operator: Invalid value: "Gt": operator must be Exists when `key` is empty, which means "match all values and all keys"',
                'spec.tolerations[0].operator: Unsupported value: "Gt": supported values: "Equal", "Exists", "Lt", "Gt"',
            ],
            id="gt-empty-key-gate-off",
        ),
    ],
)
def test_invalid_tolerations_are_explained_as_kubernetes_does(toleration, expected):
    assert messages(validate_tolerations([toleration], TOLERATIONS)) == expected


def test_errors_follow_list_order_and_carry_the_index():
    errors = validate_tolerations(
        [Toleration("ok", "Exists"), Toleration("x", "Foo"), Toleration("y", "Exists", "v")],
        TOLERATIONS,
    )
    assert [e.field for e in errors] == [
        "spec.tolerations[1].operator",
        "spec.tolerations[2].operator",
    ]
    assert [e.type for e in errors] == [ErrorType.NOT_SUPPORTED, ErrorType.INVALID]
    assert [e.type.reason for e in errors] == ["FieldValueNotSupported", "FieldValueInvalid"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("5", [], id="valid"),
        pytest.param("-5", [], id="negative"),
        pytest.param("0", [], id="zero"),
        pytest.param(
            "",
            [
                'spec.tolerations[0].value: Invalid value: "": must be non-empty',
                'spec.tolerations[0].value: Invalid value: "": strconv.ParseInt: parsing "": invalid syntax',
            ],
            id="empty",
        ),
        pytest.param(
            "abc",
            [
                'spec.tolerations[0].value: Invalid value: "abc": must be a valid decimal integer in canonical form',
                'spec.tolerations[0].value: Invalid value: "abc": strconv.ParseInt: parsing "abc": invalid syntax',
            ],
            id="letters",
        ),
        pytest.param(
            "0100",
            [
                'spec.tolerations[0].value: Invalid value: "0100": must be a valid decimal integer in canonical form'
            ],
            id="leading-zero-parses-but-is-not-canonical",
        ),
        pytest.param(
            "+5",
            [
                'spec.tolerations[0].value: Invalid value: "+5": must be a valid decimal integer in canonical form'
            ],
            id="plus-sign",
        ),
        pytest.param(
            "99999999999999999999",
            [
                'spec.tolerations[0].value: Invalid value: "99999999999999999999": strconv.ParseInt: parsing "99999999999999999999": value out of range'
            ],
            id="out-of-range",
        ),
    ],
)
def test_comparison_operator_values_must_be_canonical_int64_when_allowed(value, expected):
    errors = validate_tolerations(
        [Toleration("mem", "Gt", value, "NoSchedule")], TOLERATIONS, comparison_operators=True
    )
    assert messages(errors) == expected


def test_lt_gt_are_allowed_on_update_when_the_old_pod_used_them():
    old = [Toleration("mem", "Lt", "5")]
    assert comparison_operators_allowed(False, old) is True
    assert comparison_operators_allowed(False, [Toleration("mem", "Exists")]) is False
    assert comparison_operators_allowed(True) is True
    assert comparison_operators_allowed(False) is False


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param([], [Toleration("a", "Exists")], [], id="add-to-none"),
        pytest.param(
            [Toleration("a", "Exists")],
            [Toleration("a", "Exists"), Toleration("b", "Exists")],
            [],
            id="add-one",
        ),
        pytest.param(
            [Toleration("a", "Exists", "", "NoExecute", 300)],
            [Toleration("a", "Exists", "", "NoExecute", 600)],
            [],
            id="seconds-may-grow",
        ),
        pytest.param(
            [Toleration("a", "Exists", "", "NoExecute", 300)],
            [Toleration("a", "Exists", "", "NoExecute")],
            [],
            id="seconds-may-be-dropped",
        ),
        pytest.param(
            [Toleration("a", "Exists", "", "NoExecute")],
            [Toleration("a", "Exists", "", "NoExecute", 5)],
            [],
            id="seconds-may-be-set",
        ),
        pytest.param(
            [Toleration("a", "Exists")],
            [],
            [
                "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"
            ],
            id="remove",
        ),
        pytest.param(
            [Toleration("a", "", "v")],
            [Toleration("a", "Equal", "v")],
            [
                "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"
            ],
            id="absent-operator-to-equal-is-a-change",
        ),
        pytest.param(
            [Toleration("a", "Exists")],
            [Toleration("a", "Exists"), Toleration("b", "Bogus")],
            [
                'spec.tolerations[1].operator: Unsupported value: "Bogus": supported values: "Equal", "Exists"'
            ],
            id="added-toleration-is-validated",
        ),
    ],
)
def test_pod_updates_may_only_add_tolerations_or_change_their_seconds(old, new, expected):
    assert messages(validate_toleration_update(new, old, TOLERATIONS)) == expected


@pytest.mark.parametrize(
    ("taints", "expected"),
    [
        pytest.param([Taint("dedicated", "NoSchedule", "banana")], [], id="valid"),
        pytest.param(
            [Taint("a", "NoSchedule"), Taint("a", "NoExecute")], [], id="same-key-other-effect"
        ),
        pytest.param(
            [Taint("a", "")],
            ["metadata.taints[0].effect: Required value"],
            id="effect-required",
        ),
        pytest.param(
            [Taint("a", "NoScheduleNoAdmit")],
            [
                'metadata.taints[0].effect: Unsupported value: "NoScheduleNoAdmit": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"'
            ],
            id="unknown-effect",
        ),
        pytest.param(
            [Taint("", "NoSchedule")],
            [
                'metadata.taints[0].key: Invalid value: "": name part must be non-empty',
                f'metadata.taints[0].key: Invalid value: "": {NAME_REGEX_ERROR}',
            ],
            id="empty-key",
        ),
        pytest.param(
            [Taint("a", "NoSchedule", "b c")],
            [f'metadata.taints[0].value: Invalid value: "b c": {LABEL_VALUE_REGEX_ERROR}'],
            id="bad-value",
        ),
        pytest.param(
            [Taint("a", "NoSchedule", "x"), Taint("a", "NoSchedule", "y")],
            [
                'metadata.taints[1]: Duplicate value: {"Key":"a","Value":"y","Effect":"NoSchedule","TimeAdded":null}: taints must be unique by key and effect pair'
            ],
            id="duplicate-key-and-effect",
        ),
    ],
)
def test_node_taints_are_validated_as_kubernetes_does(taints, expected):
    assert messages(validate_node_taints(taints, NODE_TAINTS)) == expected


def test_runtimeclass_scheduling_validates_selector_and_tolerations():
    path = Path.root("scheduling")
    assert (
        validate_runtimeclass_scheduling(
            {"sandbox": "gvisor"}, [Toleration("sandbox", "Exists")], path
        )
        == []
    )
    assert validate_runtimeclass_scheduling(None, [], path) == []
    errors = validate_runtimeclass_scheduling(
        {"bad key": "ok", "k": "-bad"},
        [
            Toleration("sandbox", "Exists", "", "NoExecute", 5),
            Toleration("sandbox", "Exists", "", "NoExecute", 10),
            Toleration("mem", "Gt", "5"),
            Toleration("x", "Foo"),
        ],
        path,
    )
    assert messages(errors) == [
        f'scheduling.nodeSelector: Invalid value: "bad key": {NAME_REGEX_ERROR}',
        f'scheduling.nodeSelector: Invalid value: "-bad": {LABEL_VALUE_REGEX_ERROR}',
        'scheduling.tolerations[2].operator: Unsupported value: "Gt": supported values: "Equal", "Exists", "Lt", "Gt"',
        'scheduling.tolerations[3].operator: Unsupported value: "Foo": supported values: "Equal", "Exists"',
        'scheduling.tolerations[1]: Duplicate value: {"Key":"sandbox","Operator":"Exists","Value":"","Effect":"NoExecute","TolerationSeconds":10}',
    ]


def test_labels_are_validated_in_sorted_key_order():
    assert messages(validate_labels({"b": "-", "a": "-"}, Path.root("x"))) == [
        f'x: Invalid value: "-": {LABEL_VALUE_REGEX_ERROR}',
        f'x: Invalid value: "-": {LABEL_VALUE_REGEX_ERROR}',
    ]


def test_field_errors_render_values_as_kubernetes_does():
    path = Path.root("spec").child("a", "b").index(2).key("k")
    assert str(path) == "spec.a.b[2][k]"
    assert str(FieldError.invalid(path, None, "d")) == 'spec.a.b[2][k]: Invalid value: "null": d'
    assert str(FieldError.invalid(path, 5, "d")) == "spec.a.b[2][k]: Invalid value: 5: d"
    assert str(FieldError.invalid(path, True, "d")) == "spec.a.b[2][k]: Invalid value: true: d"
    assert (
        str(FieldError.invalid(path, "tab\there\x01é", ""))
        == 'spec.a.b[2][k]: Invalid value: "tab\\there\\x01é"'
    )
    assert str(FieldError.invalid(path, "\u200b\U000e0001\x7f", "")) == (
        'spec.a.b[2][k]: Invalid value: "\\u200b\\U000e0001\\x7f"'
    )
    assert str(FieldError.required(path)) == "spec.a.b[2][k]: Required value"
    assert str(FieldError.required(path, "why")) == "spec.a.b[2][k]: Required value: why"
    assert str(FieldError.not_supported(path, "x", [])) == 'spec.a.b[2][k]: Unsupported value: "x"'
    assert FieldError.invalid(path, "v", "d").body == 'Invalid value: "v": d'
    with pytest.raises(TypeError):
        FieldError.invalid(path, object(), "d").body  # noqa: B018


def test_aggregate_message_matches_kubernetes_aggregate():
    one = FieldError.required(Path.root("a"))
    two = FieldError.required(Path.root("b"))
    assert aggregate_message([one]) == "a: Required value"
    assert aggregate_message([one, two, one]) == "[a: Required value, b: Required value]"


def test_time_added_in_a_duplicate_taint_renders_as_json_time():
    from datetime import UTC, datetime

    taint = Taint("a", "NoExecute", "", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC))
    errors = validate_node_taints([taint, taint], NODE_TAINTS)
    assert messages(errors) == [
        'metadata.taints[1]: Duplicate value: {"Key":"a","Value":"","Effect":"NoExecute","TimeAdded":"2024-01-02T03:04:05Z"}: taints must be unique by key and effect pair'
    ]
