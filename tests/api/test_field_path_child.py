"""``Path.child`` with one name takes a shortcut (issue 16: validation builds a path per
field of every write); any names must still give the path the general rule gives."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from taintplane.api.field import Path

NAMES = st.text(max_size=5)


def general(parts: tuple[str, ...], names: list[str]) -> tuple[str, ...]:
    grown = [*parts]
    for part in names:
        grown.append(("." + part) if grown else part)
    return tuple(grown)


@given(st.lists(NAMES, max_size=3), NAMES, st.lists(NAMES, max_size=2), st.integers(0, 3))
def test_child_as_the_general_rule(
    start: list[str], name: str, more: list[str], index: int
) -> None:
    base = Path.root(*start) if start else Path()
    base = base.index(index) if index % 2 else base
    assert base.child(name, *more).parts == general(base.parts, [name, *more])
    assert str(base.child(name)) == "".join(general(base.parts, [name]))
