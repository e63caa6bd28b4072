"""The type check names fields through lazily built paths (issue 16: a path object per
field was a measurable share of every write). Their renderings must be exactly those of the
eager paths they replace: Go's struct-field path and the strict decoder's path."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taintplane.apiserver import typecheck

STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("key"), st.text(max_size=4)),
        st.tuples(st.just("index"), st.integers(min_value=0, max_value=20)),
        st.tuples(st.just("map_key"), st.text(max_size=4)),
    ),
    max_size=8,
)


def eager(steps: list[tuple[str, object]]) -> tuple[str, str]:
    """The rules of the eager path the type check used before (key, index, map_key)."""
    go = strict = ""
    for step, name in steps:
        if step == "key":
            go, strict = (
                f"{go}.{name}" if go else str(name),
                f"{strict}.{name}" if strict else str(name),
            )
        elif step == "index":
            strict = f"{strict}[{name}]"
        else:
            strict = f"{strict}.{name}" if strict else str(name)
    return go, strict


@given(STEPS)
def test_lazy_path_renders_as_the_eager_one(steps: list[tuple[str, object]]) -> None:
    codes = {"key": typecheck._KEY, "index": typecheck._INDEX, "map_key": typecheck._MAP_KEY}
    path: typecheck._Path = None
    for step, name in steps:
        path = (path, codes[step], name)
    assert typecheck._render(path) == eager(steps)


def test_findings_name_nested_paths() -> None:
    pod = {
        "spec": {
            "containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": "1"}}}],
            "nodeSelector": {"a": "b"},
            "bogus": 1,
        },
        "metadata": {"labels": {"x": "y"}},
    }
    report = typecheck.check_object(
        pod,
        "io.k8s.api.core.v1.Pod",
        duplicates=frozenset({"spec.nodeSelector.a", "spec.containers[0].name"}),
    )
    assert report.unknown == ["spec.bogus"]
    assert report.problems == [
        'duplicate field "spec.containers[0].name"',
        'duplicate field "spec.nodeSelector.a"',
        'unknown field "spec.bogus"',
    ]
    bad = {"spec": {"containers": [{"name": "c", "ports": [{"name": 5}]}]}}
    with pytest.raises(typecheck.TypeCheckError) as raised:
        typecheck.check_object(bad, "io.k8s.api.core.v1.Pod")
    assert raised.value.message == (
        "json: cannot unmarshal number into Go struct field "
        "ContainerPort.spec.containers.ports.name of type string"
    )
