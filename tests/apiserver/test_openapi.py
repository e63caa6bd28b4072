"""OpenAPI v3: every served group-version has a document with a PATCH operation per kind."""

import httpx
import pytest

from taintplane.api.scheme import SCHEME


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def test_every_group_version_is_in_the_index_and_served(api):
    index = api.get("/openapi/v3").json()["paths"]
    expected = {f"api/{v}" if not g else f"apis/{g}/{v}" for g, v in SCHEME.group_versions()}
    assert set(index) == expected
    for key, entry in index.items():
        document = api.get(entry["serverRelativeURL"])
        assert document.status_code == 200, key
        operations = [
            op
            for path in document.json()["paths"].values()
            for op in path.values()
            if isinstance(op, dict)
        ]
        patched = {
            op["x-kubernetes-group-version-kind"]["kind"]
            for op in operations
            if op.get("x-kubernetes-action") == "patch"
        }
        group, version = (
            ("", key.split("/")[1]) if key.startswith("api/") else tuple(key.split("/")[1:])
        )
        assert patched == {
            rt.kind for rt in SCHEME.resources(group, version) if "patch" in rt.verbs
        }
        patch_ops = [op for op in operations if op.get("x-kubernetes-action") == "patch"]
        assert all(
            any(p["name"] == "fieldValidation" for p in op["parameters"]) for op in patch_ops
        )


def test_unknown_documents_are_404(api):
    assert api.get("/openapi/v3/apis/nope/v1").status_code == 404
    assert api.get("/openapi/v2").status_code == 404


def test_kind_schemas_carry_their_group_version_kind(api):
    document = api.get("/openapi/v3/api/v1").json()
    node = document["components"]["schemas"]["io.k8s.api.core.v1.Node"]
    assert node["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "Node", "version": "v1"}
    ]
    containers = document["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"]["properties"][
        "containers"
    ]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    taints = document["components"]["schemas"]["io.k8s.api.core.v1.NodeSpec"]["properties"][
        "taints"
    ]
    assert "x-kubernetes-patch-merge-key" not in taints
