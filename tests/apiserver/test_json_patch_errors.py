"""JSON and merge patches that fail, as kube-apiserver answers them (handlers/patch.go,
applyJSPatch): a patch of the wrong shape is a 400 ``error decoding patch: …``; a JSON patch
that does not apply is NewGenericServerResponse's bare 422, whose gopkg.in/evanphx/
json-patch.v4 reason (kept on the exception) is not sent."""

from typing import Any

import httpx
import pytest

from taintplane.apiserver.json_patch import (
    JSONPatchApplyError,
    JSONPatchTooLarge,
    PatchedNotAnObject,
    apply_json_patch,
)
from taintplane.apiserver.patch import PatchError, apply_strategic_merge_patch

JSON_PATCH = "application/json-patch+json"
MERGE = "application/merge-patch+json"
SMP = "application/strategic-merge-patch+json"
DOC: dict[str, Any] = {
    "metadata": {"name": "d", "labels": {"a": "1"}, "finalizers": ["x", "y"]},
    "spec": {"replicas": 2, "paused": None},
}
REJECTED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "the server rejected our request due to an error in our request",
    "reason": "Invalid",
    "details": {},
    "code": 422,
}


def bad_request(message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "BadRequest",
        "code": 400,
    }


def apply_error(ops: list[Any]) -> str:
    with pytest.raises(JSONPatchApplyError) as caught:
        apply_json_patch(DOC, ops)
    return caught.value.message


# ---- the library's reasons ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        (
            [{"op": "test", "path": "/spec/replicas", "value": 7}],
            "testing value /spec/replicas failed: test failed",
        ),
        (
            [{"op": "test", "path": "/spec/replicas", "value": 2.0}],
            "testing value /spec/replicas failed: test failed",
        ),
        (
            [{"op": "test", "path": "/spec/replicas"}],
            "testing value /spec/replicas failed: test failed",
        ),
        (
            [{"op": "test", "path": "/spec/nope/x", "value": 1}],
            "test operation does not apply: is missing path: /spec/nope/x: missing value",
        ),
        (
            [{"op": "replace", "path": "/spec/nope/x", "value": 1}],
            "replace operation does not apply: doc is missing path: /spec/nope/x: missing value",
        ),
        (
            [{"op": "replace", "path": "/metadata/finalizers/5", "value": "z"}],
            "replace operation does not apply: doc is missing key: /metadata/finalizers/5: "
            "missing value",
        ),
        (
            [{"op": "add", "path": "/spec/nope/x", "value": 1}],
            'add operation does not apply: doc is missing path: "/spec/nope/x": missing value',
        ),
        (
            [{"op": "add", "path": "/metadata/finalizers/5", "value": "z"}],
            "error in add for path: '/metadata/finalizers/5': Unable to access invalid index: 5: "
            "invalid index referenced",
        ),
        (
            [{"op": "add", "path": "/metadata/finalizers/x", "value": "z"}],
            "error in add for path: '/metadata/finalizers/x': value was not a proper array "
            "index: 'x': strconv.Atoi: parsing \"x\": invalid syntax",
        ),
        (
            [{"op": "remove", "path": "/metadata/labels/nope"}],
            "error in remove for path: '/metadata/labels/nope': Unable to remove nonexistent "
            "key: nope: missing value",
        ),
        (
            [{"op": "remove", "path": "/metadata/finalizers/2"}],
            "error in remove for path: '/metadata/finalizers/2': Unable to access invalid "
            "index: 2: invalid index referenced",
        ),
        (
            [{"op": "remove", "path": "/spec/nope/x"}],
            'remove operation does not apply: doc is missing path: "/spec/nope/x": missing value',
        ),
        (
            [{"op": "move", "from": "/metadata/labels/nope", "path": "/spec/x"}],
            "error in move for path: 'nope': Unable to remove nonexistent key: nope: missing value",
        ),
        (
            [{"op": "move", "from": "/spec/nope/x", "path": "/spec/x"}],
            "move operation does not apply: doc is missing from path: /spec/nope/x: missing value",
        ),
        (
            [{"op": "move", "from": "/spec/replicas", "path": "/spec/nope/x"}],
            "move operation does not apply: doc is missing destination path: /spec/nope/x: "
            "missing value",
        ),
        (
            [{"op": "copy", "from": "/metadata/finalizers/9", "path": "/spec/x"}],
            "error in copy for from: '/metadata/finalizers/9': Unable to access invalid index: "
            "9: invalid index referenced",
        ),
        (
            [{"op": "copy", "from": "/spec/nope/x", "path": "/spec/x"}],
            "copy operation does not apply: doc is missing from path: /spec/nope/x: missing value",
        ),
        ([{"op": "frobnicate", "path": "/spec"}], "Unexpected kind: frobnicate"),
        ([{"path": "/spec"}], "Unexpected kind: unknown"),
        ([{"op": "add", "value": 1}], "add operation failed to decode path: missing value"),
        ([{"op": "remove"}], "remove operation failed to decode path: missing value"),
        (
            [{"op": "replace", "value": 1}],
            "replace operation failed to decode path: operation missing path field: missing value",
        ),
        (
            [{"op": "move", "path": "/spec/x"}],
            "move operation failed to decode from: operation, missing from field: missing value",
        ),
        (
            [{"op": "copy", "from": "/spec/replicas"}],
            "copy operation failed to decode path: missing value",
        ),
        (
            [{"op": "replace", "path": "", "value": 1}],
            "replace operation value must be object or array: %!w(<nil>)",
        ),
        (
            [{"op": "add", "path": "", "value": {}}],
            'add operation does not apply: doc is missing path: "": missing value',
        ),
    ],
)
def test_the_library_reason_for_a_patch_that_does_not_apply(ops, message):
    assert apply_error(ops) == message


