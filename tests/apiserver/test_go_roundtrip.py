"""Objects read back as kube-apiserver's decode into the Go types and encode from them leaves
them: null fields and empty optional maps and lists are gone, empty structs stay, and every
resource.Quantity is in canonical form, in the response, on a GET, in watch events and in
managedFields; a write that only differs by such details is a no-op."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

PODS = "/api/v1/namespaces/default/pods"
MERGE = {"Content-Type": "application/merge-patch+json"}
APPLY = {"Content-Type": "application/apply-patch+yaml"}


@pytest.fixture(scope="module")
def api(cluster: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {}, "annotations": None},
        "spec": {
            "nodeSelector": {},
            "imagePullSecrets": [],
            "containers": [
                {
                    "name": "c",
                    "image": "nginx",
                    "args": None,
                    "env": [],
                    "securityContext": {},
                    "resources": {
                        "requests": {"cpu": 0.1, "memory": "1.5Gi"},
                        "limits": {"cpu": "1000m", "memory": "2097152Ki"},
                    },
                }
            ],
            "volumes": [{"name": "scratch", "emptyDir": {}}],
        },
    }


def _assert_normalized(pod: dict[str, Any]) -> None:
    assert "labels" not in pod["metadata"]
    assert "annotations" not in pod["metadata"]
    spec = pod["spec"]
    assert "nodeSelector" not in spec
    assert "imagePullSecrets" not in spec
    container = spec["containers"][0]
    assert "args" not in container
    assert "env" not in container
    assert container["securityContext"] == {}
    assert container["resources"] == {
        "requests": {"cpu": "100m", "memory": "1536Mi"},
        "limits": {"cpu": "1", "memory": "2Gi"},
    }
    assert spec["volumes"] == [{"name": "scratch", "emptyDir": {}}]


def test_a_created_pod_reads_back_as_go_encodes_it(api: httpx.Client) -> None:
    start = api.get(PODS).json()["metadata"]["resourceVersion"]
    created = api.post(PODS, json=_pod("roundtrip"))
    assert created.status_code == 201, created.text
    _assert_normalized(created.json())
    _assert_normalized(api.get(f"{PODS}/roundtrip").json())
    with api.stream("GET", PODS, params={"watch": "true", "resourceVersion": start}) as stream:
        event = json.loads(next(stream.iter_lines()))
    assert event["type"] == "ADDED"
    _assert_normalized(event["object"])
    # The fields kubectl's manager owns are the ones stored, not the empty ones it sent.
    (entry,) = created.json()["metadata"]["managedFields"]
    fields = entry["fieldsV1"]
    assert "f:metadata" not in fields
    assert "f:nodeSelector" not in fields["f:spec"]
    requests = fields["f:spec"]["f:containers"]['k:{"name":"c"}']["f:resources"]["f:requests"]
    assert requests == {".": {}, "f:cpu": {}, "f:memory": {}}


def test_a_write_that_only_differs_in_encoding_is_a_no_op(api: httpx.Client) -> None:
    created = api.post(PODS, json=_pod("noop")).json()
    again = created | {"metadata": created["metadata"] | {"labels": {}}}
    again["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "0.1", "memory": "1572864Ki"}
    updated = api.put(f"{PODS}/noop", json=again)
    assert updated.status_code == 200, updated.text
    assert updated.json()["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    patched = api.patch(
        f"{PODS}/noop",
        json={"metadata": {"annotations": {}}, "spec": {"nodeSelector": None}},
        headers=MERGE,
    )
    assert patched.json()["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_a_patch_is_normalized_where_it_changed_things(api: httpx.Client) -> None:
    api.post(PODS, json=_pod("patched"))
    patched = api.patch(
        f"{PODS}/patched",
        json={"metadata": {"labels": {"a": "b"}, "ownerReferences": []}},
        headers=MERGE,
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["metadata"]["labels"] == {"a": "b"}
    assert "ownerReferences" not in patched.json()["metadata"]


def test_server_side_apply_stores_canonical_quantities(api: httpx.Client) -> None:
    manifest = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "applied"},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "nginx",
                        "resources": {"requests": {"cpu": "0.5", "memory": "2048Mi"}},
                    }
                ]
            },
        }
    )
    applied = api.patch(
        f"{PODS}/applied", content=manifest, headers=APPLY, params={"fieldManager": "me"}
    )
    assert applied.status_code == 201, applied.text
    requests = applied.json()["spec"]["containers"][0]["resources"]["requests"]
    assert requests == {"cpu": "500m", "memory": "2Gi"}
    # Applying the same configuration again changes nothing.
    again = api.patch(
        f"{PODS}/applied", content=manifest, headers=APPLY, params={"fieldManager": "me"}
    )
    assert (
        again.json()["metadata"]["resourceVersion"]
        == (applied.json()["metadata"]["resourceVersion"])
    )


def test_kubectl_create_deployment_s_null_template_timestamp_is_not_stored(
    api: httpx.Client,
) -> None:
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "creationTimestamp": None},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {},
            "template": {
                "metadata": {"creationTimestamp": None, "labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]},
            },
        },
        "status": {},
    }
    created = api.post("/apis/apps/v1/namespaces/default/deployments", json=body)
    assert created.status_code == 201, created.text
    assert created.json()["spec"]["template"]["metadata"] == {"labels": {"app": "web"}}
    assert created.json()["spec"]["template"]["spec"]["containers"][0]["resources"] == {}
