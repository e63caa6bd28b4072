"""The pod ``Toleration`` value type and the rules for matching tolerations to taints.

Matching follows ``Toleration.ToleratesTaint`` in Kubernetes v1.35:

1. an empty toleration effect matches every taint effect, otherwise the effects must be equal;
2. an empty toleration key matches every key (validation only allows it with ``Exists``);
3. ``Exists`` matches any value; ``Equal`` and the empty operator need equal values;
4. ``Lt`` and ``Gt`` (alpha, feature gate ``TaintTolerationComparisonOperators``) compare the
   taint's value with the toleration's as 64-bit integers; with the gate off they match nothing.

An absent operator is kept distinct from ``"Equal"``: the two match alike, but merging and
update validation compare tolerations field by field, as upstream does.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from taintplane.api import names
from taintplane.api.decoding import INT64_MAX, INT64_MIN, DecodeError, optional_int64, optional_str
from taintplane.api.field import Path
from taintplane.api.gofmt import GoStruct
from taintplane.api.taints import Taint, TaintEffect

__all__ = [
    "TaintFilter",
    "Toleration",
    "TolerationOperator",
    "find_untolerated_taint",
    "matching_tolerations",
    "min_toleration_seconds",
    "parse_int64",
    "parse_tolerations",
    "tolerate_taint",
    "tolerations_to_list",
]


class TolerationOperator(enum.StrEnum):
    EQUAL = "Equal"
    EXISTS = "Exists"
    LT = "Lt"
    GT = "Gt"


def parse_int64(text: str) -> int | None:
    """A taint or toleration value as ``Lt``/``Gt`` read it: a canonical decimal integer
    (``content.IsDecimalInteger``: no sign but ``-``, no leading zeros) within int64."""
    if names.is_decimal_integer(text):
        return None
    number = int(text)
    return number if INT64_MIN <= number <= INT64_MAX else None


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: Path | None = None) -> Toleration:
        """Parse one element of ``tolerations``; wrong JSON types raise :class:`DecodeError`."""
        path = path if path is not None else Path.root("toleration")
        if not isinstance(data, Mapping):
            raise DecodeError.wrong_type(data, "PodSpec", path, "v1.Toleration")
        return cls(
            key=optional_str(data, "key", "Toleration", path),
            operator=optional_str(data, "operator", "Toleration", path),
            value=optional_str(data, "value", "Toleration", path),
            effect=optional_str(data, "effect", "Toleration", path),
            toleration_seconds=optional_int64(data, "tolerationSeconds", "Toleration", path),
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON Kubernetes writes: every field is omitted when empty."""
        out: dict[str, Any] = {}
        if self.key:
            out["key"] = self.key
        if self.operator:
            out["operator"] = self.operator
        if self.value:
            out["value"] = self.value
        if self.effect:
            out["effect"] = self.effect
        if self.toleration_seconds is not None:
            out["tolerationSeconds"] = self.toleration_seconds
        return out

    def tolerates(self, taint: Taint, *, comparison_operators: bool = False) -> bool:
        """``ToleratesTaint``; ``comparison_operators`` is the alpha gate for ``Lt``/``Gt``."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", TolerationOperator.EQUAL):
            return self.value == taint.value
        if self.operator == TolerationOperator.EXISTS:
            return True
        if self.operator in (TolerationOperator.LT, TolerationOperator.GT):
            if not comparison_operators:
                return False
            ours, theirs = parse_int64(self.value), parse_int64(taint.value)
            if ours is None or theirs is None:
                return False
            return theirs < ours if self.operator == TolerationOperator.LT else theirs > ours
        return False

    def matches(self, other: Toleration) -> bool:
        """``MatchToleration``: same key, operator, value and effect (seconds ignored)."""
        return (
            self.key == other.key
            and self.operator == other.operator
            and self.value == other.value
            and self.effect == other.effect
        )

    def go_value(self) -> GoStruct:
        """How a field error prints this toleration (JSON of ``core.Toleration``)."""
        return GoStruct(
            (
                ("Key", self.key),
                ("Operator", self.operator),
                ("Value", self.value),
                ("Effect", self.effect),
                ("TolerationSeconds", self.toleration_seconds),
            )
        )


def parse_tolerations(items: object, path: Path) -> list[Toleration]:
    """Parse a ``tolerations`` list (``null`` or absent reads as empty)."""
    if items is None:
        return []
    if not isinstance(items, list):
        raise DecodeError.wrong_type(items, "PodSpec", path, "[]v1.Toleration")
    return [Toleration.from_dict(item, path.index(i)) for i, item in enumerate(items)]


def tolerations_to_list(tolerations: Iterable[Toleration]) -> list[dict[str, Any]]:
    return [toleration.to_dict() for toleration in tolerations]


def tolerate_taint(
    tolerations: Iterable[Toleration], taint: Taint, *, comparison_operators: bool = False
) -> bool:
    """``TolerationsTolerateTaint``: does any of the tolerations tolerate the taint?"""
    return any(t.tolerates(taint, comparison_operators=comparison_operators) for t in tolerations)


class TaintFilter(enum.Enum):
    """Which of a node's taints a caller cares about."""

    ALL = "all"
    #: NoSchedule and NoExecute: the taints that keep a pod from being scheduled.
    DO_NOT_SCHEDULE = "do-not-schedule"
    #: NoExecute only: the taints that evict running pods.
    NO_EXECUTE = "no-execute"

    def includes(self, taint: Taint) -> bool:
        if self is TaintFilter.ALL:
            return True
        if self is TaintFilter.NO_EXECUTE:
            return taint.effect == TaintEffect.NO_EXECUTE
        return taint.effect in (TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE)


