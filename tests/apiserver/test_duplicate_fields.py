"""Duplicate fields in request bodies, as kube-apiserver reports them
(test/integration/apiserver/field_validation_test.go, whose bodies and expected texts these
are): ``duplicate field "spec.paused"`` among the unknown fields in document order for a JSON
create or update, go-yaml's ``line N: key "k" already set in map`` for YAML, the patch's own
duplicates before the patched object's unknown fields (in key order) for patches, and the
operations' own fields for a JSON patch. Warnings under Warn (the default), an error under
Strict, nothing under Ignore."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from taintplane.apiserver.strict_decoding import (
    json_duplicates,
    json_patch_problems,
    yaml_duplicates,
)

INVALID_JSON = """
{
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {
        "name": "dupename",
        "name": "NAME",
        "labels": {"app": "nginx"},
        "unknownMeta": "metaVal"
    },
    "spec": {
        "unknown1": "val1",
        "unknownDupe": "valDupe",
        "unknownDupe": "valDupe2",
        "paused": true,
        "paused": false,
        "selector": {"matchLabels": {"app": "nginx"}},
        "template": {
            "metadata": {"labels": {"app": "nginx"}},
            "spec": {
                "containers": [{
                    "name":  "nginx",
                    "image": "nginx:latest",
                    "unknownNested": "val1",
                    "imagePullPolicy": "Always",
                    "imagePullPolicy": "Never"
                }]
            }
        }
    }
}
"""

INVALID_YAML = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: dupename
  name: NAME
  unknownMeta: metaVal
  labels:
    app: nginx
spec:
  unknown1: val1
  unknownDupe: valDupe
  unknownDupe: valDupe2
  paused: true
  paused: false
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:latest
        unknownNested: val1
        imagePullPolicy: Always
        imagePullPolicy: Never"""

VALID: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "NAME", "labels": {"app": "nginx"}},
    "spec": {
        "selector": {"matchLabels": {"app": "nginx"}},
        "template": {
            "metadata": {"labels": {"app": "nginx"}},
            "spec": {
                "containers": [
                    {"name": "nginx", "image": "nginx:latest", "imagePullPolicy": "Always"}
                ]
            },
        },
    },
}

TYPED_JSON = [
    'duplicate field "metadata.name"',
    'unknown field "metadata.unknownMeta"',
    'unknown field "spec.unknown1"',
    'unknown field "spec.unknownDupe"',
    'duplicate field "spec.paused"',
    'unknown field "spec.template.spec.containers[0].unknownNested"',
    'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
]
YAML_LINES = [
    'line 5: key "name" already set in map',
    'line 12: key "unknownDupe" already set in map',
    'line 14: key "paused" already set in map',
    'line 28: key "imagePullPolicy" already set in map',
]
YAML_UNKNOWN = [
    'unknown field "metadata.unknownMeta"',
    'unknown field "spec.template.spec.containers[0].unknownNested"',
    'unknown field "spec.unknown1"',
    'unknown field "spec.unknownDupe"',
]

