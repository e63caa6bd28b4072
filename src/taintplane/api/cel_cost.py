"""The worst-case cost of a DRA selector, as cel-go's estimator (``checker.Cost``) reckons it
with the sizes the DRA environment declares.

The API server refuses a selector whose estimate exceeds ``CELSelectorExpressionMaxCost``
(1 000 000): ``Forbidden: too complex, exceeds cost limit``. The estimate follows cel-go's
rules on this module's parse tree (:mod:`taintplane.api.cel_syntax`), maxima only:

* a literal costs 0, an identifier or a field selection 1, ``has()`` 1 plus its operand;
* a call costs 1 plus its target and arguments, except: ``&&``/``||`` their operands only;
  ``?:`` the condition plus the dearer branch; ``==``, ``!=`` and ordering of strings 0.1 per
  character of the shorter operand, rounded up (a scalar is one character); ``+`` of strings
  0.1 per character of the result; ``in`` on a list 1 per element (on a map 1);
  ``contains`` and ``matches`` the product of the string's and the argument's (0.1 and 0.25
  per character) traversals, as are ``find``/``findAll`` and ``indexOf``/``lastIndexOf``;
  ``startsWith`` and ``endsWith`` 0.1 per character of the argument, ``split`` 0.2 per
  character of the string;
* a list literal 10 plus its elements, a map literal 30 plus its entries;
* a comprehension macro its range, its fixed parts, and per element of the range its loop
  condition and step (``all`` 3, ``exists`` 4, ``exists_one`` 2, ``map`` 12, ``filter`` 13,
  plus the predicate or transform); ``cel.bind`` 10 plus its value and body.

Sizes come from the declaration of ``device`` (as ``dracel``'s size estimator gives them):
the driver up to 63 characters, ``attributes`` and ``capacity`` maps of at most 32 domains
(63 characters) of at most 32 IDs (32 characters), an attribute value up to 64 characters;
literals have their own size. Anything else is unknown, which makes a loop over it cost the
most (as in cel-go, where an unbounded range saturates the estimate).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from taintplane.api.cel_syntax import (
    Binary,
    Call,
    Cond,
    Expr,
    Ident,
    Index,
    ListLit,
    Lit,
    MapLit,
    Select,
    Unary,
    parse,
)

__all__ = [
    "CEL_SELECTOR_EXPRESSION_MAX_COST",
    "COST_LIMIT_EXCEEDED",
    "UNBOUNDED_COST",
    "Shape",
    "device_fields",
    "estimate_cost",
]

#: ``resource.CELSelectorExpressionMaxCost``
CEL_SELECTOR_EXPRESSION_MAX_COST = 1_000_000
COST_LIMIT_EXCEEDED = "too complex, exceeds cost limit"
_UNBOUNDED = 2**64 - 1
#: Estimates this large only come from a size that is unknown (cel-go's math.MaxUint64,
#: perhaps scaled by a cost factor): known sizes (at most 64) would need a dozen nested loops.
UNBOUNDED_COST = 2**60
_STRING_TRAVERSAL = 0.1
_REGEX_LENGTH = 0.25
_LIST_CREATE, _MAP_CREATE = 10, 30
#: per element: the loop condition's and step's own cost (without the predicate's), and the
#: cost outside the loop (accumulator init and result) of each comprehension macro.
_MACROS = {
    "all": (3, 1),
    "exists": (4, 1),
    "exists_one": (2, 2),
    "map": (12, 11),
    "filter": (13, 11),
}


@dataclass(frozen=True, slots=True)
class Shape:
    """What is known of a value's size: its own (characters or entries) and, for a map or
    list, its keys' and values' (elements')."""

    size: int | None = None
    key: Shape | None = None
    value: Shape | None = None
    kind: str = ""  # "map", "list" or "" (a scalar or a string)


_STRUCT = Shape()  # the device: fields, not entries
_ATTRIBUTE = Shape(64)
_ID, _DOMAIN = Shape(32), Shape(63)
_ATTRIBUTES = Shape(32, _DOMAIN, Shape(32, _ID, _ATTRIBUTE, "map"), "map")
_CAPACITY = Shape(32, _DOMAIN, Shape(32, _ID, Shape(1), "map"), "map")
_DEVICE_FIELDS = {"driver": Shape(63), "attributes": _ATTRIBUTES, "capacity": _CAPACITY}


def _add(*costs: int) -> int:
    return min(sum(costs), _UNBOUNDED)


def _times(count: int | None, cost: int) -> int:
    if count is None:
        return _UNBOUNDED if cost else 0
    return min(count * cost, _UNBOUNDED)


def _factor(size: int | None, factor: float) -> int:
    return _UNBOUNDED if size is None else math.ceil(size * factor)


class _Estimator:
    def __init__(self, fields: Mapping[str, Shape] | None = None) -> None:
        self.scopes: list[dict[str, Shape]] = [{"device": _STRUCT}]
        self.fields = _DEVICE_FIELDS if fields is None else fields

    def lookup(self, name: str) -> Shape:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return Shape()

    def cost(self, node: Expr) -> tuple[int, Shape]:
        match node:
            case Lit(text):
                return 0, _literal_shape(text)
            case Ident(name) if name in ("true", "false", "null"):
                return 0, Shape(1)
            case Ident(name):
                return 1, self.lookup(name)
            case Select(operand, field):
                cost, shape = self.cost(operand)
                if shape is _STRUCT:
                    return _add(cost, 1), self.fields.get(field, Shape())
                return _add(cost, 1), shape.value or Shape()
            case Index(operand, index):
                cost, shape = self.cost(operand)
                index_cost, _ = self.cost(index)
                return _add(cost, index_cost, 1), shape.value or Shape()
            case ListLit(items):
                costs = [self.cost(i) for i in items]
                widest = _widest([s for _, s in costs])
                shape = Shape(len(items), Shape(1), widest, "list")
                return _add(_LIST_CREATE, *(c for c, _ in costs)), shape
            case MapLit(entries):
                total = _MAP_CREATE
                keys, values = [], []
                for key, value in entries:
                    key_cost, key_shape = self.cost(key)
                    value_cost, value_shape = self.cost(value)
                    total = _add(total, key_cost, value_cost)
                    keys.append(key_shape)
                    values.append(value_shape)
                return total, Shape(len(entries), _widest(keys), _widest(values), "map")
            case Cond(condition, then, otherwise):
                c, _ = self.cost(condition)
                t, t_shape = self.cost(then)
                f, f_shape = self.cost(otherwise)
                return _add(c, max(t, f)), _widest([t_shape, f_shape])
            case Unary(_, operand):
                cost, shape = self.cost(operand)
                return _add(cost, 1), shape
            case Binary(op, left, right):
                return self.binary(op, left, right)
            case Call():
                return self.call(node)
        raise AssertionError(node)  # pragma: no cover

    def binary(self, op: str, left: Expr, right: Expr) -> tuple[int, Shape]:
        l_cost, l_shape = self.cost(left)
        r_cost, r_shape = self.cost(right)
        args = _add(l_cost, r_cost)
        if op in ("&&", "||"):
            return args, Shape(1)
        if op in ("==", "!=") or (op in ("<", "<=", ">", ">=") and _is_text(l_shape)):
            # The shorter operand's traversal; an unknown size counts as unbounded.
            smaller = min(_size(l_shape), _size(r_shape))
            return _add(args, _factor(smaller, _STRING_TRAVERSAL)), Shape(1)
        if op == "in":
            if r_shape.kind == "list":
                return _add(args, _size(r_shape)), Shape(1)
            return _add(args, 1), Shape(1)  # a map lookup
        if op == "+" and (_is_text(l_shape) or _is_text(r_shape)):
            sizes = (l_shape.size, r_shape.size)
            size = None if None in sizes else _add(l_shape.size or 0, r_shape.size or 0)
            return _add(args, _factor(size, _STRING_TRAVERSAL)), Shape(size)
        return _add(args, 1), Shape(1)

    def call(self, node: Call) -> tuple[int, Shape]:
        target, name, args = node.target, node.name, node.args
        if target == Ident("cel") and name == "bind" and len(args) == 3:
            init_cost, init_shape = self.cost(args[1])
            variable = args[0].name if isinstance(args[0], Ident) else ""
            self.scopes.append({variable: init_shape})
            body_cost, body_shape = self.cost(args[2])
            self.scopes.pop()
            return _add(_LIST_CREATE, init_cost, body_cost), body_shape
        if target is not None and name in _MACROS and len(args) >= 2:
            return self.comprehension(target, name, args)
        if target is None and name == "has" and len(args) == 1:
            inner = args[0]
            operand = inner.operand if isinstance(inner, Select) else inner
            cost, _ = self.cost(operand)
            return _add(cost, 1), Shape(1)
        total = 0
        target_shape = Shape()
        if target is not None:
            total, target_shape = self.cost(target)
        shapes = []
        for arg in args:
            cost, shape = self.cost(arg)
            total = _add(total, cost)
            shapes.append(shape)
        if target is not None and shapes:
            special = _string_call(name, target_shape, shapes[0])
            if special is not None:
                return _add(total, special[0]), special[1]
        return _add(total, 1), Shape()

    def comprehension(self, target: Expr, name: str, args: tuple[Expr, ...]) -> tuple[int, Shape]:
        range_cost, range_shape = self.cost(target)
        variables = [a.name for a in args[:-1] if isinstance(a, Ident)]
        scope: dict[str, Shape] = {}
        if len(variables) == 1:
            # A list's elements, or a map's keys.
            element = range_shape.key if range_shape.kind == "map" else range_shape.value
            scope[variables[0]] = element or Shape()
        elif len(variables) == 2:
            scope[variables[0]] = range_shape.key or Shape()
            scope[variables[1]] = range_shape.value or Shape()
        self.scopes.append(scope)
        body_cost, body_shape = self.cost(args[-1])
        self.scopes.pop()
        per_element, fixed = _MACROS[name]
        loop = _times(range_shape.size, _add(per_element, body_cost))
        listed = Shape(range_shape.size, Shape(1), body_shape, "list")
        result = listed if name in ("map", "filter") else Shape(1)
        return _add(range_cost, fixed, loop), result


def _string_call(name: str, target: Shape, arg: Shape) -> tuple[int, Shape] | None:
    """The cost and result of string functions whose cost grows with their operands (cel-go's
    and the Kubernetes strings and regex libraries' estimates)."""
    if name in ("matches", "find", "findAll"):
        text = None if target.size is None else target.size + 1
        cost = _times_costs(_factor(text, _STRING_TRAVERSAL), _factor(arg.size, _REGEX_LENGTH))
        return cost, Shape(1) if name == "matches" else Shape(target.size)
    if name in ("contains", "indexOf", "lastIndexOf"):
        cost = _times_costs(
            _factor(target.size, _STRING_TRAVERSAL), _factor(arg.size, _STRING_TRAVERSAL)
        )
        return cost, Shape(1)
    if name in ("startsWith", "endsWith"):
        return _factor(arg.size, _STRING_TRAVERSAL), Shape(1)
    if name == "split":
        # The traversal and the construction of the result.
        listed = Shape(target.size, Shape(1), Shape(target.size), "list")
        return _factor(target.size, 2 * _STRING_TRAVERSAL), listed
    return None


def _times_costs(a: int, b: int) -> int:
    return min(a * b, _UNBOUNDED)


def _size(shape: Shape) -> int:
    return _UNBOUNDED if shape.size is None else shape.size


def _is_text(shape: Shape) -> bool:
    return not shape.kind and shape.size not in (None, 1)


def _widest(shapes: list[Shape]) -> Shape:
    if not shapes:
        return Shape(0)
    sizes = [s.size for s in shapes]
    return Shape(None if None in sizes else max(s or 0 for s in sizes))


def _literal_shape(text: str) -> Shape:
    if text[:1] in "\"'" or text[:2].lower() in ('r"', "r'", 'b"', "b'"):
        body = text.lstrip("rRbB")
        quote = 3 if body[:3] in ('"""', "'''") else 1
        return Shape(max(len(body) - 2 * quote, 0))
    return Shape(1)


def device_fields(
    driver: str,
    attributes: Mapping[str, Mapping[str, Any]],
    capacity: Mapping[str, Mapping[str, Any]],
) -> dict[str, Shape]:
    """The sizes of one device's fields, for the cost of evaluating a selector on it (what
    cel-go's runtime cost tracker counts: its actual maps and strings)."""

    def nested(domains: Mapping[str, Mapping[str, Any]], value: Callable[[Any], int]) -> Shape:
        ids = [i for entries in domains.values() for i in entries]
        values = [value(v) for entries in domains.values() for v in entries.values()]
        inner = Shape(
            max((len(e) for e in domains.values()), default=0),
            Shape(max((len(i) for i in ids), default=0)),
            Shape(max(values, default=0)),
            "map",
        )
        return Shape(len(domains), Shape(max((len(d) for d in domains), default=0)), inner, "map")

    return {
        "driver": Shape(len(driver)),
        "attributes": nested(attributes, lambda v: len(v) if isinstance(v, str) else 1),
        "capacity": nested(capacity, lambda _: 1),
    }


def estimate_cost(expression: str, fields: Mapping[str, Shape] | None = None) -> int:
    """The worst-case cost, over every device the DRA environment allows or (``fields``, from
    :func:`device_fields`) for one device; raises
    :class:`~taintplane.api.cel_syntax.CelSyntaxError` when the expression cannot be parsed
    here."""
    cost, _ = _Estimator(fields).cost(parse(expression))
    return cost
