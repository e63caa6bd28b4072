"""A budget's pods kept by pod events (issue 16) give the status a sync over every pod of the
namespace gives: the same matching pods, healthy count, expected and desired counts, unmanaged
warning and sync failure, whatever pods come, change labels, owners, readiness and deletion,
and go. Every budget scenario of the other test modules also runs with a cross-check that
rebuilds the kept pods from the namespace at every sync and records any difference."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taintplane.api.selectors import label_selector_from_dict
from taintplane.client import object_key
from taintplane.controllers.disruption_pods import BudgetPods
from taintplane.controllers.disruption_scale import SyncError, expected_pods
from taintplane.controllers.workloads import is_pod_ready
from tests.controllers import test_disruption, test_disruption_status

NAMES = [f"p{i}" for i in range(8)]
OWNERS = [None, "rs-a", "rs-b", "rs-gone"]
REPLICAS = {"rs-a": 3, "rs-b": 5}

pod_state = st.tuples(
    st.sampled_from(NAMES),
    st.sampled_from(["web", "db"]),  # app label
    st.sampled_from(OWNERS),
    st.booleans(),  # ready
    st.booleans(),  # being deleted
)
event = st.one_of(
    st.tuples(st.just("put"), pod_state), st.tuples(st.just("delete"), st.sampled_from(NAMES))
)
budget_spec = st.sampled_from(
    [{"minAvailable": 2}, {"maxUnavailable": 1}, {"minAvailable": "50%"}, {}]
)


def _pod(name: str, app: str, owner: str | None, ready: bool, deleting: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "labels": {"app": app}}
    if owner is not None:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": owner}
            | {"controller": True}
        ]
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "status": status}


def _lookup(plural: str, namespace: str, name: str) -> dict[str, Any] | None:
    if plural != "replicasets" or name not in REPLICAS:
        return None
    return {"metadata": {"name": name, "uid": name}, "spec": {"replicas": REPLICAS[name]}}


def _outcome(pdb: dict[str, Any], pods: list[dict[str, Any]], count: int | None) -> Any:
    try:
        found = expected_pods(pdb, pods, _lookup, count=count)
    except SyncError:
        return "SyncError"
    return found.count, found.desired, bool(found.unmanaged)


@settings(max_examples=300, deadline=None)
@given(budget_spec, st.lists(event, max_size=30), st.lists(st.sampled_from(NAMES), max_size=3))
def test_kept_pods_count_as_a_walk_of_the_namespace(
    spec: dict[str, Any], events: list[tuple[str, Any]], disrupted_names: list[str]
) -> None:
    pdb = {
        "metadata": {"name": "b", "namespace": "ns", "uid": "u"},
        "spec": {**spec, "selector": {"matchLabels": {"app": "web"}}},
    }
    cache: dict[str, dict[str, Any]] = {}
    kept = BudgetPods.build(pdb, [])
    assert kept is not None
    selector = label_selector_from_dict(pdb["spec"]["selector"])
    for kind, value in events:
        if kind == "put":
            pod = _pod(*value)
            cache[object_key(pod)] = pod
            kept.observe(object_key(pod), pod)
        else:
            gone = cache.pop(f"ns/{value}", None)
            if gone is not None:
                kept.observe(object_key(gone), None)
        # The walk the sync did before: every pod of the namespace, matched by the selector.
        walked = [p for p in cache.values() if selector.matches(p["metadata"]["labels"])]
        assert set(kept.pods) == {object_key(p) for p in walked}
        assert _outcome(pdb, kept.representatives(), len(kept.pods)) == _outcome(pdb, walked, None)
        disrupted = dict.fromkeys(disrupted_names, "2026-01-01T00:00:00Z")
        live = {n: t for n, t in disrupted.items() if f"ns/{n}" in kept.pods}
        live = {
            n: t
            for n, t in live.items()
            if not kept.pods[f"ns/{n}"]["metadata"].get("deletionTimestamp")
        }
        healthy = sum(
            1
            for p in walked
            if not p["metadata"].get("deletionTimestamp")
            and p["metadata"]["name"] not in live
            and is_pod_ready(p)
        )
        assert kept.healthy(live, "ns") == healthy
    # Built at once from the namespace's pods, the same.
    rebuilt = BudgetPods.build(pdb, list(cache.values()))
    assert rebuilt is not None
    assert set(rebuilt.pods) == set(kept.pods)
    assert rebuilt.healthy_base == kept.healthy_base


SCENARIOS: list[Callable[..., None]] = [
    getattr(module, name)
    for module in (test_disruption, test_disruption_status)
    for name in dir(module)
    if name.startswith("test_")
]


@pytest.fixture
def cross_check() -> Iterator[list[str]]:
    BudgetPods.verify = True
    BudgetPods.mismatches.clear()
    try:
        yield BudgetPods.mismatches
    finally:
        BudgetPods.verify = False


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_kept_pods_equal_the_namespaces_in_every_scenario(
    scenario: Callable[..., None], request: pytest.FixtureRequest, cross_check: list[str]
) -> None:
    arguments = inspect.signature(scenario).parameters
    scenario(**{name: request.getfixturevalue(name) for name in arguments})
    assert cross_check == []