MERGE_PATCH = """
{
    "spec": {
        "unknown1": "val1",
        "unknownDupe": "valDupe",
        "unknownDupe": "valDupe2",
        "paused": true,
        "paused": false,
        "template": {
            "spec": {
                "containers": [{
                    "name": "nginx",
                    "image": "nginx:latest",
                    "unknownNested": "val1",
                    "imagePullPolicy": "Always",
                    "imagePullPolicy": "Never"
                }]
            }
        }
    }
}
"""
PATCH_FINDINGS = [
    'duplicate field "spec.unknownDupe"',
    'duplicate field "spec.paused"',
    'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
    'unknown field "spec.template.spec.containers[0].unknownNested"',
    'unknown field "spec.unknown1"',
    'unknown field "spec.unknownDupe"',
]
JSON_PATCH = """[
    {"op": "add", "path": "/spec/unknown1", "value": "val1", "foo":"bar"},
    {"op": "add", "path": "/spec/unknown2", "path": "/spec/unknown3", "value": "val1"},
    {"op": "add", "path": "/spec/unknownDupe", "value": "valDupe"},
    {"op": "add", "path": "/spec/unknownDupe", "value": "valDupe2"},
    {"op": "add", "path": "/spec/paused", "value": true},
    {"op": "add", "path": "/spec/paused", "value": false},
    {"op": "add", "path": "/spec/template/spec/containers/0/unknownNested", "value": "val1"},
    {"op": "add", "path": "/spec/template/spec/containers/0/imagePullPolicy", "value": "Always"},
    {"op": "add", "path": "/spec/template/spec/containers/0/imagePullPolicy", "value": "Never"}
]"""
JSON_PATCH_FINDINGS = [
    'json patch unknown field "[0].foo"',
    'json patch duplicate field "[1].path"',
    'unknown field "spec.template.spec.containers[0].unknownNested"',
    'unknown field "spec.unknown1"',
    'unknown field "spec.unknown3"',
    'unknown field "spec.unknownDupe"',
]
APPLY_INVALID = """{
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {
        "name": "NAME",
        "labels": {"app": "nginx"}
    },
    "spec": {
        "paused": false,
        "paused": true,
        "selector": {
            "matchLabels": {
                "app": "nginx"
            }
        },
        "template": {
            "metadata": {
                "labels": {
                    "app": "nginx"
                }
            },
            "spec": {
                "containers": [{
                    "name":  "nginx",
                    "image": "nginx:latest",
                    "imagePullPolicy": "Never",
                    "imagePullPolicy": "Always"
                }]
            }
        }
    }
}"""
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
CANNOT = 'Deployment in version "v1" cannot be handled as a Deployment: '


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def _warnings(response: httpx.Response) -> list[str]:
    texts = []
    for header in response.headers.get_list("warning"):
        assert header.startswith('299 - "'), header
        assert header.endswith('"'), header
        texts.append(header[len('299 - "') : -1].replace('\\"', '"'))
    return texts


def _query(validation: str) -> str:
    return f"?fieldValidation={validation}" if validation else ""


def _create_valid(api: httpx.Client, name: str) -> None:
    body = {**VALID, "metadata": {**VALID["metadata"], "name": name}}
    assert api.post(DEPLOYMENTS, json=body).status_code == 201


# ---- create and update --------------------------------------------------------------------


