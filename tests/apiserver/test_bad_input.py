"""Bad input gets a Kubernetes Status (4xx) and changes nothing; a fuzz test finds no 5xx."""

from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "ok"},
    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
}


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def status_of(response):
    body = response.json()
    assert body["kind"] == "Status", body
    assert body["code"] == response.status_code
    return body


@pytest.mark.parametrize(
    ("content_type", "body", "code", "message"),
    [
        pytest.param(
            "application/json",
            b"{bad",
            400,
            "error decoding JSON body: unexpected character, expected a string key: line 1 column 2 (char 1)",
            id="malformed-json",
        ),
        pytest.param("application/yaml", b"a: [b", 400, None, id="malformed-yaml"),
        pytest.param(
            "text/plain",
            b"{}",
            415,
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (text/plain)",
            id="wrong-content-type",
        ),
        pytest.param(
            "application/json",
            b"[1]",
            400,
            "the request body must be a JSON or YAML object",
            id="not-an-object",
        ),
        pytest.param(
            "application/json",
            b'{"metadata":"x"}',
            400,
            'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field Pod.metadata of type v1.ObjectMeta',
            id="metadata-string",
        ),
        pytest.param(
            "application/json",
            b'{"metadata":{"name":"p","labels":"x"}}',
            400,
            'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field ObjectMeta.metadata.labels of type map[string]string',
            id="labels-string",
        ),
        pytest.param(
            "application/json",
            b'{"metadata":{"name":"p"},"spec":{"containers":"x"}}',
            400,
            'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type []v1.Container',
            id="containers-string",
        ),
        pytest.param(
            "application/json",
            b'{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"x"}],"tolerations":[{"key":"k","operator":"Exists","effect":"NoExecute","tolerationSeconds":"30"}]}}',
            400,
            'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field Toleration.spec.tolerations.tolerationSeconds of type int64',
            id="toleration-seconds-string",
        ),
        pytest.param(
            "application/json",
            b'{"kind":"Node","metadata":{"name":"p"}}',
            400,
            "the kind in the data (Node) does not match the expected kind (Pod)",
            id="wrong-kind",
        ),
        pytest.param(
            "application/json",
            b'{"apiVersion":"v2","metadata":{"name":"p"}}',
            400,
            "the API version in the data (v2) does not match the expected API version (v1)",
            id="wrong-version",
        ),
    ],
)
def test_malformed_bodies_are_refused_with_a_status(api, content_type, body, code, message):
    response = api.post(
        "/api/v1/namespaces/default/pods", content=body, headers={"Content-Type": content_type}
    )
    assert response.status_code == code
    status = status_of(response)
    if message is not None:
        assert status["message"] == message
    assert api.get("/api/v1/namespaces/default/pods").json()["items"] == []


def test_oversized_bodies_are_refused(api):
    huge = b'{"metadata":{"name":"p","annotations":{"a":"' + b"x" * (3 * 1024 * 1024) + b'"}}}'
    response = api.post(
        "/api/v1/namespaces/default/pods",
        content=huge,
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 413
    assert status_of(response)["reason"] == "RequestEntityTooLarge"


def test_unknown_fields_are_refused_under_strict_validation(api):
    pod = {**POD, "spec": {**POD["spec"], "bogus": 1}}
    response = api.post("/api/v1/namespaces/default/pods?fieldValidation=Strict", json=pod)
    assert response.status_code == 400
    assert status_of(response)["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.bogus"'
    )


def test_invalid_objects_get_422_with_causes(api):
    pod = {**POD, "metadata": {"name": "Bad_Name"}}
    response = api.post("/api/v1/namespaces/default/pods", json=pod)
    assert response.status_code == 422
    status = status_of(response)
    assert status["reason"] == "Invalid"
    assert status["details"]["kind"] == "Pod"
    assert status["details"]["causes"][0]["field"] == "metadata.name"
    assert status["details"]["causes"][0]["reason"] == "FieldValueInvalid"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/api/v1/foos", "the server could not find the requested resource"),
        ("/apis/nope/v1/foos", "the server could not find the requested resource"),
        ("/apis/node.k8s.io/v9/runtimeclasses", "the server could not find the requested resource"),
        (
            "/api/v1/namespaces/default/pods/x/nosuch",
            "the server could not find the requested resource",
        ),
    ],
)
def test_unknown_kinds_and_versions_are_404(api, path, message):
    response = api.get(path)
    assert response.status_code == 404
    assert status_of(response)["message"] == message


