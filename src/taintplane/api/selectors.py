"""Label and field selectors: parsing, validation and matching, as ``k8s.io/apimachinery``.

Label selector grammar (``labels.Parse``), requirements joined by ``,``::

    key | !key | key=value | key==value | key!=value
    key in (v1, v2) | key notin (v1, v2) | key > 5 | key < 5

Field selector grammar (``fields.ParseSelector``): ``field=value``, ``field==value``,
``field!=value`` joined by ``,``, with ``\\``-escapes for ``\\``, ``,`` and ``=``.
Field selectors are matched against a flat ``{field: value}`` map that each kind provides.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from taintplane.api import names
from taintplane.api.gofmt import go_quote
from taintplane.api.tolerations import parse_int64

__all__ = [
    "FieldRequirement",
    "FieldSelector",
    "LabelSelector",
    "Operator",
    "Requirement",
    "SelectorError",
    "label_selector_from_dict",
    "parse_field_selector",
    "parse_label_selector",
]


class SelectorError(ValueError):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Operator(enum.Enum):
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        op = self.operator
        if op in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.IN):
            return present and value in self.values
        if op in (Operator.NOT_EQUALS, Operator.NOT_IN):
            return not present or value not in self.values
        if op is Operator.EXISTS:
            return present
        if op is Operator.DOES_NOT_EXIST:
            return not present
        # Gt / Lt: the label must hold an integer.
        if value is None:
            return False
        ours, bound = parse_int64(value), int(self.values[0])
        if ours is None:
            return False
        return ours > bound if op is Operator.GREATER_THAN else ours < bound

    def __str__(self) -> str:
        op = self.operator
        if op is Operator.EXISTS:
            return self.key
        if op is Operator.DOES_NOT_EXIST:
            return "!" + self.key
        if op in (Operator.IN, Operator.NOT_IN):
            return f"{self.key} {op.value} ({','.join(sorted(self.values))})"
        symbol = {Operator.GREATER_THAN: ">", Operator.LESS_THAN: "<"}.get(op, op.value)
        return f"{self.key}{symbol}{self.values[0]}"


@dataclass(frozen=True, slots=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def is_empty(self) -> bool:
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


_TOKEN = re.compile(r"\s*(!=|==|=|>|<|!|\(|\)|,|[^\s!=<>(),]+)")


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:  # only trailing whitespace is left
            break
        tokens.append(match.group(1))
        position = match.end()
    return tokens


def _check_key(key: str) -> None:
    problems = names.is_qualified_name(key)
    if problems:
        raise SelectorError(
            f'unable to parse requirement: key: Invalid value: "{key}": {problems[0]}'
        )


def _check_value(value: str) -> None:
    problems = names.is_valid_label_value(value)
    if problems:
        raise SelectorError(
            f'unable to parse requirement: values[0][]: Invalid value: "{value}": {problems[0]}'
        )


def parse_label_selector(text: str) -> LabelSelector:
    """Parse a ``labelSelector`` query value; the empty string selects everything."""
    tokens = _tokens(text)
    requirements: list[Requirement] = []
    i = 0

    def expect_value(at: int) -> str:
        if at >= len(tokens) or tokens[at] in ("!=", "==", "=", ">", "<", "!", "(", ")", ","):
            found = tokens[at] if at < len(tokens) else "EOF"
            raise SelectorError(f"found '{found}', expected: identifier")
        return tokens[at]

    while i < len(tokens):
        token = tokens[i]
        if token == "!":
            key = expect_value(i + 1)
            _check_key(key)
            requirements.append(Requirement(key, Operator.DOES_NOT_EXIST))
            i += 2
        else:
            key = expect_value(i)
            _check_key(key)
            op = tokens[i + 1] if i + 1 < len(tokens) else ","
            if op == ",":
                requirements.append(Requirement(key, Operator.EXISTS))
                i += 1
            elif op in ("=", "==", "!="):
                value = tokens[i + 2] if i + 2 < len(tokens) and tokens[i + 2] != "," else ""
                if value in ("!=", "==", "=", ">", "<", "!", "(", ")"):
                    raise SelectorError(f"found '{value}', expected: identifier")
                _check_value(value)
                operator = {"=": Operator.EQUALS, "==": Operator.DOUBLE_EQUALS}.get(
                    op, Operator.NOT_EQUALS
                )
                requirements.append(Requirement(key, operator, (value,)))
                i += 3 if value else 2
            elif op in (">", "<"):
                value = expect_value(i + 2)
                if parse_int64(value) is None:
                    raise SelectorError(
                        f'unable to parse requirement: values[0]: Invalid value: "{value}": '
                        "for 'Gt', 'Lt' operators, the value must be an integer"
                    )
                operator = Operator.GREATER_THAN if op == ">" else Operator.LESS_THAN
                requirements.append(Requirement(key, operator, (value,)))
                i += 3
            elif op in ("in", "notin"):
                if i + 2 >= len(tokens) or tokens[i + 2] != "(":
                    found = tokens[i + 2] if i + 2 < len(tokens) else "EOF"
                    raise SelectorError(f"found '{found}', expected: '('")
                values: list[str] = []
                j = i + 3
                while j < len(tokens) and tokens[j] != ")":
                    if tokens[j] != ",":
                        _check_value(tokens[j])
                        values.append(tokens[j])
                    j += 1
                if j >= len(tokens):
                    raise SelectorError("found 'EOF', expected: ')'")
                if not values:
                    raise SelectorError(
                        'unable to parse requirement: values: Invalid value: "": '
                        "for 'in', 'notin' operators, values set can't be empty"
                    )
                operator = Operator.IN if op == "in" else Operator.NOT_IN
                requirements.append(Requirement(key, operator, tuple(values)))
                i = j + 1
            else:
                raise SelectorError(f"found '{op}', expected: in, notin, =, ==, !=, gt, lt")
        if i < len(tokens):
            if tokens[i] != ",":
                raise SelectorError(f"found '{tokens[i]}', expected: ',' or 'end of string'")
            i += 1
            if i == len(tokens):
                raise SelectorError("found 'EOF', expected: identifier")
    return LabelSelector(tuple(requirements))


def label_selector_from_dict(selector: Mapping[str, object] | None) -> LabelSelector:
    """A ``metav1.LabelSelector`` object (``matchLabels`` and ``matchExpressions``)."""
    if not selector:
        return LabelSelector()
    requirements: list[Requirement] = []
    match_labels = selector.get("matchLabels") or {}
    if isinstance(match_labels, Mapping):
        for key in sorted(match_labels):
            requirements.append(Requirement(key, Operator.EQUALS, (str(match_labels[key]),)))
    expressions = selector.get("matchExpressions") or []
    ops = {
        "In": Operator.IN,
        "NotIn": Operator.NOT_IN,
        "Exists": Operator.EXISTS,
        "DoesNotExist": Operator.DOES_NOT_EXIST,
    }
    if isinstance(expressions, Sequence):
        for expression in expressions:
            if not isinstance(expression, Mapping):
                continue
            operator = ops.get(str(expression.get("operator")))
            if operator is None:
                raise SelectorError(
                    f"{expression.get('operator')!s} is not a valid label selector operator"
                )
            values = tuple(str(v) for v in expression.get("values") or [])
            requirements.append(Requirement(str(expression.get("key")), operator, values))
    return LabelSelector(tuple(requirements))


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    field: str
    value: str
    negated: bool = False

    def matches(self, fields: Mapping[str, str]) -> bool:
        # fields.Set.Get: a field the object does not have reads as "" (metadata.namespace
        # of a cluster-scoped object).
        equal = fields.get(self.field, "") == self.value
        return not equal if self.negated else equal


@dataclass(frozen=True, slots=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all(r.matches(fields) for r in self.requirements)

    def fields(self) -> set[str]:
        return {r.field for r in self.requirements}

    def value_of(self, field: str) -> str | None:
        """The value an ``=`` term pins ``field`` to, if any (lets a list narrow its scan)."""
        for r in self.requirements:
            if r.field == field and not r.negated:
                return r.value
        return None

    def check_supported(
        self, is_supported: Callable[[str], bool], api_version: str = "", kind: str = ""
    ) -> None:
        """The 400 of ``ConvertFieldLabel`` for the first label the kind does not convert. A
        kind whose API version registers no conversion of its own (most: see
        ``_OWN_FIELD_LABEL_CONVERSIONS``) takes DefaultMetaV1FieldSelectorConversion's
        ``metadata.name`` and ``metadata.namespace`` and nothing else; without a kind, the
        refusal is worded as core/v1's."""
        own = _OWN_FIELD_LABEL_CONVERSIONS.get((api_version, kind)) if kind else _CORE_V1
        for r in self.requirements:
            if own is None:
                if r.field not in _META_FIELD_LABELS:
                    raise SelectorError(
                        f"{go_quote(r.field)} is not a known field selector: only "
                        '"metadata.name", "metadata.namespace"'
                    )
            elif not is_supported(r.field):
                raise SelectorError(f"{own}{r.field}")


