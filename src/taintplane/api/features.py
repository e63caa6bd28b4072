"""Feature gates, with the names of Kubernetes v1.35 and its defaults but two.

``DRADeviceTaints`` and ``DRADeviceTaintRules`` are alpha and off by default in 1.35; device
taints are what taintplane is for, so they are on here. Turned off, they behave as upstream's
are when off (what each one switches is listed where it is defined).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["DEFAULTS", "FeatureGates", "UnknownFeatureGateError"]

#: Alpha in 1.35: the ``Lt`` and ``Gt`` toleration operators (numeric taint values).
TAINT_TOLERATION_COMPARISON_OPERATORS = "TaintTolerationComparisonOperators"

#: Alpha in 1.35 (since 1.33), on in taintplane: taints in ResourceSlices and tolerations in
#: ResourceClaims (dropped on write when off, unless the old object used them), the
#: scheduler's taint checks, and the device taint eviction controller.
DRA_DEVICE_TAINTS = "DRADeviceTaints"
#: Alpha in 1.35, on in taintplane: the DeviceTaintRule API, the scheduler applying rules,
#: and the device taint eviction controller evicting for and reporting on rules.
DRA_DEVICE_TAINT_RULES = "DRADeviceTaintRules"

#: Beta and on in 1.35: ``adminAccess`` in claim requests and allocation results (dropped on
#: write when off, unless the old claim used it), allowed only in namespaces labelled
#: ``resource.kubernetes.io/admin-access: "true"``.
DRA_ADMIN_ACCESS = "DRAAdminAccess"

DEFAULTS: Mapping[str, bool] = {
    DRA_ADMIN_ACCESS: True,
    DRA_DEVICE_TAINTS: True,
    DRA_DEVICE_TAINT_RULES: True,
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

    @property
    def admin_access(self) -> bool:
        return self.enabled(DRA_ADMIN_ACCESS)

    @property
    def device_taints(self) -> bool:
        return self.enabled(DRA_DEVICE_TAINTS)

    @property
    def device_taint_rules(self) -> bool:
        return self.enabled(DRA_DEVICE_TAINT_RULES)
