"""PATCH errors as handlers/patch.go answers them: a patched object that does not decode is a
422 naming the patch; a strategic merge patch never fails with anything but a 4xx."""

import contextlib
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taintplane.apiserver.patch import PatchError, apply_strategic_merge_patch

SMP = "application/strategic-merge-patch+json"
NODE: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "pn"}}


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        client.post("/api/v1/nodes", json=NODE).raise_for_status()
        yield client


def _patch(api: httpx.Client, body: bytes, content_type: str, query: str = "") -> httpx.Response:
    return api.patch(
        f"/api/v1/nodes/pn{query}", content=body, headers={"content-type": content_type}
    )


def test_strict_unknown_field_in_a_strategic_patch_is_a_422_naming_the_patch_map(api):
    response = _patch(api, b'{"spec":{"wat":1}}', SMP, "?fieldValidation=Strict")
    assert response.status_code == 422
    body = response.json()
    detail = (
        'Invalid value: "map[spec:map[wat:1]]": strict decoding error: unknown field "spec.wat"'
    )
    assert body["reason"] == "Invalid"
    assert body["message"] == f' "" is invalid: patch: {detail}'
    assert body["details"] == {
        "causes": [{"reason": "FieldValueInvalid", "message": detail, "field": "patch"}]
    }


@pytest.mark.parametrize("content_type", [SMP, "application/merge-patch+json"])
def test_a_type_error_in_a_patch_is_a_422(api, content_type):
    response = _patch(api, b'{"spec":{"unschedulable":"yes"}}', content_type)
    assert response.status_code == 422
    assert response.json()["message"].startswith(' "" is invalid: patch: Invalid value: ')
    assert response.json()["message"].endswith(
        "json: cannot unmarshal string into Go struct field NodeSpec.spec.unschedulable "
        "of type bool"
    )


def test_kubectl_shows_the_request_is_invalid(kubectl, api):
    done = kubectl.run("patch", "node", "pn", "-p", '{"spec":{"unschedulable":"yes"}}')
    assert done.returncode == 1
    assert done.stderr.startswith("The request is invalid: patch: Invalid value: ")


def test_set_element_order_on_taints_is_not_a_500(api):
    taints = {"spec": {"taints": [{"key": "k1", "effect": "NoSchedule"}]}}
    assert _patch(api, httpx.Request("X", "/", json=taints).content, SMP).status_code == 200
    body = b'{"spec":{"$setElementOrder/taints":[{"key":"k3"}],"taints":[]}}'
    response = _patch(api, body, SMP)
    assert response.status_code == 200, response.text
    assert response.json()["spec"].get("taints", []) == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"spec":{"$setElementOrder/taints":1}}', "invalid patch format of setElementOrder list"),
        (b'{"metadata":{"$retainKeys":"x"}}', "invalid patch format of retainKeys"),
        (
            b'{"metadata":{"$deleteFromPrimitiveList/finalizers":"x"}}',
            "invalid patch format of primitive list",
        ),
    ],
)
def test_malformed_directives_are_400(api, body, message):
    response = _patch(api, body, SMP)
    assert response.status_code == 400
    assert response.json()["message"] == message


def test_a_future_resource_version_is_a_timeout(api):
    response = api.get("/api/v1/nodes", params={"resourceVersion": "999999999"})
    assert response.status_code == 504
    body = response.json()
    assert body["reason"] == "Timeout"
    assert body["message"].startswith("Timeout: Too large resource version: 999999999, current: ")
    assert body["details"] == {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    }


_KEYS = st.sampled_from(
    [
        "spec",
        "taints",
        "containers",
        "name",
        "key",
        "finalizers",
        "$patch",
        "$retainKeys",
        "$setElementOrder/taints",
        "$setElementOrder/containers",
        "$deleteFromPrimitiveList/finalizers",
        "conditions",
        "type",
        "x",
    ]
)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.text(max_size=3)
    | st.sampled_from(["delete", "replace", "merge"])
)
_JSON = st.recursive(
    _SCALARS,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(_KEYS, c, max_size=4),
    max_leaves=12,
)
_DOCS = st.dictionaries(_KEYS, _JSON, max_size=4)


@settings(max_examples=400, deadline=None)
@given(_DOCS, _DOCS)
def test_no_strategic_merge_patch_fails_but_with_a_patch_error(original, patch):
    with contextlib.suppress(PatchError):
        apply_strategic_merge_patch(original, patch)
