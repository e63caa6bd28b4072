"""Quantities Go cannot parse fail decoding, as Quantity.UnmarshalJSON does: a 400 for a
create, a 422 naming the patch for a patch (the node status a simulated kubelet or a user
writes, a pod's resources), and nothing is stored."""

from typing import Any

import httpx
import pytest

FORMAT = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def _pod(name: str, cpu: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]
        },
    }


@pytest.mark.parametrize(
    ("cpu", "message"),
    [
        ("lots", FORMAT),
        ("", FORMAT),
        ("1.2.3", FORMAT),
        ("1KK", "unable to parse quantity's suffix"),
    ],
)
def test_a_pod_with_an_unparsable_quantity_cannot_be_decoded(api, cpu, message):
    response = api.post("/api/v1/namespaces/default/pods", json=_pod("q-bad", cpu))
    assert response.status_code == 400
    assert response.json()["message"] == (
        f'Pod in version "v1" cannot be handled as a Pod: {message}'
    )
    assert api.get("/api/v1/namespaces/default/pods/q-bad").status_code == 404


def test_surrounding_spaces_are_trimmed_as_go_does(api):
    response = api.post("/api/v1/namespaces/default/pods", json=_pod("q-space", " 250m "))
    assert response.status_code == 201, response.text
    requests = response.json()["spec"]["containers"][0]["resources"]["requests"]
    assert requests == {"cpu": "250m"}


def test_a_status_patch_with_an_unparsable_capacity_is_refused(api):
    api.post("/api/v1/nodes", json={"metadata": {"name": "q-node"}})
    response = api.patch(
        "/api/v1/nodes/q-node/status",
        json={"status": {"capacity": {"memory": "huge"}}},
        headers={"content-type": "application/merge-patch+json"},
    )
    assert response.status_code == 422
    assert response.json()["message"].endswith(FORMAT)
    stored = api.get("/api/v1/nodes/q-node").json()
    assert "capacity" not in stored["status"]