def test_json_patch_v4_quirks_apply():
    ops: list[Any] = [
        # replace of a missing key sets it, copy of a missing key copies null
        {"op": "replace", "path": "/spec/fresh", "value": 1},
        {"op": "copy", "from": "/spec/nothing", "path": "/spec/copied"},
        # test of a null or missing member passes with a null or no value
        {"op": "test", "path": "/spec/paused", "value": None},
        {"op": "test", "path": "/spec/nothing"},
        # negative indices count from the end; the first segment of a path is ignored
        {"op": "add", "path": "/metadata/finalizers/-1", "value": "w"},
        {"op": "remove", "path": "/metadata/finalizers/-3"},
        {"op": "add", "path": "x/top", "value": True},
        {"op": "test", "path": "/metadata/labels", "value": {"a": "1"}},
        {"op": "move", "from": "/metadata/labels/a", "path": "/metadata/labels/b~1c"},
    ]
    patched = apply_json_patch(DOC, ops)
    assert patched["spec"] == {"replicas": 2, "paused": None, "fresh": 1, "copied": None}
    assert patched["metadata"]["finalizers"] == ["y", "w"]
    assert patched["metadata"]["labels"] == {"b/c": "1"}
    assert patched["top"] is True
    assert DOC["metadata"]["finalizers"] == ["x", "y"]


def test_too_many_operations_and_a_patched_array():
    with pytest.raises(JSONPatchTooLarge) as caught:
        apply_json_patch(DOC, [{"op": "test", "path": "/spec"}] * 10001)
    assert caught.value.message == (
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, "
        "got 10001"
    )
    with pytest.raises(PatchedNotAnObject) as not_an_object:
        apply_json_patch(DOC, [{"op": "replace", "path": "", "value": [1]}])
    assert not_an_object.value.patched_json == "[1]"


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        (
            {"op": "add"},
            "json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp",
        ),
        ("notjson", "json: cannot unmarshal string into Go value of type []handlers.jsonPatchOp"),
        ([1], "json: cannot unmarshal number into Go value of type handlers.jsonPatchOp"),
        (
            [{"op": "add", "path": 5, "value": 1}],
            "json: cannot unmarshal number into Go struct field jsonPatchOp.path of type string",
        ),
        (
            [{"op": ["add"], "path": "/x"}],
            "json: cannot unmarshal array into Go struct field jsonPatchOp.op of type string",
        ),
    ],
)
def test_a_json_patch_of_the_wrong_shape_does_not_decode(ops, message):
    with pytest.raises(PatchError) as caught:
        apply_json_patch(DOC, ops)
    assert type(caught.value) is PatchError
    assert caught.value.message == f"error decoding patch: {message}"