_META_FIELD_LABELS = ("metadata.name", "metadata.namespace")
_CORE_V1 = "field label not supported: "
#: The kinds whose API version registers a field label conversion of its own
#: (scheme.AddFieldLabelConversionFunc), with the words its refusal starts with.
_OWN_FIELD_LABEL_CONVERSIONS: dict[tuple[str, str], str] = {
    # pkg/apis/core/v1/conversion.go
    **{
        ("v1", kind): _CORE_V1
        for kind in (
            "Pod",
            "Node",
            "ReplicationController",
            "Event",
            "Namespace",
            "Secret",
            "Service",
        )
    },
    # pkg/apis/events/v1/conversion.go
    ("events.k8s.io/v1", "Event"): _CORE_V1,
    # pkg/apis/resource/v1/conversion.go (the refusal names the GroupVersionKind)
    ("resource.k8s.io/v1", "ResourceSlice"): (
        "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: "
    ),
}


def _split_unescaped(text: str, separator: str) -> list[str]:
    parts, current, escaped = [], [], False
    for char in text:
        if escaped:
            current.append("\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == separator:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if escaped:
        current.append("\\")
    parts.append("".join(current))
    return parts


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\":
            if i + 1 >= len(text) or text[i + 1] not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence in {text!r}")
            out.append(text[i + 1])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def parse_field_selector(text: str) -> FieldSelector:
    requirements: list[FieldRequirement] = []
    if not text.strip():
        return FieldSelector()
    for part in _split_unescaped(text, ","):
        if not part:
            continue
        for symbol, negated in (("!=", True), ("==", False), ("=", False)):
            index = _find_unescaped(part, symbol)
            if index >= 0:
                field = _unescape(part[:index])
                value = _unescape(part[index + len(symbol) :])
                requirements.append(FieldRequirement(field.strip(), value, negated))
                break
        else:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
    return FieldSelector(tuple(requirements))


def _find_unescaped(text: str, symbol: str) -> int:
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(symbol, i):
            return i
        i += 1
    return -1
