"""The type check passes over plain scalars of the wanted type without looking at their
schema (issue 16: most fields of most objects are such). The shortcut must find exactly
what the full walk finds — same object afterwards, same unknown fields and problems, same
error — on any body: checked here against the walk with the shortcut taken away."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taintplane.apiserver import typecheck

SCHEMA = "io.k8s.api.core.v1.Pod"
POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "p",
        "labels": {"app": "web"},
        "annotations": {"a": "b"},
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "generation": 1,
        "finalizers": ["x"],
    },
    "spec": {
        "containers": [
            {
                "name": "c",
                "image": "i",
                "args": ["--a", "--b"],
                "resources": {"requests": {"cpu": "100m"}, "limits": {"memory": 1024}},
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "tty": False,
            }
        ],
        "nodeSelector": {"zone": "a"},
        "terminationGracePeriodSeconds": 30,
        "tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 5}],
        "overhead": {"cpu": "1"},
    },
    "status": {
        "phase": "Running",
        "startTime": "2026-01-01T00:00:00+01:00",
        "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": None}],
    },
}
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-2, max_value=2),
    st.sampled_from([1.0, 2.5]),
    st.sampled_from(["", "x", "100m", "2026-01-01T00:00:00.5Z", "bad time", "1Gi"]),
    st.sampled_from([{}, [], {"bogus": 1}, ["s", None], {"k": None}, [1, "a"]]).map(copy.deepcopy),
)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += paths(item, (*prefix, i))
    return found


@contextmanager
def full_walk(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The type check without its shortcut for plain scalars."""
    original = typecheck._struct_info

    def without_shortcut(name: str) -> Any:
        info = original(name)
        return None if info is None else replace(info, scalars={})

    with monkeypatch.context() as patched:
        patched.setattr(typecheck, "_struct_info", without_shortcut)
        patched.setattr(typecheck, "_scalar_types", lambda schema: None)
        yield


def outcome(body: dict[str, Any], duplicates: frozenset[str]) -> Any:
    obj = copy.deepcopy(body)
    try:
        report = typecheck.check_object(obj, SCHEMA, drop_unknown=True, duplicates=duplicates)
    except typecheck.TypeCheckError as error:
        return ("error", error.message)
    return ("ok", obj, report.unknown, report.problems)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_the_shortcut_finds_what_the_full_walk_finds(data: st.DataObject) -> None:
    body = copy.deepcopy(POD)
    for _ in range(data.draw(st.integers(min_value=0, max_value=3))):
        where = data.draw(st.sampled_from(paths(body)[1:]))
        parent: Any = body
        for step in where[:-1]:
            parent = parent[step]
        parent[where[-1]] = data.draw(VALUES)
    duplicates = frozenset(
        data.draw(
            st.lists(
                st.sampled_from(["metadata.labels.app", "spec.containers[0].image", "x"]),
                max_size=2,
            )
        )
    )
    fast = outcome(body, duplicates)
    with pytest.MonkeyPatch.context() as monkeypatch, full_walk(monkeypatch):
        full = outcome(body, duplicates)
    assert fast == full
