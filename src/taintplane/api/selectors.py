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


class _Tok(enum.IntEnum):
    """labels.Token: the lexer's tokens."""

    ERROR = 0
    END = 1
    CLOSED_PAR = 2
    COMMA = 3
    DOES_NOT_EXIST = 4
    DOUBLE_EQUALS = 5
    EQUALS = 6
    GREATER_THAN = 7
    IDENTIFIER = 8
    IN = 9
    LESS_THAN = 10
    NOT_EQUALS = 11
    NOT_IN = 12
    OPEN_PAR = 13


_STRING_TO_TOKEN = {
    ")": _Tok.CLOSED_PAR,
    ",": _Tok.COMMA,
    "!": _Tok.DOES_NOT_EXIST,
    "==": _Tok.DOUBLE_EQUALS,
    "=": _Tok.EQUALS,
    ">": _Tok.GREATER_THAN,
    "in": _Tok.IN,
    "<": _Tok.LESS_THAN,
    "!=": _Tok.NOT_EQUALS,
    "notin": _Tok.NOT_IN,
    "(": _Tok.OPEN_PAR,
}
_SPECIAL = frozenset("=!(),><")
_BLANK = frozenset(" \t\r\n")
_BINARY_OPERATORS = "in, notin, =, ==, !=, gt, lt"
_OPERATOR_OF = {
    _Tok.IN: Operator.IN,
    _Tok.EQUALS: Operator.EQUALS,
    _Tok.DOUBLE_EQUALS: Operator.DOUBLE_EQUALS,
    _Tok.GREATER_THAN: Operator.GREATER_THAN,
    _Tok.LESS_THAN: Operator.LESS_THAN,
    _Tok.NOT_IN: Operator.NOT_IN,
    _Tok.NOT_EQUALS: Operator.NOT_EQUALS,
}


def _scan(text: str) -> list[tuple[_Tok, str]]:
    """labels.Lexer over the whole input, ending with the end-of-string token. As Go's, it
    reads a NUL as the end of the input."""
    items: list[tuple[_Tok, str]] = []
    pos, size = 0, len(text)
    while True:
        while pos < size and text[pos] in _BLANK:
            pos += 1
        if pos >= size or text[pos] == "\0":
            items.append((_Tok.END, ""))
            return items
        if text[pos] in _SPECIAL:
            # The longest run of special symbols that is a token ("!=" over "!").
            begin = pos
            buffer, last, last_end = "", None, pos
            while pos < size and text[pos] in _SPECIAL:
                buffer += text[pos]
                pos += 1
                token = _STRING_TO_TOKEN.get(buffer)
                if token is not None:
                    last, last_end = token, pos
                elif last is not None:
                    break
            if last is None:
                items.append((_Tok.ERROR, f"error expected: keyword found '{buffer}'"))
            else:
                items.append((last, text[begin:last_end]))
                pos = last_end
            continue
        begin = pos
        while pos < size and text[pos] != "\0" and text[pos] not in _SPECIAL | _BLANK:
            pos += 1
        word = text[begin:pos]
        items.append((_STRING_TO_TOKEN.get(word, _Tok.IDENTIFIER), word))