def find_untolerated_taint(
    taints: Iterable[Taint],
    tolerations: Sequence[Toleration],
    taint_filter: TaintFilter | Callable[[Taint], bool] = TaintFilter.ALL,
    *,
    comparison_operators: bool = False,
) -> Taint | None:
    """``FindMatchingUntoleratedTaint``: the first taint, in node order, that passes the filter
    and that no toleration tolerates; ``None`` when every such taint is tolerated."""
    include = taint_filter.includes if isinstance(taint_filter, TaintFilter) else taint_filter
    for taint in taints:
        if not include(taint):
            continue
        if not tolerate_taint(tolerations, taint, comparison_operators=comparison_operators):
            return taint
    return None


def matching_tolerations(
    taints: Sequence[Taint],
    tolerations: Sequence[Toleration],
    *,
    comparison_operators: bool = False,
) -> list[Toleration] | None:
    """``GetMatchingTolerations`` of the taint eviction controller.

    For each taint, in order, the *first* toleration that tolerates it. ``None`` when some
    taint is not tolerated at all (the pod must go now); an empty list when there are no taints.
    """
    matched: list[Toleration] = []
    for taint in taints:
        for toleration in tolerations:
            if toleration.tolerates(taint, comparison_operators=comparison_operators):
                matched.append(toleration)
                break
        else:
            return None
    return matched


def min_toleration_seconds(tolerations: Iterable[Toleration]) -> int | None:
    """``getMinTolerationTime``: how long a pod may stay, given the tolerations that matched.

    Returns 0 when it must go now (no tolerations, or any ``tolerationSeconds`` ≤ 0), the
    smallest positive ``tolerationSeconds`` otherwise, and ``None`` when none of them set
    ``tolerationSeconds`` (the pod may stay forever).
    """
    tolerations = list(tolerations)
    if not tolerations:
        return 0
    smallest: int | None = None
    for toleration in tolerations:
        seconds = toleration.toleration_seconds
        if seconds is None:
            continue
        if seconds <= 0:
            return 0
        if smallest is None or seconds < smallest:
            smallest = seconds
    return smallest
