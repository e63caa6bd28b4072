"""The garbage collector's graph keeps, per owner, the count of dependents that block its
deletion and of those not being deleted yet (issue 16: a foreground deletion costs O(1) per
dependent gone). Whatever objects come, change their owner references and
blockOwnerDeletion, start being deleted and go, the kept counts are exactly what a walk over
the owner's dependents finds; every garbage collector scenario of the other test modules also
runs with the counts checked against a walk each time the collector reads them."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taintplane.controllers.gcgraph import Graph
from tests.controllers import test_garbage_collector, test_garbage_collector_graph

UIDS = [f"uid-{i}" for i in range(6)]

reference = st.tuples(st.sampled_from(UIDS), st.booleans())
observe = st.tuples(
    st.just("observe"),
    st.sampled_from(UIDS),
    st.lists(reference, max_size=3),
    st.booleans(),
)
NO_REFS: list[tuple[str, bool]] = []
forget = st.tuples(st.just("forget"), st.sampled_from(UIDS), st.just(NO_REFS), st.just(False))
virtual = st.tuples(st.just("virtual"), st.sampled_from(UIDS), st.just(NO_REFS), st.just(False))
operations = st.lists(st.one_of(observe, forget, virtual), max_size=40)


def _object(uid: str, refs: list[tuple[str, bool]], deleting: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "uid": uid,
        "name": uid,
        "namespace": "default",
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": owner,
                "uid": owner,
                "blockOwnerDeletion": block,
            }
            for owner, block in refs
        ],
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        meta["finalizers"] = ["foregroundDeletion"]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def _check(graph: Graph) -> None:
    for node in graph.nodes.values():
        walked = node.blocking_dependents()
        assert graph.blocking(node) == len(walked), node.identity
        live = {d for d in walked if not d.being_deleted}
        assert graph._blocking_live.get(node.identity.uid, 0) == len(live), node.identity
        assert set(graph.blocking_live(node)) == live, node.identity


@settings(max_examples=300, deadline=None)
@given(operations)
def test_blocking_count_and_live_set_match_a_walk_of_the_dependents(
    ops: list[tuple[str, str, list[tuple[str, bool]], bool]],
) -> None:
    graph = Graph(lambda node: None, lambda node: None)
    seen: dict[str, dict[str, Any]] = {}
    for op, uid, refs, deleting in ops:
        if op == "observe":
            obj = _object(uid, refs, deleting)
            graph.observe("v1", "ConfigMap", seen.get(uid), obj)
            seen[uid] = obj
        elif op == "forget" and uid in seen:
            graph.forget(seen.pop(uid))
        elif op == "virtual" and uid in graph.nodes and uid not in seen:
            graph.virtual_delete(graph.nodes[uid])
        _check(graph)


def test_a_dependent_being_deleted_still_blocks_but_leaves_the_live_set() -> None:
    graph = Graph(lambda node: None, lambda node: None)
    owner = _object("owner", [], False)
    graph.observe("v1", "ConfigMap", None, owner)
    pods = [_object(f"pod-{i}", [("owner", True)], False) for i in range(3)]
    for pod in pods:
        graph.observe("v1", "ConfigMap", None, pod)
    node = graph.nodes["owner"]
    assert graph.blocking(node) == 3
    assert len(graph.blocking_live(node)) == 3
    deleting = _object("pod-0", [("owner", True)], True)
    graph.observe("v1", "ConfigMap", pods[0], deleting)
    assert graph.blocking(node) == 3
    assert len(graph.blocking_live(node)) == 2
    graph.forget(deleting)
    assert graph.blocking(node) == 2
    unblocked = _object("pod-1", [("owner", False)], False)
    graph.observe("v1", "ConfigMap", pods[1], unblocked)
    assert graph.blocking(node) == 1
    assert {d.identity.uid for d in graph.blocking_live(node)} == {"pod-2"}
    for pod in (unblocked, pods[2]):
        graph.observe(
            "v1",
            "ConfigMap",
            pod,
            {**pod, "metadata": {**pod["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}},
        )
    assert graph.blocking(node) == 1
    assert graph.blocking_live(node) == []


SCENARIOS: list[Callable[..., None]] = [
    getattr(module, name)
    for module in (test_garbage_collector, test_garbage_collector_graph)
    for name in dir(module)
    if name.startswith("test_")
]


@pytest.fixture
def cross_check() -> Iterator[list[str]]:
    Graph.verify = True
    Graph.mismatches.clear()
    try:
        yield Graph.mismatches
    finally:
        Graph.verify = False


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_counts_equal_a_walk_in_every_scenario(
    scenario: Callable[..., None], request: pytest.FixtureRequest, cross_check: list[str]
) -> None:
    arguments = inspect.signature(scenario).parameters
    scenario(**{name: request.getfixturevalue(name) for name in arguments})
    assert cross_check == []
