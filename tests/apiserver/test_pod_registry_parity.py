"""What kube-apiserver does with pods that the conformance tests pin: metadata.generation
(set to 1, bumped by spec changes and by graceful deletion, never by the client), the
activeDeadlineSeconds rules, negative grace periods, what a status write may change, and
conditions written as the Go server writes them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from taintplane.sim.cluster import Cluster

PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture(scope="module")
def api(cluster: Cluster) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec},
    }


def merge(api: httpx.Client, path: str, body: dict[str, Any]) -> httpx.Response:
    return api.patch(path, json=body, headers={"Content-Type": "application/merge-patch+json"})


def causes(response: httpx.Response) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in response.json()["details"]["causes"]]


def test_generation_starts_at_one_and_counts_spec_changes(api: httpx.Client) -> None:
    created = api.post(PODS, json={**pod("gen"), "metadata": {"name": "gen", "generation": 100}})
    assert created.status_code == 201
    assert created.json()["metadata"]["generation"] == 1
    labelled = merge(api, f"{PODS}/gen", {"metadata": {"labels": {"a": "b"}}}).json()
    assert labelled["metadata"]["generation"] == 1
    tolerating = {"spec": {"tolerations": [{"key": "k", "operator": "Exists"}]}}
    changed = merge(api, f"{PODS}/gen", tolerating).json()
    assert changed["metadata"]["generation"] == 2
    forged = merge(api, f"{PODS}/gen", {"metadata": {"generation": 50}}).json()
    assert forged["metadata"]["generation"] == 2


def test_graceful_deletion_bumps_the_generation_once(api: httpx.Client) -> None:
    api.post(PODS, json=pod("going", nodeName="node-x"))
    first = api.request("DELETE", f"{PODS}/going", json={"gracePeriodSeconds": 30}).json()
    assert first["metadata"]["generation"] == 2
    shorter = api.request("DELETE", f"{PODS}/going", json={"gracePeriodSeconds": 10}).json()
    assert shorter["metadata"]["generation"] == 2
    assert shorter["metadata"]["deletionGracePeriodSeconds"] == 10


def test_a_negative_grace_period_is_one_second(api: httpx.Client) -> None:
    api.post(PODS, json=pod("negative", nodeName="node-x"))
    deleted = api.request("DELETE", f"{PODS}/negative", json={"gracePeriodSeconds": -5})
    assert deleted.status_code == 200
    assert deleted.json()["metadata"]["deletionGracePeriodSeconds"] == 1


def test_active_deadline_is_positive_and_may_only_shrink(api: httpx.Client) -> None:
    zero = api.post(PODS, json=pod("zero", activeDeadlineSeconds=0))
    assert zero.status_code == 422
    assert causes(zero) == [
        (
            "spec.activeDeadlineSeconds",
            "Invalid value: 0: must be between 1 and 2147483647, inclusive",
        )
    ]
    assert api.post(PODS, json=pod("deadline", activeDeadlineSeconds=40)).status_code == 201
    assert (
        merge(api, f"{PODS}/deadline", {"spec": {"activeDeadlineSeconds": 30}}).status_code == 200
    )
    longer = merge(api, f"{PODS}/deadline", {"spec": {"activeDeadlineSeconds": 50}})
    assert longer.status_code == 422
    assert causes(longer) == [
        (
            "spec.activeDeadlineSeconds",
            "Invalid value: 50: must be less than or equal to previous value",
        )
    ]
    removed = merge(api, f"{PODS}/deadline", {"spec": {"activeDeadlineSeconds": None}})
    assert removed.status_code == 422
    assert causes(removed) == [
        (
            "spec.activeDeadlineSeconds",
            'Invalid value: "null": must not update from a positive integer to nil value',
        )
    ]


def test_a_status_write_may_change_annotations_but_not_owners(api: httpx.Client) -> None:
    api.post(PODS, json=pod("status"))
    owner = {"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u-1"}
    body = {
        "metadata": {"annotations": {"patchedstatus": "true"}, "ownerReferences": [owner]},
        "status": {"reason": "E2E"},
    }
    patched = merge(api, f"{PODS}/status/status", body).json()
    assert patched["metadata"]["annotations"] == {"patchedstatus": "true"}
    assert "ownerReferences" not in patched["metadata"]
    assert patched["status"]["reason"] == "E2E"


def test_conditions_carry_null_times_as_the_go_server_writes_them(api: httpx.Client) -> None:
    api.post(PODS, json=pod("conditions"))
    body = {"status": {"conditions": [{"type": "example.com/Gate", "status": "True"}]}}
    patched = merge(api, f"{PODS}/conditions/status", body).json()
    assert patched["status"]["conditions"] == [
        {
            "type": "example.com/Gate",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": None,
        }
    ]
