"""Feature gates, with the names and defaults of Kubernetes v1.35."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["DEFAULTS", "FeatureGates", "UnknownFeatureGateError"]

#: Alpha in 1.35: the ``Lt`` and ``Gt`` toleration operators (numeric taint values).
TAINT_TOLERATION_COMPARISON_OPERATORS = "TaintTolerationComparisonOperators"

DEFAULTS: Mapping[str, bool] = {
    TAINT_TOLERATION_COMPARISON_OPERATORS: False,
}


class UnknownFeatureGateError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """An immutable set of gate values; unknown gates are refused, as upstream refuses them."""

    overrides: Mapping[str, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.overrides) - set(DEFAULTS))
        if unknown:
            raise UnknownFeatureGateError(f"unrecognized feature gate: {unknown[0]}")

    def enabled(self, name: str) -> bool:
        if name not in DEFAULTS:
            raise UnknownFeatureGateError(f"unrecognized feature gate: {name}")
        return self.overrides.get(name, DEFAULTS[name])

    @classmethod
    def parse(cls, text: str) -> FeatureGates:
        """``--feature-gates=A=true,B=false``."""
        overrides: dict[str, bool] = {}
        for item in filter(None, (part.strip() for part in text.split(","))):
            name, sep, raw = item.partition("=")
            if not sep:
                raise ValueError(f"missing bool value for {name}")
            value = raw.strip().lower()
            if value not in ("true", "false"):
                raise ValueError(f"invalid value of {name}={raw}, err: strconv.ParseBool")
            overrides[name.strip()] = value == "true"
        return cls(overrides)

    @property
    def comparison_operators(self) -> bool:
        return self.enabled(TAINT_TOLERATION_COMPARISON_OPERATORS)
