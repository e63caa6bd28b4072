from datetime import UTC, datetime

import pytest

from taintplane.api.decoding import DecodeError
from taintplane.api.field import Path
from taintplane.api.taints import Taint, TaintEffect, parse_taints, taints_to_list


@pytest.mark.parametrize(
    "wire",
    [
        pytest.param({"key": "dedicated", "value": "banana", "effect": "NoSchedule"}, id="full"),
        pytest.param({"key": "gpu", "effect": "NoExecute"}, id="no-value"),
        pytest.param(
            {
                "key": "node.kubernetes.io/unreachable",
                "effect": "NoExecute",
                "timeAdded": "2024-05-01T10:20:30Z",
            },
            id="time-added",
        ),
        pytest.param({"key": "", "effect": ""}, id="empty-key-and-effect-stay-present"),
        pytest.param({"key": "k", "effect": "Bogus"}, id="unknown-effect-survives-for-validation"),
    ],
)
def test_a_taint_round_trips_through_its_wire_form(wire):
    assert Taint.from_dict(wire).to_dict() == wire


def test_wire_form_drops_an_empty_value_and_null_time_as_kubernetes_does():
    taint = Taint.from_dict({"key": "k", "value": "", "effect": "NoSchedule", "timeAdded": None})
    assert taint.to_dict() == {"key": "k", "effect": "NoSchedule"}


def test_time_added_is_written_in_utc_whole_seconds():
    taint = Taint.from_dict(
        {"key": "k", "effect": "NoExecute", "timeAdded": "2024-05-01T12:20:30.75+02:00"}
    )
    assert taint.time_added == datetime(2024, 5, 1, 10, 20, 30, 750000, tzinfo=UTC)
    assert taint.to_dict()["timeAdded"] == "2024-05-01T10:20:30Z"


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        pytest.param(
            {"key": 5, "effect": "NoSchedule"},
            "json: cannot unmarshal number into Go struct field Taint.spec.taints.key of type string",
            id="numeric-key",
        ),
        pytest.param(
            {"key": "k", "effect": ["NoSchedule"]},
            "json: cannot unmarshal array into Go struct field Taint.spec.taints.effect of type string",
            id="list-effect",
        ),
        pytest.param(
            {"key": "k", "effect": "NoExecute", "timeAdded": 17},
            "json: cannot unmarshal number into Go struct field Taint.spec.taints.timeAdded of type v1.Time",
            id="numeric-time",
        ),
        pytest.param(
            {"key": "k", "effect": "NoExecute", "timeAdded": "yesterday"},
            'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"',
            id="bad-time",
        ),
    ],
)
def test_wrongly_typed_taint_fields_are_decode_errors(wire, message):
    with pytest.raises(DecodeError) as caught:
        parse_taints([wire], Path.root("spec", "taints"))
    assert caught.value.message == message


def test_a_taint_list_must_be_a_list_of_objects():
    with pytest.raises(
        DecodeError,
        match=r"cannot unmarshal string into Go struct field NodeSpec\.spec\.taints of type",
    ):
        parse_taints("k=v:NoSchedule", Path.root("spec", "taints"))
    with pytest.raises(DecodeError, match=r"of type v1\.Taint"):
        parse_taints(["k"], Path.root("spec", "taints"))


def test_null_and_absent_taint_lists_are_empty():
    assert parse_taints(None, Path.root("spec", "taints")) == []
    assert taints_to_list([Taint("a", "NoSchedule")]) == [{"key": "a", "effect": "NoSchedule"}]


@pytest.mark.parametrize(
    ("taint", "text"),
    [
        (Taint("foo", "NoSchedule", "bar"), "foo=bar:NoSchedule"),
        (Taint("foo", "NoSchedule"), "foo:NoSchedule"),
        (Taint("foo", "", "bar"), "foo=bar:"),
        (Taint("foo", ""), "foo"),
    ],
)
def test_taint_string_form_matches_kubernetes_to_string(taint, text):
    assert str(taint) == text


def test_taints_are_identified_by_key_and_effect():
    assert Taint("k", "NoSchedule", "a").matches(Taint("k", "NoSchedule", "b"))
    assert not Taint("k", "NoSchedule").matches(Taint("k", "NoExecute"))
    assert not Taint("k", "NoSchedule").matches(Taint("j", "NoSchedule"))


def test_effects_are_the_three_kubernetes_effects():
    assert [e.value for e in TaintEffect] == ["NoSchedule", "PreferNoSchedule", "NoExecute"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2024-13-01T00:00:00Z", 'parsing time "2024-13-01T00:00:00Z": month out of range'),
        ("2024-01-00T00:00:00Z", 'parsing time "2024-01-00T00:00:00Z": day out of range'),
        ("2023-02-30T00:00:00Z", 'parsing time "2023-02-30T00:00:00Z": day out of range'),
        ("2024-01-01T24:00:00Z", 'parsing time "2024-01-01T24:00:00Z": hour out of range'),
        ("2024-01-01T00:60:00Z", 'parsing time "2024-01-01T00:60:00Z": minute out of range'),
        ("2024-01-01T00:00:60Z", 'parsing time "2024-01-01T00:00:60Z": second out of range'),
    ],
)
def test_out_of_range_times_are_decode_errors(text, message):
    with pytest.raises(DecodeError) as caught:
        Taint.from_dict({"key": "k", "effect": "NoExecute", "timeAdded": text})
    assert caught.value.message == message