def test_creating_in_a_missing_namespace_is_404(api):
    response = api.post("/api/v1/namespaces/nowhere/pods", json=POD)
    assert response.status_code == 404
    assert status_of(response)["message"] == 'namespaces "nowhere" not found'


def test_bad_selectors_are_400(api):
    response = api.get("/api/v1/pods", params={"fieldSelector": "spec.bogus=1"})
    assert response.status_code == 400
    assert status_of(response)["message"] == "field label not supported: spec.bogus"
    response = api.get("/api/v1/pods", params={"labelSelector": "a in (b"})
    assert response.status_code == 400


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
field_names = st.sampled_from(
    [
        "name",
        "labels",
        "spec",
        "taints",
        "tolerations",
        "containers",
        "key",
        "operator",
        "effect",
        "value",
        "tolerationSeconds",
        "nodeName",
        "handler",
        "scheduling",
        "status",
        "finalizers",
        "metadata",
        "generateName",
    ]
)
structured = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.sampled_from(["", "a", "Exists", "NoExecute", "x y", "-"]),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(field_names, children, max_size=5)
    ),
    max_leaves=25,
)
bodies = st.one_of(
    json_values,
    st.dictionaries(field_names | st.sampled_from(["apiVersion", "kind"]), structured, max_size=6),
)
targets = st.sampled_from(
    [
        ("POST", "/api/v1/namespaces/default/pods"),
        ("POST", "/api/v1/nodes"),
        ("POST", "/api/v1/namespaces"),
        ("POST", "/apis/node.k8s.io/v1/runtimeclasses"),
        ("POST", "/apis/resource.k8s.io/v1alpha3/devicetaintrules"),
        ("POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets"),
        ("PUT", "/api/v1/nodes/fuzz"),
        ("PATCH", "/api/v1/nodes/fuzz"),
        ("PATCH", "/api/v1/nodes/fuzz/status"),
        ("PATCH", "/api/v1/namespaces/default/pods/fuzz"),
    ]
)
patch_types = st.sampled_from(
    [
        "application/strategic-merge-patch+json",
        "application/merge-patch+json",
        "application/json-patch+json",
        "application/apply-patch+yaml",
    ]
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(targets, bodies, patch_types)
def test_fuzzed_requests_never_get_a_5xx(api, target, body, patch_type):
    method, path = target
    api.post("/api/v1/nodes", json={"metadata": {"name": "fuzz"}})
    api.post("/api/v1/namespaces/default/pods", json={**POD, "metadata": {"name": "fuzz"}})
    content_type = patch_type if method == "PATCH" else "application/json"
    response = api.request(
        method, path + "?fieldManager=fuzz", json=body, headers={"Content-Type": content_type}
    )
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert response.json()["kind"] == "Status"


def test_an_apply_with_a_malformed_merge_list_is_a_400(api):
    api.post("/api/v1/nodes", json={"metadata": {"name": "apply-bad"}})
    # Found by the fuzz test: an element that is not an object in a list merged by key.
    response = api.patch(
        "/api/v1/nodes/apply-bad?fieldManager=fuzz",
        json={"containers": [None]},
        headers={"Content-Type": "application/apply-patch+yaml"},
    )
    assert response.status_code == 400
    assert (
        status_of(response)["message"]
        == "a list of containers merges by name: every element must be an object"
    )


def test_yaml_numbers_beyond_64_bits_are_a_400(api):
    # Found by the fuzz test: YAML integers are unbounded, JSON ones are not.
    api.post("/api/v1/nodes", json={"metadata": {"name": "big-number"}})
    response = api.patch(
        "/api/v1/nodes/big-number?fieldManager=fuzz",
        content=b"x: -1180591620717411303423",
        headers={"Content-Type": "application/apply-patch+yaml"},
    )
    assert response.status_code == 400
    assert (
        status_of(response)["message"]
        == "error converting YAML to JSON: Integer exceeds 64-bit range"
    )
