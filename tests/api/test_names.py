import pytest
from hypothesis import given
from hypothesis import strategies as st

from taintplane.api import names
from taintplane.api.names import Wording

NAME_REGEX_ERROR = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_REGEX_ERROR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
SUBDOMAIN_REGEX_ERROR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


@pytest.mark.parametrize(
    "key",
    [
        "a",
        "dedicated",
        "node.kubernetes.io/not-ready",
        "example.com/My_Key-1",
        "A" * 63,
        "x/" + "a" * 63,
    ],
)
def test_valid_qualified_names(key):
    assert names.is_qualified_name(key) == []


@pytest.mark.parametrize(
    ("key", "problems"),
    [
        pytest.param("", ["name part must be non-empty", NAME_REGEX_ERROR], id="empty"),
        pytest.param("-a", [NAME_REGEX_ERROR], id="leading-dash"),
        pytest.param("a b", [NAME_REGEX_ERROR], id="space"),
        pytest.param("a" * 64, ["name part must be no more than 63 bytes"], id="too-long"),
        pytest.param(
            "é" * 32,
            ["name part must be no more than 63 bytes", NAME_REGEX_ERROR],
            id="length-counts-bytes",
        ),
        pytest.param("/a", ["prefix part must be non-empty"], id="empty-prefix"),
        pytest.param(
            "Example.com/a", ["prefix part " + SUBDOMAIN_REGEX_ERROR], id="uppercase-prefix"
        ),
        pytest.param(
            "a/", ["name part must be non-empty", NAME_REGEX_ERROR], id="empty-name-after-prefix"
        ),
        pytest.param(
            "a/b/c",
            [
                "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must "
                "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') "
                "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ],
            id="two-slashes",
        ),
        pytest.param("a\n", [NAME_REGEX_ERROR], id="trailing-newline-is-not-forgiven"),
    ],
)
def test_invalid_qualified_names_are_explained_as_kubernetes_1_35_does(key, problems):
    assert names.is_qualified_name(key) == problems


def test_prefix_length_is_checked_as_a_subdomain():
    assert names.is_qualified_name("a" * 254 + "/k") == [
        "prefix part must be no more than 253 bytes"
    ]


def test_kubectl_1_32_words_lengths_in_characters_and_says_qualified_name():
    assert names.is_qualified_name("a" * 64, Wording.KUBECTL_1_32) == [
        "name part must be no more than 63 characters"
    ]
    assert names.is_qualified_name("a/b/c", Wording.KUBECTL_1_32)[0].startswith(
        "a qualified name must consist of"
    )
    assert names.is_valid_label_value("v" * 64, Wording.KUBECTL_1_32) == [
        "must be no more than 63 characters"
    ]


@pytest.mark.parametrize("value", ["", "banana", "a.b_c-d", "1", "x" * 63])
def test_valid_label_values(value):
    assert names.is_valid_label_value(value) == []


@pytest.mark.parametrize(
    ("value", "problems"),
    [
        ("-x", [LABEL_VALUE_REGEX_ERROR]),
        ("a/b", [LABEL_VALUE_REGEX_ERROR]),
        ("x" * 64, ["must be no more than 63 bytes"]),
        ("_" * 64, ["must be no more than 63 bytes", LABEL_VALUE_REGEX_ERROR]),
    ],
)
def test_invalid_label_values(value, problems):
    assert names.is_valid_label_value(value) == problems


@pytest.mark.parametrize(
    ("value", "problems"),
    [
        ("0", []),
        ("7", []),
        ("-42", []),
        ("9223372036854775808", []),  # range is strconv's business, not this check's
        ("", ["must be non-empty"]),
        ("-", ["must be a valid decimal integer in canonical form"]),
        ("-0", ["must be a valid decimal integer in canonical form"]),
        ("007", ["must be a valid decimal integer in canonical form"]),
        ("+1", ["must be a valid decimal integer in canonical form"]),
        ("1.5", ["must be a valid decimal integer in canonical form"]),
        ("\u0661", ["must be a valid decimal integer in canonical form"]),
    ],
)
def test_decimal_integers_must_be_canonical(value, problems):
    assert names.is_decimal_integer(value) == problems


@given(st.text(alphabet="abcXYZ019-_.", min_size=1, max_size=70))
def test_label_values_and_key_names_share_one_syntax(text):
    # A label value is "empty or a key name": the two checks agree on everything non-empty
    # (apart from the wording of the length message).
    value_ok = names.is_valid_label_value(text) == []
    key_ok = names.is_qualified_name(text) == []
    assert value_ok == key_ok


def test_regex_error_without_examples():
    assert names.regex_error("must be x", "x+") == "must be x (regex used for validation is 'x+')"
