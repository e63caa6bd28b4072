"""Compile-time checks of DRA selectors, as the API server's ``dracel.CompileCELExpression``.

The evaluator (:mod:`taintplane.dra.cel`) only parses, so its syntax errors are kept
(reworded as cel-go prints them), and this module adds what cel-go's type checker finds
before a selector is stored:

* identifiers that are not ``device`` or a macro's variable (``undeclared reference to
  'foo' (in container '')``) and unknown fields of ``device`` (``undefined field 'x'``);
* a result whose type is known and not bool (``must evaluate to bool or the unknown type,
  not int``). Attribute values have the unknown type, so ``device.attributes["d"].numa`` is
  accepted, as upstream accepts it.

Types are inferred only where they are certain; anything else counts as unknown and passes
(a function outside the small table below, a namespaced function such as
``strings.quote``, a comprehension's result). Expressions with the optional syntax or
``cel.bind`` are compiled as :mod:`taintplane.api.cel_syntax` rewrites them; the worst-case
cost is estimated by :mod:`taintplane.api.cel_cost`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from taintplane.api.cel_syntax import CelSyntaxError, rewrite, without_optional_markers

__all__ = ["selector_problem"]

_TOKEN = re.compile(
    r"""
    (?P<space>\s+|//[^\n]*)
  | (?P<string>[rRbB]{0,2}(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''
                           |"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))
  | (?P<number>0[xX][0-9a-fA-F]+[uU]?|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[uU]?)
  | (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<op>\.\?|\[\?|&&|\|\||==|!=|<=|>=|[<>!?:.,()\[\]{}+\-*/%])
    """,
    re.VERBOSE,
)
_RELATIONS = {"==", "!=", "<", "<=", ">", ">=", "in"}
_PRECEDENCE = {"||": 1, "&&": 2, **dict.fromkeys(_RELATIONS, 3), "+": 4, "-": 4, "*": 5}
_PRECEDENCE |= {"/": 5, "%": 5}
_NUMERIC = {"int", "uint", "double"}
_QUANTITY, _SEMVER = "kubernetes.Quantity", "kubernetes.Semver"
# Internal names of the device variable's parts; none is ever printed.
_DEVICE, _ATTRIBUTES, _ATTRIBUTE_DOMAIN = "@device", "@attributes", "@attribute-domain"
_CAPACITY, _CAPACITY_DOMAIN = "@capacity", "@capacity-domain"
_DEVICE_FIELDS = {"driver": "string", "attributes": _ATTRIBUTES, "capacity": _CAPACITY}
_MAP_VALUES = {_ATTRIBUTES: _ATTRIBUTE_DOMAIN, _CAPACITY: _CAPACITY_DOMAIN}
_MAP_VALUES[_CAPACITY_DOMAIN] = _QUANTITY
_PRINTED = {_DEVICE: "kubernetes.DRADevice"}
_GLOBAL_RESULTS = {
    "size": "int",
    "int": "int",
    "uint": "uint",
    "double": "double",
    "string": "string",
    "bytes": "bytes",
    "bool": "bool",
    "has": "bool",
    "matches": "bool",
    "quantity": _QUANTITY,
    "isQuantity": "bool",
    "semver": _SEMVER,
    "isSemver": "bool",
}
_MEMBER_RESULTS = {
    **dict.fromkeys(
        ["contains", "startsWith", "endsWith", "matches", "isGreaterThan", "isLessThan"], "bool"
    ),
    **dict.fromkeys(["isInteger", "all", "exists", "exists_one"], "bool"),
    **dict.fromkeys(["compareTo", "sign", "asInteger", "size", "indexOf", "lastIndexOf"], "int"),
    **dict.fromkeys(["major", "minor", "patch"], "int"),
    **dict.fromkeys(["lowerAscii", "upperAscii", "trim", "replace", "substring"], "string"),
    "asApproximateFloat": "double",
    "add": _QUANTITY,
    "sub": _QUANTITY,
}
_MACROS_WITH_VARIABLE = {"all", "exists", "exists_one", "map", "filter"}
_RUST_ONLY_ERROR = re.compile(r"ERROR: <input>:\d+:\d+: Incomplete `\w+`!")


def _syntax_problem(message: str) -> str | None:
    """The evaluator's parse error as cel-go words it (``ERROR: …`` blocks with cel-go's
    `` | `` snippet prefix, without the evaluator's own ``Incomplete `…`!`` notes), or None
    when it is not a syntax error but syntax the evaluator lacks (``.?``), which upstream
    accepts."""
    start = message.find("ERROR: ")
    if start < 0:
        return None
    blocks = re.split(r"\n(?=ERROR: )", message[start:])
    kept = [b for b in blocks if not _RUST_ONLY_ERROR.match(b)]
    if not kept or not all(": Syntax error: " in b for b in kept):
        return None
    return "compilation failed: " + "\n".join(b.replace("\n| ", "\n | ") for b in kept)


def selector_problem(expression: str) -> str | None:
    """Why a selector would not compile upstream, worded as ``CompileCELExpression``'s
    error detail, or None."""
    # Imported on first use, as the evaluator does (the package is slow to import).
    import cel

    masked = without_optional_markers(expression)
    try:
        # The optional syntax and cel.bind, which the evaluator lacks, rewritten first.
        text = rewrite(expression)
    except CelSyntaxError:
        text = masked  # the evaluator's parser then names the syntax error
    try:
        cel.compile(text)
    except (ValueError, RuntimeError) as error:
        problem = _syntax_problem(str(error))
        if problem is not None and masked != expression:
            # Its snippets quote the source lines as written.
            for shown, written in zip(masked.splitlines(), expression.splitlines(), strict=True):
                problem = problem.replace(f"\n | {shown}\n", f"\n | {written}\n")
        return problem
    return _type_problem(expression)


class _Unparsable(Exception):
    """Something this checker does not follow; the expression then passes unchecked."""


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str
    text: str
    offset: int


def _tokens(expression: str) -> Iterator[_Token]:
    at = 0
    while at < len(expression):
        match = _TOKEN.match(expression, at)
        if match is None or match.lastgroup is None:
            raise _Unparsable
        if match.lastgroup != "space":
            yield _Token(match.lastgroup, match.group(), at)
        at = match.end()
    yield _Token("end", "", at)


def _literal_type(token: _Token) -> str:
    if token.kind == "number":
        if token.text[-1] in "uU":
            return "uint"
        is_hex = token.text[:2] in ("0x", "0X")
        return "int" if is_hex or not re.search(r"[.eE]", token.text) else "double"
    prefix = re.match(r"[rRbB]*", token.text)
    return "bytes" if prefix and "b" in prefix.group().lower() else "string"


class _Checker:
    """A precedence-climbing walk over the tokens that infers types (``None``: unknown)."""

    def __init__(self, expression: str) -> None:
        self.expression = expression
        self.tokens = list(_tokens(expression))
        self.at = 0
        self.scopes: list[str] = []
        self.errors: list[tuple[int, str]] = []
        #: Macro errors: cel-go reports them when parsing, before (and without) any
        #: type-checking error.
        self.parse_errors: list[tuple[int, str]] = []

    def peek(self, ahead: int = 0) -> _Token:
        return self.tokens[min(self.at + ahead, len(self.tokens) - 1)]

    def take(self, text: str | None = None) -> _Token:
        token = self.peek()
        if text is not None and token.text != text:
            raise _Unparsable
        self.at += 1
        return token

    def error(self, offset: int, message: str) -> None:
        self.errors.append((offset, message))

    def check(self) -> str | None:
        result = self.expr()
        if self.peek().kind != "end":
            raise _Unparsable
        return result

    def expr(self) -> str | None:
        condition = self.binary(1)
        if self.peek().text != "?":
            return condition
        self.take("?")
        then = self.expr()
        self.take(":")
        otherwise = self.expr()
        return then if then == otherwise else None

    def binary(self, level: int) -> str | None:
        left = self.unary()
        while (level_of := _PRECEDENCE.get(self.peek().text, 0)) >= level:
            op = self.take().text
            right = self.binary(level_of + 1)
            left = self.combine(op, left, right)
        return left

    @staticmethod
    def combine(op: str, left: str | None, right: str | None) -> str | None:
        if op in _RELATIONS or op in ("&&", "||"):
            return "bool"
        if left is None or left != right:
            return None
        if op == "+" and left in ("string", "bytes", *_NUMERIC):
            return left
        return left if left in _NUMERIC else None

    def unary(self) -> str | None:
        token = self.peek()
        if token.text == "!":
            self.take()
            self.unary()
            return "bool"
        if token.text == "-":
            self.take()
            operand = self.unary()
            return operand if operand in ("int", "double") else None
        return self.member(self.primary())

    def member(self, kind: str | None) -> str | None:
        while True:
            token = self.peek()
            if token.text in (".", ".?"):
                self.take()
                name = self.take()
                if name.kind != "ident":
                    raise _Unparsable
                if self.peek().text == "(":
                    kind = self.method(kind, name.text)
                elif token.text == ".?":
                    kind = None
                else:
                    kind = self.select(kind, name.text, token.offset)
            elif token.text in ("[", "[?"):
                self.take()
                self.expr()
                self.take("]")
                kind = _MAP_VALUES.get(kind or "") if token.text == "[" else None
            elif token.text == "{" and kind == "@message":
                self.fields()
                kind = None
            else:
                return None if kind == "@message" else kind

    def select(self, kind: str | None, name: str, offset: int) -> str | None:
        if kind == _DEVICE:
            if name not in _DEVICE_FIELDS:
                self.error(offset, f"undefined field '{name}'")
                return None
            return _DEVICE_FIELDS[name]
        return _MAP_VALUES.get(kind or "")

    def method(self, receiver: str | None, name: str) -> str | None:
        self.take("(")
        variable = self.macro_variable() if name in _MACROS_WITH_VARIABLE else None
        self.arguments(variable)
        if name in ("add", "sub") and receiver not in (None, _QUANTITY):
            return None
        return _MEMBER_RESULTS.get(name)

    def bind_variable(self) -> str:
        """``cel.bind``'s first argument, which must be a plain identifier (cel-go's macro
        error otherwise, at the argument's own position: a selection's last dot)."""
        if self.peek().kind == "ident" and self.peek(1).text == ",":
            return self.take().text
        first, depth, at = self.peek(), 0, None
        start = self.at
        self.expr()
        for token in self.tokens[start : self.at]:
            depth += token.text in ("(", "[", "{", "[?") or -(token.text in (")", "]", "}"))
            if depth == 0 and token.text in (".", ".?"):
                at = token.offset
        message = "cel.bind() variable names must be simple identifiers"
        self.parse_errors.append((first.offset if at is None else at, message))
        return ""

    def macro_variable(self) -> str | None:
        if self.peek().kind == "ident" and self.peek(1).text == ",":
            name = self.take().text
            self.take(",")
            return name
        return None

    def arguments(self, variable: str | None) -> None:
        depth = len(self.scopes)
        if variable is not None:
            self.scopes.append(variable)
            # A two-variable comprehension, map(k, v, e), binds its second name too.
            if self.peek().kind == "ident" and self.peek(1).text == ",":
                self.scopes.append(self.peek().text)
        while self.peek().text != ")":
            self.expr()
            if self.peek().text != ")":
                self.take(",")
        self.take(")")
        del self.scopes[depth:]

    def entries(self, closing: str) -> None:
        self.take()
        while self.peek().text != closing:
            self.expr()
            if self.peek().text == ":":
                self.take(":")
                self.expr()
            if self.peek().text != closing:
                self.take(",")
        self.take(closing)

    def fields(self) -> None:
        """A message literal's ``{name: value, …}``: the names are fields, not references."""
        self.take("{")
        while self.peek().text != "}":
            if self.peek().kind == "ident" and self.peek(1).text == ":":
                self.take()
            else:
                self.expr()
            self.take(":")
            self.expr()
            if self.peek().text != "}":
                self.take(",")
        self.take("}")

    def primary(self) -> str | None:
        token = self.take()
        if token.kind in ("number", "string"):
            return _literal_type(token)
        if token.text == "(":
            inner = self.expr()
            self.take(")")
            return inner
        if token.text == "[":
            self.at -= 1
            start = self.at
            self.entries("]")
            return self.list_type(start)
        if token.text == "{":
            self.at -= 1
            self.entries("}")
            return None
        if token.text == ".":
            token = self.take()
        if token.kind != "ident":
            raise _Unparsable
        return self.identifier(token)

    def list_type(self, start: int) -> str | None:
        end = self.at
        self.at = start + 1
        kinds = []
        while self.peek().text != "]":
            kinds.append(self.expr())
            if self.peek().text != "]":
                self.take(",")
        self.at = end
        if kinds and None not in kinds and len(set(kinds)) == 1:
            return f"list({_PRINTED.get(str(kinds[0]), kinds[0])})"
        return None

    def identifier(self, token: _Token) -> str | None:
        name = token.text
        if name in ("true", "false"):
            return "bool"
        if name == "null":
            return "null_type"
        following = self.peek().text
        if following == "(":
            self.take("(")
            self.arguments(None)
            return _GLOBAL_RESULTS.get(name)
        if name == "cel" and self.peek(1).text == "bind" and self.peek(2).text == "(":
            self.take(".")
            self.take("bind")
            self.take("(")
            variable = self.bind_variable()
            self.take(",")
            self.expr()
            self.take(",")
            self.scopes.append(variable)
            body = self.expr()
            self.scopes.pop()
            self.take(")")
            return body
        if name in self.scopes:
            return None
        if name == "device":
            return _DEVICE
        if following == "." and self.peek(1).kind == "ident" and self.peek(2).text == "(":
            return None  # a namespaced function, such as strings.quote(...)
        if following == "{":
            # The DRA environment declares no message types: cel-go refuses the type name.
            self.error(token.offset, f"undeclared reference to '{name}' (in container '')")
            return "@message"
        self.error(token.offset, f"undeclared reference to '{name}' (in container '')")
        return None


def _snippet(expression: str, offset: int) -> tuple[str, str]:
    """cel-go's ``ERROR: <input>:L:C: …`` location and source line with a caret."""
    line_start = expression.rfind("\n", 0, offset) + 1
    line_end = expression.find("\n", offset)
    line = expression[line_start : line_end if line_end >= 0 else len(expression)]
    column = offset - line_start
    number = expression.count("\n", 0, offset) + 1
    marker = "".join("." if ord(c) < 0x80 else "\uff0e" for c in line[:column]) + "^"
    return f"<input>:{number}:{column + 1}", f"\n | {line}\n | {marker}"


def _type_problem(expression: str) -> str | None:
    checker = _Checker(expression)
    try:
        result = checker.check()
    except (_Unparsable, IndexError):
        return None
    if checker.parse_errors:
        checker.errors = checker.parse_errors
    if checker.errors:
        lines = []
        for offset, message in sorted(checker.errors):
            where, source = _snippet(expression, offset)
            lines.append(f"ERROR: {where}: {message}{source}")
        return "compilation failed: " + "\n".join(lines)
    if result is None or result == "bool" or (result.startswith("@") and result != _DEVICE):
        return None
    return f"must evaluate to bool or the unknown type, not {_PRINTED.get(result, result)}"
