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
        # labels.Parse: "()" is the set of the empty value; "in" and "notin" are values too.
        ("a in ()", {"a": ""}, True),
        ("a in ()", {}, False),
        ("x notin (abc,,def)", {"x": ""}, False),
        ("a in (x,y,notin, z,in)", {"a": "in"}, True),
    ],
)
def test_label_selectors_match_as_kubernetes(text, labels, expected):
    assert parse_label_selector(text).matches(labels) is expected


@pytest.mark.parametrize("text", ["a in (b", "=b", "a b", "a,", "a>x", "a in b", "bad key=1"])
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

    # labels.Parse sorts the requirements by key (stably here).
    selector = LabelSelector(tuple(sorted(reqs, key=lambda r: r.key)))
    reparsed = parse_label_selector(str(selector))
    assert str(reparsed) == str(selector)
    assert reparsed.matches(labels) == selector.matches(labels)


_NAME = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # What kube-apiserver answers (labels.Parse): the key is checked with the parser's nil
        # path, which Go prints as "<nil>"; a value with its key under values[i].
        (
            "app:monolith",
            f'unable to parse requirement: <nil>: Invalid value: "app:monolith": {_NAME}',
        ),
        ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a in (,", "unable to parse requirement: found '', expected: ',', or identifier"),
        ("a in b", "unable to parse requirement: found 'b' expected: '('"),
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("a,", "found '', expected: identifier after ','"),
        ("x,,y", "found ',', expected: identifier after ','"),
        ("=b", "found '=', expected: !, identifier, or 'end of string'"),
        ("a=b=c", "found '=', expected: ',' or 'end of string'"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        (
            "a>x",
            "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' "
            "operators, the value must be an integer",
        ),
        ("a=-x", f'unable to parse requirement: values[0][a]: Invalid value: "-x": {_VALUE}'),
        (
            "a in (-x,-y)",
            f'unable to parse requirement: [values[0][a]: Invalid value: "-x": {_VALUE}, '
            f'values[1][a]: Invalid value: "-y": {_VALUE}]',
        ),
    ],
)
def test_label_selector_errors_are_upstreams(text, message):
    with pytest.raises(SelectorError) as caught:
        parse_label_selector(text)
    assert caught.value.message == message


def test_label_selectors_are_sorted_by_key_with_sorted_values():
    assert str(parse_label_selector("z in (b,a),!y,x notin (abc,,def),w")) == (
        "w,x notin (,abc,def),!y,z in (a,b)"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # fields.ParseSelector as kube-apiserver answers: the leftmost operator splits a term,
        # an unescaped ',' or '=' in a value is refused with the rune's number (Go's %v).
        ("metadata.name=a=b", "invalid field selector: unescaped character in value: 61"),
        ("metadata.name!==x", "invalid field selector: unescaped character in value: 61"),
        ("a=b!=c", "invalid field selector: unescaped character in value: 61"),
        (r"metadata.name=a\x", r"invalid field selector: invalid escape sequence: \x"),
        ("metadata.name=a\\", "invalid field selector: invalid escape sequence: \\"),
        ("   ", "invalid selector: '   '; can't understand '   '"),
        ("b=1,zz", "invalid selector: 'b=1,zz'; can't understand 'zz'"),
    ],
)
def test_field_selector_errors_are_upstreams(text, message):
    with pytest.raises(SelectorError) as caught:
        parse_field_selector(text)
    assert caught.value.message == message


def test_field_selector_terms_are_sorted_and_sides_kept_as_written():
    selector = parse_field_selector("status.phase!=Failed, spec.nodeName=n1,,")
    assert [(r.field, r.value, r.negated) for r in selector.requirements] == [
        (" spec.nodeName", "n1", False),
        ("status.phase", "Failed", True),
    ]