@pytest.mark.parametrize("validation", ["", "Warn"])
def test_json_create_warns_of_duplicates_among_unknown_fields_in_document_order(api, validation):
    name = f"post-json-{validation.lower() or 'default'}"
    response = api.post(
        DEPLOYMENTS + _query(validation),
        content=INVALID_JSON.replace("NAME", name),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 201, response.text
    assert _warnings(response) == TYPED_JSON
    stored = api.get(f"{DEPLOYMENTS}/{name}").json()
    assert stored["spec"]["paused"] is False  # the last of the duplicates, as Go decodes
    assert stored["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Never"


def test_json_create_strict_refuses_with_every_finding(api):
    response = api.post(
        DEPLOYMENTS + "?fieldValidation=Strict",
        content=INVALID_JSON.replace("NAME", "post-json-strict"),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 400
    assert response.json()["message"] == CANNOT + "strict decoding error: " + ", ".join(TYPED_JSON)
    assert api.get(f"{DEPLOYMENTS}/post-json-strict").status_code == 404


def test_ignore_says_nothing(api):
    response = api.post(
        DEPLOYMENTS + "?fieldValidation=Ignore",
        content=INVALID_JSON.replace("NAME", "post-json-ignore"),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 201
    assert _warnings(response) == []


def test_json_update_reports_as_create_does(api):
    _create_valid(api, "put-json")
    response = api.put(
        f"{DEPLOYMENTS}/put-json",
        content=INVALID_JSON.replace("NAME", "put-json"),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 200, response.text
    assert _warnings(response) == TYPED_JSON
    strict = api.put(
        f"{DEPLOYMENTS}/put-json?fieldValidation=Strict",
        content=INVALID_JSON.replace("NAME", "put-json"),
        headers={"content-type": "application/json"},
    )
    assert strict.status_code == 400
    assert strict.json()["message"].endswith("strict decoding error: " + ", ".join(TYPED_JSON))


def test_yaml_create_reports_go_yaml_lines_then_unknown_fields_in_key_order(api):
    response = api.post(
        DEPLOYMENTS,
        content=INVALID_YAML.replace("NAME", "post-yaml"),
        headers={"content-type": "application/yaml"},
    )
    assert response.status_code == 201, response.text
    assert _warnings(response) == YAML_LINES + YAML_UNKNOWN
    strict = api.post(
        DEPLOYMENTS + "?fieldValidation=Strict",
        content=INVALID_YAML.replace("NAME", "post-yaml-strict"),
        headers={"content-type": "application/yaml"},
    )
    assert strict.status_code == 400
    assert strict.json()["message"] == (
        CANNOT
        + "strict decoding error: yaml: unmarshal errors:\n  "
        + "\n  ".join(YAML_LINES)
        + ", "
        + ", ".join(YAML_UNKNOWN)
    )


# ---- patches ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "body", "findings"),
    [
        ("application/merge-patch+json", MERGE_PATCH, PATCH_FINDINGS),
        ("application/strategic-merge-patch+json", MERGE_PATCH, PATCH_FINDINGS),
        ("application/json-patch+json", JSON_PATCH, JSON_PATCH_FINDINGS),
    ],
    ids=["merge", "strategic", "json"],
)
def test_patches_report_their_own_problems_first(api, content_type, body, findings):
    name = "patch-" + content_type.split("/")[1].split("-patch")[0]
    _create_valid(api, name)
    response = api.patch(
        f"{DEPLOYMENTS}/{name}", content=body, headers={"content-type": content_type}
    )
    assert response.status_code == 200, response.text
    assert _warnings(response) == findings
    strict = api.patch(
        f"{DEPLOYMENTS}/{name}?fieldValidation=Strict",
        content=body,
        headers={"content-type": content_type},
    )
    assert strict.status_code == 422
    assert strict.json()["message"].endswith("strict decoding error: " + ", ".join(findings))
    ignored = api.patch(
        f"{DEPLOYMENTS}/{name}?fieldValidation=Ignore",
        content=body,
        headers={"content-type": content_type},
    )
    assert ignored.status_code == 200
    assert _warnings(ignored) == []


def test_apply_reports_go_yaml_lines_of_its_configuration(api):
    apply = "?fieldManager=mgr"
    response = api.patch(
        f"{DEPLOYMENTS}/apply-dup{apply}",
        content=APPLY_INVALID.replace("NAME", "apply-dup"),
        headers={"content-type": "application/apply-patch+yaml"},
    )
    assert response.status_code == 201, response.text
    lines = [
        'line 10: key "paused" already set in map',
        'line 27: key "imagePullPolicy" already set in map',
    ]
    assert _warnings(response) == lines
    strict = api.patch(
        f"{DEPLOYMENTS}/apply-dup-strict{apply}&fieldValidation=Strict",
        content=APPLY_INVALID.replace("NAME", "apply-dup-strict"),
        headers={"content-type": "application/apply-patch+yaml"},
    )
    assert strict.status_code == 400
    assert strict.json()["message"] == (
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  "
        + "\n  ".join(lines)
    )
    assert api.get(f"{DEPLOYMENTS}/apply-dup-strict").status_code == 404


# ---- the readers --------------------------------------------------------------------------


def test_json_duplicates_in_nested_lists_and_at_the_top():
    assert json_duplicates('{"a":[[{"b":1,"b":2}]]}') == ["a[0][0].b"]
    assert json_duplicates('[{"x":1,"x":2}]') == ["[0].x"]
    assert json_duplicates('{"a":{"b":1,"b":{"c":1,"c":2}}}') == ["a.b", "a.b.c"]
    assert json_duplicates('{"a":1}') == []


def test_json_patch_problems_skip_duplicates_of_unknown_fields_and_inside_values():
    assert json_patch_problems('[{"op":"add","x":1,"x":2,"value":{"v":1,"v":2}}]') == [
        'json patch unknown field "[0].x"'
    ]


def test_yaml_duplicates_are_ordered_by_line():
    assert yaml_duplicates("a:\n  b: 1\n  b: 2\nc: 1\nc: 2\n") == [
        'line 3: key "b" already set in map',
        'line 5: key "c" already set in map',
    ]


@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c", 'q"uote']), st.integers() | st.none()),
        max_size=8,
    ),
    st.sampled_from(["x", "y.z"]),
)
def test_json_duplicates_name_every_repeat_of_a_key_in_order(pairs, outer):
    inner = "{" + ",".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in pairs) + "}"
    raw = "{" + json.dumps(outer) + ":" + inner + "}"
    seen: set[str] = set()
    expected = []
    for key, _ in pairs:
        if key in seen:
            expected.append(f"{outer}.{key}")
        seen.add(key)
    assert json_duplicates(raw) == expected
