"""Name and value syntax checks from ``k8s.io/apimachinery`` validation.

Each check returns a list of human-readable problems (empty when the input is valid), worded
exactly as upstream so that composed messages match.

Two wordings exist. The API server of Kubernetes 1.35 words them as apimachinery's ``content``
package does ("must be no more than 63 bytes", "a valid label key …"). The kubectl on our
machines (v1.32, which kubectl's dispatcher runs against a 1.35 server) still uses the older
``util/validation`` wording ("… 63 characters", "a qualified name …") for its client-side
checks, so the ``kubectl taint`` grammar asks for ``KUBECTL_1_32``.
"""

from __future__ import annotations

import enum
import re
from functools import lru_cache

__all__ = [
    "DNS1123_SUBDOMAIN_MAX_LENGTH",
    "LABEL_VALUE_MAX_LENGTH",
    "QUALIFIED_NAME_MAX_LENGTH",
    "Wording",
    "empty_error",
    "is_decimal_integer",
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
_DECIMAL_INTEGER_ERR = "must be a valid decimal integer in canonical form"


class Wording(enum.Enum):
    SERVER_1_35 = "server"
    KUBECTL_1_32 = "kubectl"


def _byte_len(value: str) -> int:
    # Go measures strings in bytes, so a non-ASCII character counts more than once.
    return len(value.encode("utf-8", "surrogatepass"))


def empty_error() -> str:
    return "must be non-empty"


def max_len_error(length: int, wording: Wording = Wording.SERVER_1_35) -> str:
    unit = "bytes" if wording is Wording.SERVER_1_35 else "characters"
    return f"must be no more than {length} {unit}"


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


def is_dns1123_subdomain(value: str, wording: Wording = Wording.SERVER_1_35) -> list[str]:
    problems = []
    if _byte_len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        problems.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH, wording))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        problems.append(regex_error(_DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return problems


def is_qualified_name(value: str, wording: Wording = Wording.SERVER_1_35) -> list[str]:
    """A label key, taint key or toleration key: ``[prefix/]name``."""
    return list(_qualified_name_problems(value, wording))


def is_valid_label_value(value: str, wording: Wording = Wording.SERVER_1_35) -> list[str]:
    return list(_label_value_problems(value, wording))


# Every write of a labelled object checks the same few keys and values again (a node's
# status report its seven labels): the answers are kept, a bounded number of them.
@lru_cache(maxsize=4096)
def _qualified_name_problems(value: str, wording: Wording) -> tuple[str, ...]:
    problems: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            problems.append("prefix part " + empty_error())
        else:
            problems.extend("prefix part " + msg for msg in is_dns1123_subdomain(prefix, wording))
    else:
        what = "a valid label key " if wording is Wording.SERVER_1_35 else "a qualified name "
        return (
            what
            + regex_error(_QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        )
    if not name:
        problems.append("name part " + empty_error())
    elif _byte_len(name) > QUALIFIED_NAME_MAX_LENGTH:
        problems.append("name part " + max_len_error(QUALIFIED_NAME_MAX_LENGTH, wording))
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        problems.append(
            "name part "
            + regex_error(_QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return tuple(problems)


@lru_cache(maxsize=4096)
def _label_value_problems(value: str, wording: Wording) -> tuple[str, ...]:
    problems = []
    if _byte_len(value) > LABEL_VALUE_MAX_LENGTH:
        problems.append(max_len_error(LABEL_VALUE_MAX_LENGTH, wording))
    if not _LABEL_VALUE_RE.fullmatch(value):
        problems.append(
            regex_error(_LABEL_VALUE_ERR, LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return tuple(problems)


def is_decimal_integer(value: str) -> list[str]:
    """``content.IsDecimalInteger``: ``0`` or an optional ``-`` and digits, no leading zero."""
    if not value:
        return [empty_error()]
    digits = value[1:] if value.startswith("-") else value
    if not digits or not digits.isascii() or not digits.isdigit():
        return [_DECIMAL_INTEGER_ERR]
    if digits[0] == "0" and value != "0":
        return [_DECIMAL_INTEGER_ERR]
    return []
