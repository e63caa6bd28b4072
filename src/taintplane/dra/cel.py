"""The CEL environment of DRA selectors (``k8s.io/dynamic-resource-allocation/cel``).

An expression sees one variable, ``device``, with

* ``device.driver`` — the driver's name;
* ``device.attributes["domain"].id`` — attribute values (int, bool, string; versions as
  semver values). An attribute without a domain belongs to the driver's domain;
* ``device.capacity["domain"].id`` — capacities as quantities.

As upstream, looking up a domain the device has nothing in yields an empty map (so
``"id" in device.attributes["other.example.com"]`` is false), while a missing id is the
runtime error ``no such key: id``. Quantities and versions compare with the Kubernetes CEL
libraries' functions: ``quantity("1Gi")``, ``isQuantity``, ``compareTo``, ``isGreaterThan``,
``isLessThan``, ``add``, ``sub``, ``asInteger``, ``asApproximateFloat``, ``sign``,
``isInteger``; ``semver("1.2.3")``, ``isSemver``, ``major``, ``minor``, ``patch``. Two
quantities are ``==`` when their amounts are equal (``quantity("1Gi") ==
quantity("1024Mi")``).

The evaluator is the ``common-expression-language`` package (a CEL implementation in Rust).
It lacks the optional selection syntax (``x.?f``, ``m[?k]``) and ``cel.bind``, which
upstream's environment has: :mod:`taintplane.api.cel_syntax` rewrites those into syntax it
has. Worst-case costs are estimated (:mod:`taintplane.api.cel_cost`): at validation, and for
an expression over the limit (stored before, or restored from a snapshot) again per device
with its own sizes, failing as upstream's program does when that exceeds the limit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from taintplane.api.cel_cost import (
    CEL_SELECTOR_EXPRESSION_MAX_COST,
    UNBOUNDED_COST,
    device_fields,
    estimate_cost,
)
from taintplane.api.cel_syntax import (
    HAS_INDEX,
    CelSyntaxError,
    rewrite,
    without_optional_markers,
)
from taintplane.api.quantity import QuantityError, parse_quantity

if TYPE_CHECKING:
    import cel

__all__ = [
    "ACTUAL_COST_EXCEEDED",
    "NO_SUCH_KEY_HINT",
    "CelCache",
    "CelError",
    "CompiledSelector",
    "DeviceView",
]

#: cel-go's error when a program's cost limit is reached (``CELSelectorExpressionMaxCost``).
ACTUAL_COST_EXCEEDED = "operation cancelled: actual cost limit exceeded"
NO_SUCH_KEY_HINT = (
    ". Consider using CEL optional chaining (?), has() macro, or orValue() for optional fields"
)
_QUANTITY = "__quantity__"
_SEMVER = "__semver__"
_DOMAIN_LOOKUP = re.compile(
    r"""device\s*\.\s*(attributes|capacity)\s*\[\s*(?:"([^"]*)"|'([^']*)')"""
)
_SEMVER_RE = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?"
)


_CEL_TYPES = {"str": "string", "float": "double", "dict": "map", "NoneType": "null_type"}


class CelError(Exception):
    """A compile or runtime error, with upstream's wording of the detail."""


@dataclass(frozen=True, slots=True)
class DeviceView:
    """What a selector sees of one device (``cel.Device``)."""

    driver: str
    attributes: Mapping[str, Any]
    capacity: Mapping[str, Any]


# ---- quantities and versions as CEL values ------------------------------------------------


def _quantity(text: object) -> dict[str, str]:
    if not isinstance(text, str):
        raise CelError("quantity() requires a string")
    try:
        amount = parse_quantity(text)
    except QuantityError as error:
        raise CelError(str(error)) from error
    return {_QUANTITY: _canonical(amount)}


def _canonical(amount: Decimal) -> str:
    text = format(amount.normalize(), "f")
    return text if text not in ("-0",) else "0"


