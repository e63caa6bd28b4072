"""apps/v1 ControllerRevision: served, printed and validated as kube-apiserver does."""

from __future__ import annotations

from typing import Any

import httpx

from taintplane.sim.cluster import Cluster
from tests.conftest import Kubectl

BASE = "/apis/apps/v1/namespaces/default/controllerrevisions"


def revision(name: str, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": name},
        "data": {"spec": {"template": {"$patch": "replace"}}},
        "revision": 1,
    }
    body.update(fields)
    return body


def test_controllerrevisions_are_listed_in_discovery_as_upstream(cluster: Cluster) -> None:
    with httpx.Client(base_url=cluster.url) as api:
        resources = api.get("/apis/apps/v1").json()["resources"]
    found = [r for r in resources if r["name"].startswith("controllerrevisions")]
    assert found == [
        {
            "name": "controllerrevisions",
            "singularName": "controllerrevision",
            "namespaced": True,
            "kind": "ControllerRevision",
            "verbs": [
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ],
        }
    ]


def test_data_round_trips_as_sent_and_revision_may_change(cluster: Cluster) -> None:
    data = {"z": 1, "a": {"nested": [1, "two", None]}, "m": "x"}
    with httpx.Client(base_url=cluster.url) as api:
        created = api.post(BASE, json=revision("kept", data=data, revision=3))
        assert created.status_code == 201, created.text
        stored = api.get(f"{BASE}/kept").json()
        assert stored["data"] == data
        assert list(stored["data"]) == ["z", "a", "m"]  # the bytes kubectl compares
        assert stored["revision"] == 3
        bumped = api.patch(
            f"{BASE}/kept",
            json={"revision": 7},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert bumped.status_code == 200, bumped.text
        assert bumped.json()["revision"] == 7


def refused(cluster: Cluster, obj: dict[str, Any]) -> str:
    with httpx.Client(base_url=cluster.url) as api:
        response = api.post(BASE, json=obj)
    assert response.status_code == 422, response.text
    return str(response.json()["message"])


def test_data_is_required(cluster: Cluster) -> None:
    obj = revision("nodata")
    del obj["data"]
    assert refused(cluster, obj) == (
        'ControllerRevision.apps "nodata" is invalid: data: Required value: data is mandatory'
    )
    assert refused(cluster, revision("nulldata", data=None)) == (
        'ControllerRevision.apps "nulldata" is invalid: data: Required value: data is mandatory'
    )


def test_revision_must_not_be_negative(cluster: Cluster) -> None:
    assert refused(cluster, revision("negative", revision=-1)) == (
        'ControllerRevision.apps "negative" is invalid: revision: Invalid value: -1: must be '
        "greater than or equal to 0"
    )


def test_data_is_immutable(cluster: Cluster) -> None:
    with httpx.Client(base_url=cluster.url) as api:
        created = api.post(BASE, json=revision("frozen"))
        assert created.status_code == 201, created.text
        changed = created.json()
        changed["data"] = {"b": "2", "a": "1"}
        response = api.put(f"{BASE}/frozen", json=changed)
    assert response.status_code == 422, response.text
    status = response.json()
    # The rejected data prints as the raw JSON sent: keys in their order, not sorted.
    assert status["message"] == (
        'ControllerRevision.apps "frozen" is invalid: data: Invalid value: {"b":"2","a":"1"}: '
        "field is immutable"
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: {"b":"2","a":"1"}: field is immutable',
            "field": "data",
        }
    ]


def test_kubectl_prints_name_controller_revision_and_age(
    cluster: Cluster, kubectl: Kubectl
) -> None:
    owner = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "name": "agent",
        "uid": "0b5c6a0e-0000-4000-8000-000000000001",
        "controller": True,
    }
    with httpx.Client(base_url=cluster.url) as api:
        for body in (
            revision("agent-7d9f", metadata={"name": "agent-7d9f", "ownerReferences": [owner]}),
            revision("loose", revision=2),
        ):
            assert api.post(BASE, json=body).status_code == 201
    lines = kubectl("get", "controllerrevisions", "agent-7d9f", "loose").splitlines()
    assert [line.split() for line in lines] == [
        ["NAME", "CONTROLLER", "REVISION", "AGE"],
        ["agent-7d9f", "daemonset.apps/agent", "1", lines[1].split()[-1]],
        ["loose", "<none>", "2", lines[2].split()[-1]],
    ]
