"""CEL syntax the evaluator package cannot parse, rewritten into syntax it can.

Upstream's DRA environment (``k8s.io/dynamic-resource-allocation/cel``) is cel-go's base
environment with optional types and ``ext.Bindings``; the evaluator here
(``common-expression-language``) has ``optional.of``/``optional.none()``/``orValue``/
``hasValue``/``value``/``or`` but neither the optional selection syntax nor ``cel.bind``. An
expression that uses them is parsed (:func:`parse`) and printed back (:func:`rewrite`) with

* ``cel.bind(v, init, body)`` → ``body`` with ``init`` in place of every free ``v`` (inner
  binds are expanded first; a comprehension that binds the same name shadows it, and one
  that would capture a name ``init`` reads is refused); selectors are pure, so this only
  costs repeated evaluation;
* an optional chain ``x.?f`` / ``x[?k]`` → ``(has(x.f)) ? optional.of(x.f) :
  optional.none()``, ``k`` tested with the helper ``__tp_has_index(x, k)`` (map key present,
  or list index in range). As in cel-go, once a chain has an optional step every later
  ``.f`` or ``[k]`` in it is optional too: ``a.?b.c`` is none when ``b`` or ``c`` is absent.

Expressions without that syntax are never rewritten (their errors keep their positions).
Optional entries in list and map literals (``[?x]``, ``{?k: v}``) are not rewritten.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

__all__ = [
    "HAS_INDEX",
    "Binary",
    "Call",
    "CelSyntaxError",
    "Cond",
    "Expr",
    "Ident",
    "Index",
    "ListLit",
    "Lit",
    "MapLit",
    "Select",
    "Unary",
    "needs_rewrite",
    "parse",
    "rewrite",
    "tokens",
    "unparse",
    "without_optional_markers",
]

#: The helper function the rewritten ``[?k]`` calls (the evaluator registers it).
HAS_INDEX = "__tp_has_index"

TOKEN = re.compile(
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
_LEVELS: Sequence[frozenset[str]] = (
    frozenset({"||"}),
    frozenset({"&&"}),
    frozenset({"==", "!=", "<", "<=", ">", ">=", "in"}),
    frozenset({"+", "-"}),
    frozenset({"*", "/", "%"}),
)
_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})


class CelSyntaxError(Exception):
    """Not parsed here (a syntax error, or syntax this parser leaves to the evaluator)."""


@dataclass(frozen=True, slots=True)
class Token:
    kind: str
    text: str
    offset: int


def tokens(expression: str) -> Iterator[Token]:
    at = 0
    while at < len(expression):
        match = TOKEN.match(expression, at)
        if match is None or match.lastgroup is None:
            raise CelSyntaxError(f"unexpected character at {at}")
        if match.lastgroup != "space":
            yield Token(match.lastgroup, match.group(), at)
        at = match.end()
    yield Token("end", "", at)


# ---- the tree --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Lit:
    text: str


@dataclass(frozen=True, slots=True)
class Ident:
    name: str
    absolute: bool = False  # written with a leading dot


@dataclass(frozen=True, slots=True)
class Select:
    operand: Expr
    field: str
    optional: bool = False


@dataclass(frozen=True, slots=True)
class Index:
    operand: Expr
    index: Expr
    optional: bool = False


@dataclass(frozen=True, slots=True)
class Call:
    target: Expr | None
    name: str
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class ListLit:
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class MapLit:
    entries: tuple[tuple[Expr, Expr], ...]


@dataclass(frozen=True, slots=True)
class Cond:
    condition: Expr
    then: Expr
    otherwise: Expr


@dataclass(frozen=True, slots=True)
class Unary:
    op: str
    operand: Expr


@dataclass(frozen=True, slots=True)
class Binary:
    op: str
    left: Expr
    right: Expr


Expr = Lit | Ident | Select | Index | Call | ListLit | MapLit | Cond | Unary | Binary


# ---- parsing ---------------------------------------------------------------------------------


class _Parser:
    def __init__(self, expression: str) -> None:
        self.tokens = list(tokens(expression))
        self.at = 0

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.at + ahead, len(self.tokens) - 1)]

    def take(self, text: str | None = None) -> Token:
        token = self.peek()
        if token.kind == "end" or (text is not None and token.text != text):
            raise CelSyntaxError(f"expected {text or 'more'} at {token.offset}")
        self.at += 1
        return token

    def parse(self) -> Expr:
        result = self.expr()
        if self.peek().kind != "end":
            raise CelSyntaxError(f"unexpected {self.peek().text!r}")
        return result

    def expr(self) -> Expr:
        condition = self.binary(0)
        if self.peek().text != "?":
            return condition
        self.take("?")
        then = self.binary(0)
        self.take(":")
        return Cond(condition, then, self.expr())

    def binary(self, level: int) -> Expr:
        if level == len(_LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek().kind in ("op", "ident") and self.peek().text in _LEVELS[level]:
            op = self.take().text
            # Relations do not associate in CEL's grammar but parse left to right alike.
            left = Binary(op, left, self.binary(level + 1))
        return left

    def unary(self) -> Expr:
        if self.peek().text in ("!", "-"):
            op = self.take().text
            return Unary(op, self.unary())
        return self.member(self.primary())

    def member(self, operand: Expr) -> Expr:
        while True:
            text = self.peek().text
            if text in (".", ".?"):
                self.take()
                name = self.take()
                if name.kind != "ident":
                    raise CelSyntaxError(f"expected a field name at {name.offset}")
                if text == "." and self.peek().text == "(":
                    operand = Call(operand, name.text, self.arguments())
                else:
                    operand = Select(operand, name.text, text == ".?")
            elif text in ("[", "[?"):
                self.take()
                index = self.expr()
                self.take("]")
                operand = Index(operand, index, text == "[?")
            elif text == "{":
                raise CelSyntaxError("message literals are left to the evaluator")
            else:
                return operand

    def arguments(self) -> tuple[Expr, ...]:
        self.take("(")
        args = []
        while self.peek().text != ")":
            args.append(self.expr())
            if self.peek().text != ")":
                self.take(",")
        self.take(")")
        return tuple(args)

    def primary(self) -> Expr:
        token = self.take()
        if token.kind in ("number", "string"):
            return Lit(token.text)
        if token.text == "(":
            inner = self.expr()
            self.take(")")
            return inner
        if token.text in ("[", "[?"):
            if token.text == "[?":
                raise CelSyntaxError("optional list entries are left to the evaluator")
            items = []
            while self.peek().text != "]":
                items.append(self.expr())
                if self.peek().text != "]":
                    self.take(",")
            self.take("]")
            return ListLit(tuple(items))
        if token.text == "{":
            entries = []
            while self.peek().text != "}":
                if self.peek().text == "?":
                    raise CelSyntaxError("optional map entries are left to the evaluator")
                key = self.expr()
                self.take(":")
                entries.append((key, self.expr()))
                if self.peek().text != "}":
                    self.take(",")
            self.take("}")
            return MapLit(tuple(entries))
        absolute = token.text == "."
        if absolute:
            token = self.take()
        if token.kind != "ident":
            raise CelSyntaxError(f"unexpected {token.text!r} at {token.offset}")
        if self.peek().text == "(":
            return Call(None, token.text, self.arguments())
        return Ident(token.text, absolute)


def parse(expression: str) -> Expr:
    return _Parser(expression).parse()


def needs_rewrite(expression: str) -> bool:
    """Whether the expression uses syntax the evaluator lacks (cheap: tokens only)."""
    try:
        found = list(tokens(expression))
    except CelSyntaxError:
        return False
    for i, token in enumerate(found):
        if token.text in (".?", "[?"):
            return True
        if (
            token.text == "cel"
            and found[i + 1].text == "."
            and found[min(i + 2, len(found) - 1)].text == "bind"
        ):
            return True
    return False


# ---- rewriting -------------------------------------------------------------------------------


def _substitute(node: Expr, name: str, value: Expr) -> Expr:
    """``node`` with ``value`` for every free ``name``."""
    match node:
        case Ident(n, False) if n == name:
            return value
        case Lit() | Ident():
            return node
        case Select(operand, field, optional):
            return Select(_substitute(operand, name, value), field, optional)
        case Index(operand, index, optional):
            return Index(
                _substitute(operand, name, value), _substitute(index, name, value), optional
            )
        case Call(target, fn, args):
            new_target = None if target is None else _substitute(target, name, value)
            bound = _bound(node)
            if name in bound:
                return Call(new_target, fn, args)  # the macro's variable shadows ours
            if bound & _free(value):
                raise CelSyntaxError("cel.bind() value would be captured by a macro variable")
            return Call(new_target, fn, tuple(_substitute(a, name, value) for a in args))
        case ListLit(items):
            return ListLit(tuple(_substitute(i, name, value) for i in items))
        case MapLit(entries):
            return MapLit(
                tuple(
                    (_substitute(k, name, value), _substitute(v, name, value)) for k, v in entries
                )
            )
        case Cond(c, t, f):
            return Cond(*(_substitute(x, name, value) for x in (c, t, f)))
        case Unary(op, operand):
            return Unary(op, _substitute(operand, name, value))
        case Binary(op, left, right):
            return Binary(op, _substitute(left, name, value), _substitute(right, name, value))
    raise AssertionError(node)  # pragma: no cover


def _is_bind(node: Call) -> bool:
    return node.name == "bind" and node.target == Ident("cel") and len(node.args) == 3


def _bound(node: Call) -> set[str]:
    """The variables a comprehension macro binds (``x.all(v, …)``, ``x.map(k, v, …)``)."""
    if node.target is None or node.name not in _MACROS:
        return set()
    return {a.name for a in node.args[:-1] if isinstance(a, Ident)}


def _free(node: Expr) -> set[str]:
    """Identifiers ``node`` reads (a superset of its free variables: enough to refuse)."""
    match node:
        case Ident(name):
            return {name}
        case Lit():
            return set()
        case Select(operand):
            return _free(operand)
        case Index(operand, index):
            return _free(operand) | _free(index)
        case Call(target, _, args):
            found = set() if target is None else _free(target)
            for arg in args:
                found |= _free(arg)
            return found
        case ListLit(items):
            return set().union(*(_free(i) for i in items))
        case MapLit(entries):
            return set().union(*(_free(k) | _free(v) for k, v in entries))
        case Cond(c, t, f):
            return _free(c) | _free(t) | _free(f)
        case Unary(_, operand):
            return _free(operand)
        case Binary(_, left, right):
            return _free(left) | _free(right)
    raise AssertionError(node)  # pragma: no cover


def _desugar(node: Expr) -> Expr:
    match node:
        case Lit() | Ident():
            return node
        case Call(target, name, args) if _is_bind(node):
            variable = args[0]
            if not isinstance(variable, Ident) or variable.absolute:
                raise CelSyntaxError("cel.bind() variable name must be a simple identifier")
            # Inner binds first, so that none is left in the body to shadow or capture.
            init = _desugar(args[1])
            return _substitute(_desugar(args[2]), variable.name, init)
        case Call(target, name, args):
            return Call(
                None if target is None else _desugar(target),
                name,
                tuple(_desugar(a) for a in args),
            )
        case Select() | Index():
            return _chain(node)
        case ListLit(items):
            return ListLit(tuple(_desugar(i) for i in items))
        case MapLit(entries):
            return MapLit(tuple((_desugar(k), _desugar(v)) for k, v in entries))
        case Cond(c, t, f):
            return Cond(_desugar(c), _desugar(t), _desugar(f))
        case Unary(op, operand):
            return Unary(op, _desugar(operand))
        case Binary(op, left, right):
            return Binary(op, _desugar(left), _desugar(right))
    raise AssertionError(node)  # pragma: no cover


def _chain(node: Select | Index) -> Expr:
    """A run of selections and indexes; from its first optional step on, presence-tested."""
    steps: list[Select | Index] = []
    base: Expr = node
    while isinstance(base, Select | Index):
        steps.append(base)
        base = base.operand
    steps.reverse()
    value = _desugar(base)
    first = next((i for i, s in enumerate(steps) if s.optional), None)
    tests: list[Expr] = []
    for i, step in enumerate(steps):
        if isinstance(step, Select):
            following: Expr = Select(value, step.field)
            if first is not None and i >= first:
                tests.append(Call(None, "has", (following,)))
        else:
            key = _desugar(step.index)
            following = Index(value, key)
            if first is not None and i >= first:
                tests.append(Call(None, HAS_INDEX, (value, key)))
        value = following
    if not tests:
        return value
    present = tests[0]
    for test in tests[1:]:
        present = Binary("&&", present, test)
    some = Call(Ident("optional"), "of", (value,))
    return Cond(present, some, Call(Ident("optional"), "none", ()))


def _text(node: Expr) -> str:
    match node:
        case Lit(text):
            return text
        case Ident(name, absolute):
            return f".{name}" if absolute else name
        case Select(operand, field, optional):
            return f"{_operand(operand)}{'.?' if optional else '.'}{field}"
        case Index(operand, index, optional):
            return f"{_operand(operand)}{'[?' if optional else '['}{_text(index)}]"
        case Call(target, name, args):
            joined = ", ".join(_text(a) for a in args)
            head = f"{_operand(target)}." if target is not None else ""
            return f"{head}{name}({joined})"
        case ListLit(items):
            return "[" + ", ".join(_text(i) for i in items) + "]"
        case MapLit(entries):
            return "{" + ", ".join(f"{_text(k)}: {_text(v)}" for k, v in entries) + "}"
        case Cond(c, t, f):
            return f"({_text(c)} ? {_text(t)} : {_text(f)})"
        case Unary(op, operand):
            return f"{op}{_operand(operand)}"
        case Binary(op, left, right):
            return f"({_text(left)} {op} {_text(right)})"
    raise AssertionError(node)  # pragma: no cover


def _operand(node: Expr) -> str:
    """An operand of a selection, index or method call: a unary expression or a number (whose
    digits would swallow the dot) in parentheses."""
    text = _text(node)
    number = isinstance(node, Lit) and text[:1] in "0123456789."
    return f"({text})" if isinstance(node, Unary) or number else text


def without_optional_markers(expression: str) -> str:
    """The expression with each ``.?`` and ``[?`` made ``. `` and ``[ `` (the same length), so
    that the evaluator's parser, which refuses those markers, reports the expression's other
    syntax errors at their own places."""
    try:
        found = [t for t in tokens(expression) if t.text in (".?", "[?")]
    except CelSyntaxError:
        return expression
    chars = list(expression)
    for token in found:
        chars[token.offset + 1] = " "
    return "".join(chars)


def unparse(node: Expr) -> str:
    """CEL text that parses back to ``node``."""
    return _text(node)


def rewrite(expression: str) -> str:
    """The expression in syntax the evaluator parses (unchanged when it needs nothing);
    raises :class:`CelSyntaxError` when it cannot be parsed here."""
    if not needs_rewrite(expression):
        return expression
    return _text(_desugar(parse(expression)))
