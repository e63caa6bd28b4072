"""What the fuzz suite's store check lets through, and only that: a Binding's own writes,
which upstream stores unvalidated too (harness.written_by_a_binding)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from taintplane.api.field import FieldError, Path
from taintplane.sim.cluster import Cluster
from tests.fuzz import harness

PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture(scope="module")
def api(cluster: Cluster) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def test_what_a_binding_wrote_is_stored_and_let_through(
    api: httpx.Client, cluster: Cluster
) -> None:
    """The fuzz run's find: a random Binding (a review) named the node "NoSchedule"."""
    created = api.post(
        PODS,
        json={"metadata": {"name": "b"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
    )
    assert created.status_code == 201, created.text
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "b", "labels": {"x y": "a b"}, "annotations": {"Bad Key": "v"}},
        "target": {"kind": "", "name": "NoSchedule"},
    }
    bound = api.post("/api/v1/namespaces/default/bindings", json=binding)
    assert bound.status_code == 201, bound.text
    pod = api.get(f"{PODS}/b").json()
    assert cluster.apiserver is not None
    registry = cluster.apiserver.registry
    fields = sorted({e.field for e in registry.strategy(harness.POD).validate(pod)})
    assert fields == ["metadata.annotations", "metadata.labels", "spec.nodeName"]
    assert harness.stored_problems(api, registry) == []


def _pod(managed: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "p",
            "labels": {"x y": "v"},
            "managedFields": [{"manager": "m", "fieldsV1": managed}],
        },
        "spec": {"nodeName": "NoSchedule"},
    }


def test_what_a_manager_wrote_is_a_problem() -> None:
    node_name = FieldError.invalid(Path.root("spec", "nodeName"), "NoSchedule", "not a name")
    label = FieldError.invalid(Path.root("metadata", "labels"), "x y", "not a key")
    managed = {"f:spec": {"f:nodeName": {}}, "f:metadata": {"f:labels": {"f:x y": {}}}}
    for error in (node_name, label):
        assert harness.written_by_a_binding(harness.POD, _pod({}), error)
        assert not harness.written_by_a_binding(harness.POD, _pod(managed), error)
    required = FieldError.required(Path.root("spec", "containers"))
    assert not harness.written_by_a_binding(harness.POD, _pod({}), required)
