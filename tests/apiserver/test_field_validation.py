"""fieldValidation as kube-apiserver answers it (test/integration/apiserver/
field_validation_test.go): unknown fields of a kind with a schema are dropped, as decoding into
the Go types drops them, with a ``Warning`` header each under Warn (the default), silently
under Ignore, and refused under Strict; their paths carry list indexes."""

from typing import Any

import httpx
import pytest

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p"},
    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
}


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def _pod(name: str) -> dict[str, Any]:
    return {
        **POD,
        "metadata": {"name": name, "bogus": "x"},
        "spec": {"bar": 1, "containers": [{"name": "c", "image": "nginx", "foo": 2}]},
    }


UNKNOWN = [
    'unknown field "metadata.bogus"',
    'unknown field "spec.bar"',
    'unknown field "spec.containers[0].foo"',
]


def _warnings(response: httpx.Response) -> list[str]:
    return response.headers.get_list("warning")


@pytest.mark.parametrize("query", ["", "?fieldValidation=Warn"])
def test_warn_drops_unknown_fields_and_warns_once_each(api, query):
    name = f"warn{len(query)}"
    response = api.post(f"/api/v1/namespaces/default/pods{query}", json=_pod(name))
    assert response.status_code == 201
    assert _warnings(response) == [
        '299 - "unknown field \\"metadata.bogus\\""',
        '299 - "unknown field \\"spec.bar\\""',
        '299 - "unknown field \\"spec.containers[0].foo\\""',
    ]
    stored = api.get(f"/api/v1/namespaces/default/pods/{name}").json()
    assert "bogus" not in stored["metadata"]
    assert "bar" not in stored["spec"]
    assert "foo" not in stored["spec"]["containers"][0]
    assert "bar" not in str(stored["metadata"]["managedFields"])


def test_ignore_drops_unknown_fields_without_a_warning(api):
    response = api.post("/api/v1/namespaces/default/pods?fieldValidation=Ignore", json=_pod("ign"))
    assert response.status_code == 201
    assert _warnings(response) == []
    assert "bar" not in response.json()["spec"]


def test_strict_refuses_with_every_path_indexed(api):
    response = api.post("/api/v1/namespaces/default/pods?fieldValidation=Strict", json=_pod("s"))
    assert response.status_code == 400
    assert response.json()["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        + ", ".join(UNKNOWN)
    )


def test_update_and_patch_drop_and_warn(api):
    api.post("/api/v1/namespaces/default/pods", json={**POD, "metadata": {"name": "upd"}})
    current = api.get("/api/v1/namespaces/default/pods/upd").json()
    current["spec"]["wat"] = True
    response = api.put("/api/v1/namespaces/default/pods/upd", json=current)
    assert response.status_code == 200
    assert _warnings(response) == ['299 - "unknown field \\"spec.wat\\""']
    assert "wat" not in response.json()["spec"]
    for content_type in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
        response = api.patch(
            "/api/v1/namespaces/default/pods/upd",
            content=b'{"spec":{"zap":1}}',
            headers={"content-type": content_type},
        )
        assert response.status_code == 200
        assert _warnings(response) == ['299 - "unknown field \\"spec.zap\\""']
        assert "zap" not in response.json()["spec"]


def test_kubectl_prints_the_warnings(kubectl):
    manifest = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: kc}\n"
        "spec:\n  bogus: 1\n  containers: [{name: c, image: x, nope: 2}]\n"
    )
    done = kubectl.run("create", "--validate=warn", "-f", "-", stdin=manifest)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        'Warning: unknown field "spec.bogus"',
        'Warning: unknown field "spec.containers[0].nope"',
    ]
    assert "bogus" not in kubectl("get", "pod", "kc", "-o", "json")