def _amount(value: object) -> Decimal:
    if isinstance(value, dict) and _QUANTITY in value:
        return Decimal(str(value[_QUANTITY]))
    if isinstance(value, int) and not isinstance(value, bool):
        return Decimal(value)
    raise CelError("no such overload")


def _semver_parts(value: object) -> tuple[int, int, int, tuple[Any, ...]]:
    if not isinstance(value, dict) or _SEMVER not in value:
        raise CelError("no such overload")
    match = _SEMVER_RE.fullmatch(str(value[_SEMVER]))
    if match is None:  # pragma: no cover - only valid versions are wrapped
        raise CelError("invalid semver")
    pre = match.group(4)
    # A version without a pre-release ranks above any with one.
    rank: tuple[Any, ...] = (1,) if pre is None else (0, *(_pre_key(p) for p in pre.split(".")))
    return int(match.group(1)), int(match.group(2)), int(match.group(3)), rank


def _pre_key(part: str) -> tuple[int, int, str]:
    return (0, int(part), "") if part.isdigit() else (1, 0, part)


def _semver(text: object) -> dict[str, str]:
    if not isinstance(text, str) or _SEMVER_RE.fullmatch(text) is None:
        raise CelError(f"could not parse {text!r} as semver")
    return {_SEMVER: text}


def _compare(a: object, b: object) -> int:
    if isinstance(a, dict) and _SEMVER in a:
        left, right = _semver_parts(a), _semver_parts(b)
    else:
        left_q, right_q = _amount(a), _amount(b)
        return (left_q > right_q) - (left_q < right_q)
    return (left > right) - (left < right)


def _as_integer(q: object) -> int:
    amount = _amount(q)
    if amount != amount.to_integral_value():
        raise CelError("cannot convert value to integer")
    return int(amount)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "quantity": _quantity,
    "isQuantity": lambda s: _is(lambda: _quantity(s)),
    "semver": _semver,
    "isSemver": lambda s: _is(lambda: _semver(s)),
    "compareTo": _compare,
    "isGreaterThan": lambda a, b: _compare(a, b) > 0,
    "isLessThan": lambda a, b: _compare(a, b) < 0,
    "add": lambda a, b: {_QUANTITY: _canonical(_amount(a) + _amount(b))},
    "sub": lambda a, b: {_QUANTITY: _canonical(_amount(a) - _amount(b))},
    "sign": lambda a: (_amount(a) > 0) - (_amount(a) < 0),
    "isInteger": lambda a: _amount(a) == _amount(a).to_integral_value(),
    "asInteger": _as_integer,
    "asApproximateFloat": lambda a: float(_amount(a)),
    "major": lambda v: _semver_parts(v)[0],
    "minor": lambda v: _semver_parts(v)[1],
    "patch": lambda v: _semver_parts(v)[2],
}


def _has_index(container: object, key: object) -> bool:
    """``[?key]``'s presence test: a map's key, or a list's index in range."""
    if isinstance(container, dict):
        return key in container
    if isinstance(container, list) and isinstance(key, int) and not isinstance(key, bool):
        return 0 <= key < len(container)
    raise CelError("no such overload")


_FUNCTIONS = {**FUNCTIONS, HAS_INDEX: _has_index}


def _is(attempt: Callable[[], object]) -> bool:
    try:
        attempt()
    except CelError:
        return False
    return True


# ---- the device variable ------------------------------------------------------------------


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def _attribute_value(attribute: Mapping[str, Any]) -> Any:
    for key in ("int", "bool", "string"):
        if key in attribute and attribute[key] is not None:
            return attribute[key]
    version = attribute.get("version")
    if isinstance(version, str):
        return _semver(version)
    raise CelError("unsupported attribute value")


