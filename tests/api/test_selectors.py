import pytest
from hypothesis import given
from hypothesis import strategies as st

from taintplane.api.selectors import (
    Operator,
    Requirement,
    SelectorError,
    label_selector_from_dict,
    parse_field_selector,
    parse_label_selector,
)


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("", {}, True),
        ("app=web", {"app": "web"}, True),
        ("app==web", {"app": "web"}, True),
        ("app=web", {"app": "db"}, False),
        ("app!=web", {}, True),
        ("app!=web", {"app": "db"}, True),
        ("app!=web", {"app": "web"}, False),
        ("app", {"app": ""}, True),
        ("!app", {"app": "x"}, False),
        ("!app", {}, True),
        ("tier in (a, b)", {"tier": "b"}, True),
        ("tier in (a,b)", {}, False),
        ("tier notin (a,b)", {}, True),
        ("tier notin (a,b)", {"tier": "a"}, False),
        ("n>3", {"n": "5"}, True),
        ("n<3", {"n": "5"}, False),
        ("n>3", {"n": "x"}, False),
        ("app=web, tier in (a)", {"app": "web", "tier": "a"}, True),
        ("app=", {"app": ""}, True),
        ("example.com/key=v", {"example.com/key": "v"}, True),
    ],
)
def test_label_selectors_match_as_kubernetes(text, labels, expected):
    assert parse_label_selector(text).matches(labels) is expected


@pytest.mark.parametrize(
    "text", ["a in (b", "a in ()", "=b", "a b", "a,", "a>x", "a in b", "bad key=1"]
)
def test_malformed_label_selectors_are_refused(text):
    with pytest.raises(SelectorError):
        parse_label_selector(text)


def test_field_selectors_with_escapes_and_negation():
    selector = parse_field_selector(
        r"metadata.name=a\,b,status.phase!=Failed,involvedObject.namespace="
    )
    assert selector.matches(
        {"metadata.name": "a,b", "status.phase": "Running", "involvedObject.namespace": ""}
    )
    assert not selector.matches(
        {"metadata.name": "a,b", "status.phase": "Failed", "involvedObject.namespace": ""}
    )
    assert selector.value_of("metadata.name") == "a,b"
    with pytest.raises(SelectorError):
        parse_field_selector("nonsense")


def test_label_selector_objects():
    selector = label_selector_from_dict(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}],
        }
    )
    assert selector.matches({"app": "web", "tier": "a"})
    assert not selector.matches({"app": "web"})
    assert label_selector_from_dict(None).matches({"anything": "x"})
    with pytest.raises(SelectorError):
        label_selector_from_dict({"matchExpressions": [{"key": "a", "operator": "Near"}]})


keys = st.from_regex(r"[a-z]([a-z0-9.-]{0,8}[a-z0-9])?", fullmatch=True)
values = st.from_regex(r"([a-z0-9]([a-z0-9._-]{0,6}[a-z0-9])?)?", fullmatch=True)
requirements = st.one_of(
    st.builds(lambda k, v: Requirement(k, Operator.EQUALS, (v,)), keys, values),
    st.builds(lambda k, v: Requirement(k, Operator.NOT_EQUALS, (v,)), keys, values),
    st.builds(
        lambda k, vs: Requirement(k, Operator.IN, tuple(sorted(set(vs)))),
        keys,
        st.lists(values.filter(bool), min_size=1, max_size=3),
    ),
    st.builds(
        lambda k, vs: Requirement(k, Operator.NOT_IN, tuple(sorted(set(vs)))),
        keys,
        st.lists(values.filter(bool), min_size=1, max_size=3),
    ),
    st.builds(lambda k: Requirement(k, Operator.EXISTS), keys),
    st.builds(lambda k: Requirement(k, Operator.DOES_NOT_EXIST), keys),
)


@given(st.lists(requirements, min_size=1, max_size=4), st.dictionaries(keys, values, max_size=4))
def test_label_selector_string_form_round_trips_and_matches_alike(reqs, labels):
    from taintplane.api.selectors import LabelSelector

    selector = LabelSelector(tuple(reqs))
    reparsed = parse_label_selector(str(selector))
    assert str(reparsed) == str(selector)
    assert reparsed.matches(labels) == selector.matches(labels)
