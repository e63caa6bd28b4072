"""``workloads.deep_copy``: the controllers' copy of a JSON object is ``copy.deepcopy``'s,
through orjson, and shares nothing with the original."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from taintplane.controllers.workloads import deep_copy

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=30,
)


def _mutables(value: Any) -> list[int]:
    if isinstance(value, dict):
        return [id(value), *[i for v in value.values() for i in _mutables(v)]]
    if isinstance(value, list):
        return [id(value), *[i for v in value for i in _mutables(v)]]
    return []


@given(st.dictionaries(st.text(max_size=8), JSON, max_size=6))
def test_deep_copy_equals_deepcopy_and_shares_nothing(obj: dict[str, Any]) -> None:
    copied = deep_copy(obj)
    assert copied == copy.deepcopy(obj)
    assert [type(v) for v in copied.values()] == [type(v) for v in obj.values()]
    assert list(copied) == list(obj)  # key order kept
    assert not set(_mutables(copied)) & set(_mutables(obj))


def test_what_json_cannot_carry_falls_back_to_deepcopy() -> None:
    obj: dict[str, Any] = {"big": 2**70, "keys": {1: "x"}, "t": (1, 2)}
    copied = deep_copy(obj)
    assert copied == obj
    assert copied["keys"] is not obj["keys"]