def test_a_null_json_patch_changes_nothing():
    assert apply_json_patch(DOC, None) == DOC


def test_a_strategic_merge_patch_that_is_not_an_object():
    with pytest.raises(PatchError) as caught:
        apply_strategic_merge_patch(DOC, ["x"])
    assert caught.value.message == (
        "json: cannot unmarshal array into Go value of type map[string]interface {}"
    )
    assert apply_strategic_merge_patch(DOC, None) == DOC


# ---- over HTTP ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        client.post(
            "/api/v1/nodes", json={"metadata": {"name": "jp", "labels": {"a": "1"}}}
        ).raise_for_status()
        yield client


def _patch(api: httpx.Client, body: Any, content_type: str) -> httpx.Response:
    return api.patch(
        "/api/v1/nodes/jp",
        content=httpx.Request("X", "/", json=body).content,
        headers={"content-type": content_type},
    )


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "test", "path": "/metadata/name", "value": "other"}],
        [{"op": "replace", "path": "/spec/nope/x", "value": 1}],
        [{"op": "remove", "path": "/metadata/labels/nope"}],
        [{"op": "frobnicate", "path": "/spec"}],
        [{"op": "move", "path": "/spec/x"}],
    ],
)
def test_a_json_patch_that_does_not_apply_is_the_bare_422(api, ops):
    response = _patch(api, ops, JSON_PATCH)
    assert response.status_code == 422
    assert response.json() == REJECTED


@pytest.mark.parametrize(
    ("body", "content_type", "message"),
    [
        (
            {"op": "add"},
            JSON_PATCH,
            "error decoding patch: json: cannot unmarshal object into Go value of type "
            "[]handlers.jsonPatchOp",
        ),
        (
            "notjson",
            MERGE,
            "error decoding patch: json: cannot unmarshal string into Go value of type "
            "map[string]interface {}",
        ),
        (
            [{"a": 1}],
            MERGE,
            "error decoding patch: json: cannot unmarshal array into Go value of type "
            "map[string]interface {}",
        ),
        (None, MERGE, "Invalid JSON Patch"),
        (
            "notjson",
            SMP,
            "json: cannot unmarshal string into Go value of type map[string]interface {}",
        ),
    ],
)
def test_a_patch_of_the_wrong_shape_is_a_400(api, body, content_type, message):
    response = _patch(api, body, content_type)
    assert response.status_code == 400
    assert response.json() == bad_request(message)


def test_a_json_patch_that_applies_still_does(api):
    ops = [
        {"op": "test", "path": "/metadata/labels/a", "value": "1"},
        {"op": "replace", "path": "/metadata/labels/b", "value": "2"},
    ]
    response = _patch(api, ops, JSON_PATCH)
    assert response.status_code == 200, response.text
    assert response.json()["metadata"]["labels"] == {"a": "1", "b": "2"}


def test_kubectl_shows_the_bare_422(kubectl, api):
    ops = '[{"op":"test","path":"/metadata/name","value":"other"}]'
    done = kubectl.run("patch", "node", "jp", "--type=json", "-p", ops)
    assert done.returncode == 1
    assert done.stderr == (
        "The request is invalid: the server rejected our request due to an error in our request\n"
    )


def test_kubectl_merge_patch_that_is_not_an_object(kubectl, api):
    done = kubectl.run("patch", "node", "jp", "--type=merge", "-p", "notjson")
    assert done.returncode == 1
    assert done.stderr == (
        "Error from server (BadRequest): error decoding patch: json: cannot unmarshal string "
        "into Go value of type map[string]interface {}\n"
    )
