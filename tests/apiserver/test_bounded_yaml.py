"""The bounded YAML loader reads what PyYAML's safe loader reads (aliases included), and the
depth check agrees with a plain recursive count."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from taintplane.apiserver import bounded_yaml
from taintplane.apiserver.body_limits import DepthError, check_depth

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=30,
)


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


@given(values, st.booleans())
def test_documents_read_as_the_safe_loader_reads_them(value: Any, flow: bool) -> None:
    text = yaml.safe_dump(value, default_flow_style=flow)
    assert bounded_yaml.load(text) == yaml.safe_load(text)


@given(values)
def test_shared_parts_become_aliases_and_read_back(value: Any) -> None:
    # yaml.dump writes an anchor and aliases for an object it meets twice.
    text = yaml.dump({"a": [value, value], "b": value}, Dumper=yaml.SafeDumper)
    assert bounded_yaml.load(text) == yaml.safe_load(text)


@given(values, st.integers(1, 12))
def test_the_depth_check_agrees_with_a_recursive_count(value: Any, limit: int) -> None:
    if depth(value) > limit:
        with pytest.raises(DepthError):
            check_depth(value, limit=limit)
    else:
        check_depth(value, limit=limit)