class _Parser:
    """labels.Parser: a recursive descent over the scanned tokens, with upstream's errors.
    In the Values context "in" and "notin" are identifiers (``x in (in)``)."""

    def __init__(self, text: str) -> None:
        self.items = _scan(text)
        self.position = 0

    def lookahead(self, values: bool) -> tuple[_Tok, str]:
        return self._as(self.items[self.position], values)

    def consume(self, values: bool) -> tuple[_Tok, str]:
        self.position += 1
        return self._as(self.items[self.position - 1], values)

    @staticmethod
    def _as(item: tuple[_Tok, str], values: bool) -> tuple[_Tok, str]:
        if values and item[0] in (_Tok.IN, _Tok.NOT_IN):
            return _Tok.IDENTIFIER, item[1]
        return item

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            token, literal = self.lookahead(True)
            if token is _Tok.END:
                return requirements
            if token not in (_Tok.IDENTIFIER, _Tok.DOES_NOT_EXIST):
                raise SelectorError(
                    f"found '{literal}', expected: !, identifier, or 'end of string'"
                )
            try:
                requirements.append(self.requirement())
            except SelectorError as error:
                raise SelectorError(f"unable to parse requirement: {error.message}") from None
            token, literal = self.consume(True)
            if token is _Tok.END:
                return requirements
            if token is not _Tok.COMMA:
                raise SelectorError(f"found '{literal}', expected: ',' or 'end of string'")
            after, text = self.lookahead(True)
            if after not in (_Tok.IDENTIFIER, _Tok.DOES_NOT_EXIST):
                raise SelectorError(f"found '{text}', expected: identifier after ','")

    def requirement(self) -> Requirement:
        operator: Operator | None = None
        token, key = self.consume(True)
        if token is _Tok.DOES_NOT_EXIST:
            operator = Operator.DOES_NOT_EXIST
            token, key = self.consume(True)
        if token is not _Tok.IDENTIFIER:
            raise SelectorError(f"found '{key}', expected: identifier")
        problems = names.is_qualified_name(key)
        if problems:
            # validateLabelKey with the parser's nil path, which Go prints as "<nil>".
            raise SelectorError(f"<nil>: Invalid value: {go_quote(key)}: {'; '.join(problems)}")
        if self.lookahead(True)[0] in (_Tok.END, _Tok.COMMA):
            return _new_requirement(key, operator or Operator.EXISTS, [])
        if operator is Operator.DOES_NOT_EXIST:
            return _new_requirement(key, operator, [])
        token, literal = self.consume(False)
        operator = _OPERATOR_OF.get(token)
        if operator is None:
            raise SelectorError(f"found '{literal}', expected: {_BINARY_OPERATORS}")
        is_set = operator in (Operator.IN, Operator.NOT_IN)
        values = self.values() if is_set else self.exact_value()
        return _new_requirement(key, operator, sorted(values))

    def values(self) -> set[str]:
        token, literal = self.consume(True)
        if token is not _Tok.OPEN_PAR:
            raise SelectorError(f"found '{literal}' expected: '('")
        token, literal = self.lookahead(True)
        if token is _Tok.CLOSED_PAR:  # "()"
            self.consume(True)
            return {""}
        if token not in (_Tok.IDENTIFIER, _Tok.COMMA):
            raise SelectorError(f"found '{literal}', expected: ',', ')' or identifier")
        found = self.identifiers()
        if self.consume(True)[0] is not _Tok.CLOSED_PAR:
            raise SelectorError(f"found '{literal}', expected: ')'")
        return found

    def identifiers(self) -> set[str]:
        found: set[str] = set()
        while True:
            token, literal = self.consume(True)
            if token is _Tok.IDENTIFIER:
                found.add(literal)
                after, text = self.lookahead(True)
                if after is _Tok.COMMA:
                    continue
                if after is _Tok.CLOSED_PAR:
                    return found
                raise SelectorError(f"found '{text}', expected: ',' or ')'")
            if token is not _Tok.COMMA:
                raise SelectorError(f"found '{literal}', expected: ',', or identifier")
            # "(,", ",)" and ",," each stand for an empty value.
            if not found:
                found.add("")
            after = self.lookahead(True)[0]
            if after is _Tok.CLOSED_PAR:
                found.add("")
                return found
            if after is _Tok.COMMA:
                found.add("")

    def exact_value(self) -> set[str]:
        if self.lookahead(True)[0] in (_Tok.END, _Tok.COMMA):
            return {""}
        token, literal = self.consume(True)
        if token is _Tok.IDENTIFIER:
            return {literal}
        raise SelectorError(f"found '{literal}', expected: identifier")


def _new_requirement(key: str, operator: Operator, values: list[str]) -> Requirement:
    """NewRequirement's checks of what the parser can produce (the key is already valid):
    Gt/Lt take an integer; every value is a label value. Several errors are an aggregate."""
    errors: list[str] = []
    if operator in (Operator.GREATER_THAN, Operator.LESS_THAN):
        for i, value in enumerate(values):
            if parse_int64(value) is None:
                errors.append(
                    f"values[{i}]: Invalid value: {go_quote(value)}: "
                    "for 'Gt', 'Lt' operators, the value must be an integer"
                )
    for i, value in enumerate(values):
        problems = names.is_valid_label_value(value)
        if problems:
            errors.append(
                f"values[{i}][{key}]: Invalid value: {go_quote(value)}: {'; '.join(problems)}"
            )
    unique = list(dict.fromkeys(errors))
    if len(unique) == 1:
        raise SelectorError(unique[0])
    if unique:
        raise SelectorError("[" + ", ".join(unique) + "]")
    return Requirement(key, operator, tuple(values))


def parse_label_selector(text: str) -> LabelSelector:
    """Parse a ``labelSelector`` query value as labels.Parse does, with its error messages;
    the requirements are sorted by key. The empty string selects everything."""
    requirements = _Parser(text).parse()
    requirements.sort(key=lambda r: r.key)
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


def _split_terms(text: str) -> list[str]:
    """fields.splitTerms: split at the commas no backslash escapes; escapes stay."""
    if not text:
        return []
    terms, start, in_slash = [], 0, False
    for i, char in enumerate(text):
        if in_slash:
            in_slash = False
        elif char == "\\":
            in_slash = True
        elif char == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """fields.splitTerm: the leftmost operator ("!=", then "==", then "=" at each place);
    the left side is taken as it is (it has no escapes)."""
    for i in range(len(term)):
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


def _unescape_value(text: str) -> str:
    """fields.UnescapeValue, with its errors (an unescaped rune is printed as its number,
    Go's %v of a rune)."""
    if not any(char in text for char in "\\,="):
        return text
    out: list[str] = []
    in_slash = False
    for char in text:
        if in_slash:
            if char not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{char}")
            out.append(char)
            in_slash = False
        elif char == "\\":
            in_slash = True
        elif char in ",=":
            raise SelectorError(
                f"invalid field selector: unescaped character in value: {ord(char)}"
            )
        else:
            out.append(char)
    if in_slash:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def parse_field_selector(text: str) -> FieldSelector:
    """fields.ParseSelector: terms sorted (so the first refusal is the first in that order),
    empty terms skipped, each split at its leftmost operator, its value unescaped."""
    requirements: list[FieldRequirement] = []
    for part in sorted(_split_terms(text)):
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        field, op, value = split
        requirements.append(FieldRequirement(field, _unescape_value(value), op == "!="))
    return FieldSelector(tuple(requirements))
