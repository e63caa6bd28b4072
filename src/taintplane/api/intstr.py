"""IntOrString values such as ``maxSurge: 25%`` or ``minAvailable: 2``."""

from __future__ import annotations

import math

__all__ = ["scaled_value"]


def scaled_value(value: object, total: int, *, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an integer as it is, ``"N%"`` of ``total``
    rounded up or down; absent is 0. Anything else raises ValueError."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        scaled = int(value[:-1]) * total / 100
        return math.ceil(scaled) if round_up else math.floor(scaled)
    raise ValueError(f"invalid value for IntOrString: invalid value {value!r}")
