"""What a PodDisruptionBudget expects, as upstream's getExpectedPodCount counts it (pure
functions over informer-like lookups)."""

from __future__ import annotations

from typing import Any

import pytest

from taintplane.controllers.disruption_scale import (
    Expected,
    SyncError,
    expected_pods,
    selector_string,
)


def ref(kind: str, name: str, uid: str, api_version: str = "apps/v1") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}


def obj(name: str, uid: str, replicas: int | None = None, owner: Any = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": uid}
    if owner is not None:
        metadata["ownerReferences"] = [owner]
    spec = {} if replicas is None else {"replicas": replicas}
    return {"metadata": metadata, "spec": spec}


def pod(name: str, owner: Any = None) -> dict[str, Any]:
    return obj(name, f"uid-{name}", owner=owner)


STORE = {
    ("deployments", "web"): obj("web", "d-1", 5),
    ("replicasets", "web-abc"): obj("web-abc", "rs-1", 2, ref("Deployment", "web", "d-1")),
    ("replicasets", "solo"): obj("solo", "rs-2", 4),
    ("replicasets", "defaulted"): obj("defaulted", "rs-3"),
}


def lookup(plural: str, namespace: str, name: str) -> dict[str, Any] | None:
    assert namespace == "ns"
    return STORE.get((plural, name))


def budget(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "b", "namespace": "ns"}, "spec": spec}


def test_a_deployments_replicas_count_for_its_replicasets_pods() -> None:
    pods = [pod(f"p{i}", ref("ReplicaSet", "web-abc", "rs-1")) for i in range(2)]
    assert expected_pods(budget(maxUnavailable=1), pods, lookup) == Expected(5, 4)
    # Percentages round up what may be unavailable and what must stay.
    assert expected_pods(budget(maxUnavailable="50%"), pods, lookup) == Expected(5, 2)
    assert expected_pods(budget(minAvailable="50%"), pods, lookup) == Expected(5, 3)


def test_a_replicaset_of_its_own_counts_its_replicas_and_each_controller_once() -> None:
    pods = [
        pod("a", ref("ReplicaSet", "solo", "rs-2")),
        pod("b", ref("ReplicaSet", "solo", "rs-2")),
        pod("c", ref("ReplicaSet", "defaulted", "rs-3")),
    ]
    assert expected_pods(budget(maxUnavailable=0), pods, lookup) == Expected(5, 5)


def test_unmanaged_pods_are_left_out_and_named() -> None:
    pods = [pod("bare"), pod("a", ref("ReplicaSet", "solo", "rs-2"))]
    assert expected_pods(budget(maxUnavailable=1), pods, lookup) == Expected(4, 3, ["bare"])
    assert expected_pods(budget(maxUnavailable=1), [pod("x")], lookup) == Expected(0, 0, ["x"])


def test_a_numeric_minimum_expects_the_matching_pods_and_no_rule_expects_nothing() -> None:
    pods = [pod("bare"), pod("a", ref("DaemonSet", "agent", "ds-1"))]
    assert expected_pods(budget(minAvailable=1), pods, lookup) == Expected(2, 1)
    assert expected_pods(budget(), pods, lookup) == Expected(0, 0)


@pytest.mark.parametrize(
    ("owner", "message"),
    [
        (
            ref("DaemonSet", "agent", "ds-1"),
            "daemonsets.apps does not implement the scale subresource",
        ),
        (
            ref("StatefulSet", "db", "ss-1"),
            'no matches for kind "StatefulSet" in version "apps/v1"',
        ),
        (ref("ReplicaSet", "gone", "rs-9"), 'found no controllers for pod "p"'),
        (ref("ReplicaSet", "solo", "other-uid"), 'found no controllers for pod "p"'),
    ],
)
def test_controllers_without_a_scale_fail_the_sync(owner: Any, message: str) -> None:
    with pytest.raises(SyncError) as failed:
        expected_pods(budget(maxUnavailable=1), [pod("p", owner)], lookup)
    assert str(failed.value) == message


def test_selectors_print_as_go_prints_them() -> None:
    assert selector_string(None) == "nil"
    assert selector_string({"matchLabels": {"b": "2", "a": "1"}}) == (
        "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},"
        "MatchExpressions:[]LabelSelectorRequirement{},}"
    )
    expressions = {"matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]}]}
    assert selector_string(expressions) == (
        "&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:"
        "[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,Values:[x y],},},}"
    )