def device_variable(device: Mapping[str, Any], driver: str) -> DeviceView:
    """The ``device`` variable of a slice's device entry (``spec.devices[i]``)."""
    attributes: dict[str, dict[str, Any]] = {}
    for name, attribute in (device.get("attributes") or {}).items():
        domain, ident = _split(str(name), driver)
        try:
            value = _attribute_value(attribute or {})
        except CelError as error:
            raise CelError(f"attribute {name}: {error}") from error
        attributes.setdefault(domain, {})[ident] = value
    capacity: dict[str, dict[str, Any]] = {}
    for name, entry in (device.get("capacity") or {}).items():
        domain, ident = _split(str(name), driver)
        capacity.setdefault(domain, {})[ident] = _quantity(str((entry or {}).get("value", "0")))
    return DeviceView(driver, attributes, capacity)


class CompiledSelector:
    """One compiled expression; :meth:`matches` evaluates it for a device."""

    def __init__(self, expression: str) -> None:
        self.expression = expression
        self.error = ""
        try:
            # The optional syntax and cel.bind, which the package lacks, in syntax it has.
            text = rewrite(expression)
        except CelSyntaxError:
            # The package's own parser then names the error.
            text = without_optional_markers(expression)
        # Looked up in the rewritten text: `[?"domain"]` reads as a lookup there too, and a
        # domain the device lacks is an empty map, as upstream's map with a default.
        self._domains: dict[str, set[str]] = {"attributes": set(), "capacity": set()}
        for kind, double, single in _DOMAIN_LOOKUP.findall(text):
            self._domains[kind].add(double or single)
        # Imported on first use: the package's __init__ also loads its interactive shell
        # (prompt_toolkit and more), ~0.15 s that `taintplane up` need not pay at start-up.
        import cel

        try:
            # Worst case over all devices; evaluations pay for a closer look only beyond it.
            self._cost = estimate_cost(expression)
        except CelSyntaxError:
            self._cost = 0
        try:
            self._program: cel.Program | None = cel.compile(text)
        except (ValueError, RuntimeError) as error:
            self._program = None
            self.error = f"compilation failed: {error}"

    def matches(self, device: DeviceView) -> bool:
        if self._program is None:
            raise CelError(self.error)
        if self._cost > CEL_SELECTOR_EXPRESSION_MAX_COST:
            # Upstream's program stops at the cost limit; the package has none, so the cost
            # is reckoned for this device's own maps and strings instead. An unbounded figure
            # comes from values whose size only evaluation knows (a quantity, a function's
            # result): nothing can be said of it beforehand, and it runs.
            fields = device_fields(device.driver, device.attributes, device.capacity)
            cost = estimate_cost(self.expression, fields)
            if CEL_SELECTOR_EXPRESSION_MAX_COST < cost < UNBOUNDED_COST:
                raise CelError(ACTUAL_COST_EXCEEDED)
        variable = {
            "driver": device.driver,
            "attributes": self._with_defaults("attributes", device.attributes),
            "capacity": self._with_defaults("capacity", device.capacity),
        }
        import cel

        context = cel.Context({"device": variable}, _FUNCTIONS)
        try:
            result = self._program.execute(context)
        except KeyError as error:
            raise CelError(f"no such key: {error.args[0]}{NO_SUCH_KEY_HINT}") from error
        except (TypeError, ValueError, RuntimeError, ArithmeticError) as error:
            raise CelError(str(error)) from error
        if not isinstance(result, bool):
            kind = _CEL_TYPES.get(type(result).__name__, type(result).__name__)
            raise CelError(f"CEL result of type {kind} could not be converted to bool")
        return result

    def _with_defaults(self, kind: str, present: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(present)
        for domain in self._domains[kind]:
            out.setdefault(domain, {})
        return out


class CelCache:
    """Compiled expressions by their text (upstream keeps an LRU of them)."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._entries: dict[str, CompiledSelector] = {}

    def get(self, expression: str) -> CompiledSelector:
        compiled = self._entries.pop(expression, None)
        if compiled is None:
            compiled = CompiledSelector(expression)
            if len(self._entries) >= self.size:
                self._entries.pop(next(iter(self._entries)))
        self._entries[expression] = compiled
        return compiled
