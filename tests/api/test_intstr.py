"""IntOrString scaling, as intstr.GetScaledValueFromIntOrPercent."""

import pytest

from taintplane.api.intstr import scaled_value


@pytest.mark.parametrize(
    ("value", "total", "round_up", "expected"),
    [(3, 10, True, 3), ("25%", 10, True, 3), ("25%", 10, False, 2), (None, 10, True, 0)],
)
def test_scaled_value(value: object, total: int, round_up: bool, expected: int) -> None:
    assert scaled_value(value, total, round_up=round_up) == expected


@pytest.mark.parametrize("value", ["3", "x%", 1.5])
def test_anything_else_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match="invalid value for IntOrString"):
        scaled_value(value, 10, round_up=True)
