"""Name and value syntax checks from ``k8s.io/apimachinery/pkg/util/validation``.

Each check returns a list of human-readable problems (empty when the input is valid), worded
exactly as upstream so that composed messages match the Kubernetes API server's.
"""

from __future__ import annotations

import re

__all__ = [
    "DNS1123_SUBDOMAIN_MAX_LENGTH",
    "LABEL_VALUE_MAX_LENGTH",
    "QUALIFIED_NAME_MAX_LENGTH",
    "empty_error",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_label_value",
    "max_len_error",
    "regex_error",
]

QUALIFIED_NAME_MAX_LENGTH = 63
LABEL_VALUE_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253

_QNAME_CHAR = "[A-Za-z0-9]"
_QNAME_EXT_CHAR = "[-A-Za-z0-9_.]"
QUALIFIED_NAME_FMT = "(" + _QNAME_CHAR + _QNAME_EXT_CHAR + "*)?" + _QNAME_CHAR
_QUALIFIED_NAME_ERR = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"
_LABEL_VALUE_ERR = (
    "a valid label must be an empty string or consist of alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_ERR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)

# Go's regexp.MatchString with ^…$ anchors the whole text; Python's fullmatch does the same
# (a trailing newline is not forgiven, unlike re.match with $).
_QUALIFIED_NAME_RE = re.compile(QUALIFIED_NAME_FMT, re.ASCII)
_LABEL_VALUE_RE = re.compile(LABEL_VALUE_FMT, re.ASCII)
_DNS1123_SUBDOMAIN_RE = re.compile(DNS1123_SUBDOMAIN_FMT, re.ASCII)


def _byte_len(value: str) -> int:
    # Go measures strings in bytes, so a non-ASCII character counts more than once.
    return len(value.encode("utf-8", "surrogatepass"))


def empty_error() -> str:
    return "must be non-empty"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def regex_error(message: str, fmt: str, *examples: str) -> str:
    """``validation.RegexError``, including upstream's double space before each "or"."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    text = message + " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            text += " or "
        text += f"'{example}', "
    return text + f"regex used for validation is '{fmt}')"


def is_dns1123_subdomain(value: str) -> list[str]:
    problems = []
    if _byte_len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        problems.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        problems.append(regex_error(_DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return problems


def is_qualified_name(value: str) -> list[str]:
    """A label key, taint key or toleration key: ``[prefix/]name``."""
    problems: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            problems.append("prefix part " + empty_error())
        else:
            problems.extend("prefix part " + msg for msg in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + regex_error(_QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        problems.append("name part " + empty_error())
    elif _byte_len(name) > QUALIFIED_NAME_MAX_LENGTH:
        problems.append("name part " + max_len_error(QUALIFIED_NAME_MAX_LENGTH))
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        problems.append(
            "name part "
            + regex_error(_QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return problems


def is_valid_label_value(value: str) -> list[str]:
    problems = []
    if _byte_len(value) > LABEL_VALUE_MAX_LENGTH:
        problems.append(max_len_error(LABEL_VALUE_MAX_LENGTH))
    if not _LABEL_VALUE_RE.fullmatch(value):
        problems.append(
            regex_error(_LABEL_VALUE_ERR, LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return problems
