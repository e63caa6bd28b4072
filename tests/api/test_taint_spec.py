"""The kubectl taint grammar. Expected messages were captured from the real kubectl v1.32.4
on this machine (``kubectl --server=http://127.0.0.1:1 taint …``: parsing happens before any
request), except where a comment says they come from kubectl's source."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taintplane.api.taint_spec import (
    TaintChanges,
    TaintOperation,
    TaintSpecError,
    apply_taint_changes,
    check_add_remove_conflicts,
    parse_taint,
    parse_taint_changes,
    parse_taint_command,
    split_taint_args,
    validate_taint_command,
)
from taintplane.api.taints import Taint

NAME_REGEX_ERROR = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    ("spec", "taint"),
    [
        ("dedicated=banana:NoSchedule", Taint("dedicated", "NoSchedule", "banana")),
        ("gpu:NoExecute", Taint("gpu", "NoExecute")),
        ("k=:PreferNoSchedule", Taint("k", "PreferNoSchedule")),
        ("example.com/k=v:NoSchedule", Taint("example.com/k", "NoSchedule", "v")),
        ("key", Taint("key", "")),
    ],
)
def test_parse_taint_forms(spec, taint):
    assert parse_taint(spec) == taint


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["nodes", "n1", "k=v:Bogus"],
            "invalid taint effect: Bogus, unsupported taint effect",
            id="bad-effect",
        ),
        pytest.param(
            ["nodes", "n1", "k:"],
            "invalid taint effect: , unsupported taint effect",
            id="empty-effect",
        ),
        pytest.param(
            ["nodes", "n1", "k=v"],
            f"invalid taint spec: k=v, {NAME_REGEX_ERROR}",
            id="no-effect-key-absorbs-value",
        ),
        pytest.param(
            ["nodes", "n1", "k=v=w:NoSchedule"],
            "invalid taint spec: k=v=w:NoSchedule",
            id="two-equals",
        ),
        pytest.param(["nodes", "n1", "a:b:c"], "invalid taint spec: a:b:c", id="two-colons"),
        pytest.param(
            ["nodes", "n1", "k=-v:NoSchedule"],
            "invalid taint spec: k=-v:NoSchedule, a valid label must be an empty string or consist of "
            "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
            "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            id="bad-value",
        ),
        pytest.param(
            ["nodes", "n1", "k=v:NoSchedule", "k=w:NoSchedule"],
            "duplicated taints with the same key and effect: {k w NoSchedule <nil>}",
            id="duplicate",
        ),
        pytest.param(
            ["nodes", "n1", "a" * 64 + ":NoSchedule"],
            f"invalid taint spec: {'a' * 64}:NoSchedule, name part must be no more than 63 characters",
            id="long-key",
        ),
        pytest.param(
            ["nodes", "n1", "k=" + "v" * 64 + ":NoSchedule"],
            f"invalid taint spec: k={'v' * 64}:NoSchedule, must be no more than 63 characters",
            id="long-value",
        ),
        pytest.param(
            ["nodes", "n1", "a/b/c:NoSchedule"],
            "invalid taint spec: a/b/c:NoSchedule, a qualified name must consist of alphanumeric "
            "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
            "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and "
            "'/' (e.g. 'example.com/MyName')",
            id="two-slashes",
        ),
        pytest.param(
            ["nodes", "n1", "k-:NoSchedule"],
            f"invalid taint spec: k-:NoSchedule, {NAME_REGEX_ERROR}",
            id="dash-inside",
        ),
        pytest.param(
            ["nodes", "n1", "-"],
            f"invalid taint spec: , name part must be non-empty; {NAME_REGEX_ERROR}",
            id="bare-dash",
        ),
    ],
)
def test_usage_errors_match_kubectl(args, message):
    with pytest.raises(TaintSpecError) as caught:
        parse_taint_command(args)
    assert caught.value.message == message
    assert caught.value.usage is True


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            [], "one or more resources must be specified as <resource> <name>", id="nothing"
        ),
        pytest.param(
            ["k=v:NoSchedule"],
            "one or more resources must be specified as <resource> <name>",
            id="no-resource",
        ),
        pytest.param(
            ["k-"],
            "one or more resources must be specified as <resource> <name>",
            id="only-removal",
        ),
        pytest.param(["nodes"], "at least one taint update is required", id="only-type"),
        pytest.param(["nodes", "n1"], "at least one taint update is required", id="no-taint"),
        pytest.param(
            ["nodes", "n1", "k=v:NoSchedule", "n2"],
            "all resources must be specified before taint changes: n2",
            id="name-after-taint",
        ),
    ],
)
def test_command_errors_match_kubectl(args, message):
    with pytest.raises(TaintSpecError) as caught:
        parse_taint_command(args)
    assert caught.value.message == message
    assert caught.value.usage is False


def test_split_and_parse_a_full_command():
    resources, changes = parse_taint_command(
        [
            "nodes",
            "n1",
            "n2",
            "a=1:NoSchedule",
            "b:NoExecute",
            "c-",
            "d:PreferNoSchedule-",
            "e=x:NoSchedule-",
        ]
    )
    assert resources == ["nodes", "n1", "n2"]
    assert changes.add == (Taint("a", "NoSchedule", "1"), Taint("b", "NoExecute"))
    # Removals keep only key and effect.
    assert changes.remove == (
        Taint("c", ""),
        Taint("d", "PreferNoSchedule"),
        Taint("e", "NoSchedule"),
    )
    assert split_taint_args(["no", "x", "y:NoSchedule"]) == (["no", "x"], ["y:NoSchedule"])


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        # Format from kubectl's source (taint.go Validate); it needs a server to reach, so it
        # is not in the captured transcripts.
        (
            ["k=v:NoSchedule", "k-"],
            'can not both modify and remove the following taint(s) in the same command: {"k":""}',
        ),
        (
            ["k=v:NoSchedule", "k:NoSchedule-"],
            'can not both modify and remove the following taint(s) in the same command: {"k":"NoSchedule"}',
        ),
        (
            ["a:NoSchedule", "b:NoExecute", "a-", "b:NoExecute-"],
            'can not both modify and remove the following taint(s) in the same command: {"a":""}, {"b":"NoExecute"}',
        ),
    ],
)
def test_adding_and_removing_the_same_taint_is_refused(specs, message):
    with pytest.raises(TaintSpecError) as caught:
        check_add_remove_conflicts(parse_taint_changes(specs))
    assert caught.value.message == message


def test_removing_a_different_effect_is_not_a_conflict():
    check_add_remove_conflicts(parse_taint_changes(["k=v:NoSchedule", "k:NoExecute-"]))


def test_flag_rules():
    changes = parse_taint_changes(["k=v:NoSchedule"])
    validate_taint_command(["nodes", "n1"], changes, all_nodes=False, selector="")
    validate_taint_command(["nodes"], changes, all_nodes=True, selector="")
    validate_taint_command(["nodes"], changes, all_nodes=False, selector="a=b")
    with pytest.raises(
        TaintSpecError, match=r"^setting 'all' parameter with a non empty selector is prohibited$"
    ):
        validate_taint_command(["nodes"], changes, all_nodes=True, selector="a=b")
    with pytest.raises(
        TaintSpecError,
        match=r"^at least one resource name must be specified since 'all' parameter is not set$",
    ):
        validate_taint_command(["nodes"], changes, all_nodes=False, selector="")


K1 = Taint("key1", "NoSchedule", "value1")
K2 = Taint("key2", "NoExecute")


# Sequences from KUBECTL_CONTRACT.md §6 (taint), captured from real kubectl traffic.
@pytest.mark.parametrize(
    ("existing", "specs", "overwrite", "operation", "result"),
    [
        pytest.param([], ["key1=value1:NoSchedule"], False, "tainted", [K1], id="add-first"),
        pytest.param([K1], ["key2:NoExecute"], False, "tainted", [K2, K1], id="new-taints-first"),
        pytest.param(
            [K1, K2],
            ["key1=value9:NoSchedule"],
            True,
            "modified",
            [Taint("key1", "NoSchedule", "value9"), K2],
            id="overwrite",
        ),
        pytest.param(
            [Taint("key1", "NoSchedule", "value9"), K2],
            ["key1:NoSchedule-"],
            False,
            "untainted",
            [K2],
            id="remove-by-key-and-effect",
        ),
        pytest.param([K2], ["key2-"], False, "untainted", [], id="remove-last"),
        pytest.param(
            [K1, Taint("key1", "NoExecute")],
            ["key1-"],
            False,
            "untainted",
            [],
            id="remove-by-key-removes-all-effects",
        ),
        pytest.param(
            [K1],
            ["key1:NoExecute"],
            False,
            "tainted",
            [Taint("key1", "NoExecute"), K1],
            id="same-key-other-effect",
        ),
        pytest.param(
            [K1],
            ["key2:NoExecute", "key1-"],
            False,
            "modified",
            [K2],
            id="add-and-remove-is-modified",
        ),
        pytest.param(
            [K1],
            ["key2:NoExecute"],
            True,
            "modified",
            [K2, K1],
            id="overwrite-always-reports-modified",
        ),
        pytest.param(
            [],
            ["zone=a:NoExecute", "extra=1:NoSchedule"],
            False,
            "tainted",
            [Taint("zone", "NoExecute", "a"), Taint("extra", "NoSchedule", "1")],
            id="several-in-argument-order",
        ),
    ],
)
def test_apply_changes_like_kubectl(existing, specs, overwrite, operation, result):
    op, new = apply_taint_changes("n2", existing, parse_taint_changes(specs), overwrite=overwrite)
    assert op == operation
    assert isinstance(op, TaintOperation)
    assert new == result


def test_adding_an_existing_taint_without_overwrite_is_refused():
    with pytest.raises(TaintSpecError) as caught:
        apply_taint_changes(
            "n2", [K1, K2], parse_taint_changes(["key1=value9:NoSchedule"]), overwrite=False
        )
    assert (
        caught.value.message
        == "node n2 already has key1 taint(s) with same effect(s) and --overwrite is false"
    )
    with pytest.raises(TaintSpecError) as caught:
        apply_taint_changes(
            "n2",
            [K1, K2],
            parse_taint_changes(["key2:NoExecute", "key1=x:NoSchedule"]),
            overwrite=False,
        )
    assert (
        caught.value.message
        == "node n2 already has key2,key1 taint(s) with same effect(s) and --overwrite is false"
    )


def test_removing_an_absent_taint_is_refused_with_its_string_form():
    with pytest.raises(TaintSpecError) as caught:
        apply_taint_changes("n2", [], parse_taint_changes(["key2-"]), overwrite=False)
    assert caught.value.message == 'taint "key2" not found'
    with pytest.raises(TaintSpecError) as caught:
        apply_taint_changes(
            "n2", [K1], parse_taint_changes(["a:NoSchedule-", "b-"]), overwrite=False
        )
    assert caught.value.message == '[taint "a:NoSchedule" not found, taint "b" not found]'


def test_only_the_last_removal_decides_between_modified_and_tainted():
    # Upstream keeps the "removed" flag of the last removal only; the first removal here
    # succeeds and the second fails, so the whole change is refused.
    with pytest.raises(TaintSpecError):
        apply_taint_changes(
            "n", [K1], parse_taint_changes(["x:NoSchedule", "key1-", "nope-"]), overwrite=False
        )


taint_keys = st.from_regex(r"[a-z][a-z0-9]{0,10}", fullmatch=True)
taint_values = st.one_of(st.just(""), st.from_regex(r"[A-Za-z0-9]{1,8}", fullmatch=True))
effects = st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"])
taints = st.builds(Taint, key=taint_keys, effect=effects, value=taint_values)


@given(taints)
def test_string_form_round_trips_through_the_parser(taint):
    assert parse_taint(taint.to_string()) == taint


@given(st.lists(taints, max_size=6, unique_by=lambda t: (t.key, t.effect)), taints)
def test_adding_then_removing_a_new_taint_restores_the_list(existing, taint):
    if any(t.matches(taint) for t in existing):
        return
    _, added = apply_taint_changes("n", existing, TaintChanges(add=(taint,)), overwrite=False)
    assert added == [taint, *existing]
    removal = TaintChanges(remove=(Taint(taint.key, taint.effect),))
    op, restored = apply_taint_changes("n", added, removal, overwrite=False)
    assert restored == existing
    assert op == "untainted"
