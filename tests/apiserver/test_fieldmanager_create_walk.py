"""A create's field record is computed in one walk of the object (issue 16: the walk for
the owned leaves and the one for the created nodes were a sixth of a pod create). It must
be exactly what the two walks give, on any object: associative lists with missing or
repeated keys, sets, empty maps and lists, metadata with and without owned fields, and
kinds whose empty object has required spec fields (a pod's containers) or no spec."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from taintplane.apiserver import fieldmanager
from taintplane.apiserver.fieldmanager import FieldPath

NAMES = st.sampled_from(
    ["a", "b", "containers", "conditions", "finalizers", "name", "type", "ports", "labels"]
)
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from(["", "x", "c", "é\n"])
)
ELEMENTS = st.one_of(
    st.fixed_dictionaries({"name": st.sampled_from(["c", "d"])}, optional={"a": SCALARS}),
    st.fixed_dictionaries({"type": st.sampled_from(["Ready", "X"])}, optional={"b": SCALARS}),
    st.fixed_dictionaries({"containerPort": st.integers(79, 81)}),
    SCALARS,
)
VALUES: st.SearchStrategy[Any] = st.recursive(
    st.one_of(SCALARS, st.lists(ELEMENTS, max_size=3)),
    lambda inner: st.one_of(
        st.dictionaries(NAMES, inner, max_size=3), st.lists(inner | ELEMENTS, max_size=3)
    ),
    max_leaves=10,
)
METADATA = st.fixed_dictionaries(
    {},
    optional={
        "name": st.sampled_from(["n", ""]) | VALUES,
        "namespace": st.just("default"),
        "uid": st.just("u"),
        "resourceVersion": st.just("5"),
        "labels": st.dictionaries(st.sampled_from(["app", "x"]), st.just("v"), max_size=2),
        "finalizers": st.lists(st.sampled_from(["f", "g"]), max_size=2),
        "ownerReferences": st.lists(ELEMENTS, max_size=2),
        "managedFields": st.just([]),
    },
)
OBJECTS = st.fixed_dictionaries(
    {
        "apiVersion": st.sampled_from(["v1", "apps/v1", "nope/v9"]),
        "kind": st.sampled_from(["Pod", "Event", "Deployment", "Node", "Nope"]),
    },
    optional={
        "metadata": METADATA | VALUES,
        "spec": st.dictionaries(NAMES, VALUES, max_size=3) | VALUES,
        "status": st.dictionaries(NAMES, VALUES, max_size=3),
        "reason": SCALARS,
        "involvedObject": st.dictionaries(NAMES, SCALARS, max_size=2),
    },
)


def two_walks(new: dict[str, Any], skip_status: bool) -> set[FieldPath]:
    """The record before the change: the owned leaves, then the created nodes."""
    changed = set(fieldmanager.fields_of(dict(new), skip_status=skip_status))
    empty = fieldmanager._empty_object(new)
    return changed | fieldmanager._created_nodes(dict(new), empty, skip_status)


@settings(max_examples=500, deadline=None)
@given(OBJECTS, st.booleans())
def test_one_walk_records_what_two_walks_record(new: dict[str, Any], skip: bool) -> None:
    assert fieldmanager._compare(new, None, skip) == (two_walks(new, skip), set())


def test_a_pod_create() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "i"}], "nodeName": "n"},
        "status": {"phase": "Pending"},
    }
    changed, removed = fieldmanager._compare(pod, None, True)
    assert removed == set()
    assert changed == two_walks(pod, True)
    assert ("f:spec", "f:containers", 'k:{"name":"c"}', ".") in changed
    assert ("f:spec", "f:containers", ".") not in changed  # required: the empty pod has it
    assert ("f:metadata", "f:labels", ".") in changed
