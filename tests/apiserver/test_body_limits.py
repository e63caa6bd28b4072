"""Bodies and query parameters are decoded under limits that hold before anything expands
(issue 17): alias bombs, deep nesting, null list elements and int64 overflow are 4xx Status
answers in upstream's words, never a 500 and never a stall."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from taintplane.apiserver import bounded_yaml, codec, warning
from taintplane.apiserver.body_limits import MAX_DEPTH, DepthError, check_depth, parse_int64
from taintplane.apiserver.status import APIError
from taintplane.sim.cluster import Cluster
from tests.apiserver.test_protobuf import ld, unknown


@pytest.fixture(scope="module")
def api(cluster: Cluster) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.url, timeout=60) as client:
        client.post("/api/v1/nodes", json={"metadata": {"name": "limits"}})
        yield client


def laughs(levels: int, fanout: int = 9, leaf: str = "lol") -> str:
    """The "billion laughs": each level an anchored list of ``fanout`` aliases of the last
    (``fanout ** (levels + 1)`` leaves)."""
    lines = [f"l0: &l0 [{','.join([leaf] * fanout)}]"]
    lines += [f"l{i}: &l{i} [{','.join([f'*l{i - 1}'] * fanout)}]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def message(response: httpx.Response, code: int) -> str:
    assert response.status_code == code, response.text
    body: dict[str, Any] = response.json()
    assert body["kind"] == "Status"
    assert body["code"] == code
    return str(body["message"])


EXCESSIVE_ALIASING = "error converting YAML to JSON: yaml: document contains excessive aliasing"
TOO_DEEP_JSON = f"error decoding JSON body: exceeded max depth of {MAX_DEPTH}"
TOO_DEEP_YAML = f"error converting YAML to JSON: yaml: exceeded max depth of {MAX_DEPTH}"


def unrecognized(kind: str, detail: str, body: bytes) -> str:
    """transformDecodeError for a body with no readable kind: the summary is the body's
    first 30 bytes in hex (it does not start with "{")."""
    return f"the object provided is unrecognized (must be of type {kind}): {detail} ({body[:30].hex()} ...)"


# ---- YAML aliases ------------------------------------------------------------------------


def test_the_436_byte_alias_bomb_is_refused_before_it_expands(api: httpx.Client) -> None:
    bomb = (laughs(8) + "metadata: {name: bomb}\n").encode()
    assert len(bomb) == 437  # 9^9 leaves
    # On 35cd131 this was a 201 after 33 s of one core, /readyz blocked all along.
    response = api.post("/api/v1/nodes", content=bomb, headers={"Content-Type": "application/yaml"})
    assert message(response, 400) == unrecognized("Node", EXCESSIVE_ALIASING, bomb)
    assert api.get("/readyz").status_code == 200
    assert api.get("/api/v1/nodes/bomb").status_code == 404


def test_an_alias_bomb_in_an_apply_patch_is_refused(api: httpx.Client) -> None:
    response = api.patch(
        "/api/v1/nodes/limits?fieldManager=t",
        content=laughs(7).encode(),
        headers={"Content-Type": "application/apply-patch+yaml"},
    )
    assert message(response, 400) == EXCESSIVE_ALIASING


def test_alias_expansion_is_limited_as_go_yaml_limits_it() -> None:
    # As go-yaml: 10^3 leaves accepted, 10^4 refused (allowedAliasRatio's 99 %).
    assert len(bounded_yaml.load(laughs(2, fanout=10))["l2"]) == 10
    with pytest.raises(bounded_yaml.YAMLLimitError, match=r"^yaml: document contains excessive"):
        bounded_yaml.load(laughs(3, fanout=10))
    # Aliases that are a small share of the work are fine, however many.
    many = "a: &a {k: v}\nb: [" + ", ".join(["*a"] * 90) + "]\nc: [" + ", ".join("x" * 2000) + "]"
    assert len(bounded_yaml.load(many)["b"]) == 90


def test_the_allowed_ratio_scales_down_with_size() -> None:
    assert bounded_yaml.allowed_alias_ratio(1000) == 0.99
    assert bounded_yaml.allowed_alias_ratio(2_200_000) == pytest.approx(0.545)
    assert bounded_yaml.allowed_alias_ratio(5_000_000) == 0.10


def test_an_anchor_that_contains_itself_is_refused(api: httpx.Client) -> None:
    body = b"metadata: &m {name: self, labels: *m}\n"
    response = api.put(
        "/api/v1/nodes/limits", content=body, headers={"Content-Type": "application/yaml"}
    )
    detail = "error converting YAML to JSON: yaml: anchor 'm' value contains itself"
    assert message(response, 400) == unrecognized("Node", detail, body)


# ---- nesting depth -----------------------------------------------------------------------

DEEP_LABEL = b'{"metadata":{"name":"deep","labels":{"a":' + b"[" * 500 + b"]" * 500 + b"}}}"


@pytest.mark.parametrize(
    ("method", "path", "content_type"),
    [
        ("POST", "/api/v1/nodes", "application/json"),
        ("PATCH", "/api/v1/nodes/limits", "application/merge-patch+json"),
        ("PATCH", "/api/v1/nodes/limits", "application/strategic-merge-patch+json"),
        ("PATCH", "/api/v1/nodes/limits?fieldManager=t", "application/apply-patch+yaml"),
    ],
)
def test_json_nested_500_deep_is_a_400(
    api: httpx.Client, method: str, path: str, content_type: str
) -> None:
    # 35cd131: 500 "Recursion limit reached" (orjson encodes at most 255 levels).
    response = api.request(method, path, content=DEEP_LABEL, headers={"Content-Type": content_type})
    expected = TOO_DEEP_YAML if content_type.endswith("yaml") else TOO_DEEP_JSON
    assert message(response, 400) == expected


def test_a_json_patch_value_nested_too_deep_is_a_400(api: httpx.Client) -> None:
    value = b"[" * 300 + b"]" * 300
    patch = b'[{"op":"add","path":"/metadata/labels/a","value":' + value + b"}]"
    response = api.patch(
        "/api/v1/nodes/limits",
        content=patch,
        headers={"Content-Type": "application/json-patch+json"},
    )
    assert message(response, 400) == TOO_DEEP_JSON


@pytest.mark.parametrize(
    "body",
    [
        b"metadata: {name: y}\nspec: " + b"[" * 5000 + b"]" * 5000,
        b"[" * 5000,
        b"metadata: {name: y}\nspec:\n" + b"- " * 3000 + b"x\n",
        b"metadata: {name: y}\nspec: " + b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1),
    ],
    ids=["flow-5000", "unclosed-5000", "block-3000", "one-past-the-limit"],
)
def test_yaml_nested_too_deep_is_a_400(api: httpx.Client, body: bytes) -> None:
    response = api.post("/api/v1/nodes", content=body, headers={"Content-Type": "application/yaml"})
    assert message(response, 400) == unrecognized("Node", TOO_DEEP_YAML, body)


def test_aliases_count_towards_depth() -> None:
    chain = "l0: &l0 [x]\n" + "".join(f"l{i}: &l{i} [*l{i - 1}]\n" for i in range(1, MAX_DEPTH))
    with pytest.raises(bounded_yaml.YAMLLimitError, match="exceeded max depth"):
        bounded_yaml.load(chain)


def test_nesting_up_to_the_limit_is_decoded_and_judged_by_type(api: httpx.Client) -> None:
    # The object itself is level 1, metadata 2, labels 3: the label value may nest 97 more.
    inner = MAX_DEPTH - 3
    body = b'{"metadata":{"name":"deep","labels":{"a":' + b"[" * inner + b"]" * inner + b"}}}"
    response = api.post("/api/v1/nodes", content=body, headers={"Content-Type": "application/json"})
    assert message(response, 400) == (
        'Node in version "v1" cannot be handled as a Node: json: cannot unmarshal array into '
        "Go struct field ObjectMeta.metadata.labels of type string"
    )


def test_depth_is_checked_without_recursion() -> None:
    deep: Any = "x"
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(DepthError):
        check_depth(deep)
    check_depth([[{"a": [1]}]], limit=4)


# ---- null list elements ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "spec", "expected"),
    [
        (
            "/api/v1/namespaces/default/pods",
            {"containers": [None]},
            "spec.containers[0].name: Required value",
        ),
        (
            "/api/v1/namespaces/default/pods",
            {"containers": [{"name": "c", "image": "i"}], "initContainers": [None]},
            "spec.initContainers[0].name: Required value",
        ),
        (
            "/api/v1/namespaces/default/pods",
            {"containers": [{"name": "c", "image": "i"}], "tolerations": [None]},
            "spec.tolerations[0].operator: Invalid value",
        ),
        ("/api/v1/nodes", {"taints": [None]}, "metadata.taints[0].effect: Required value"),
    ],
)
def test_a_null_list_element_decodes_as_the_zero_value(
    api: httpx.Client, path: str, spec: dict[str, Any], expected: str
) -> None:
    # 35cd131: 500 AttributeError in the pod strategy's qos_class.
    response = api.post(path, json={"metadata": {"name": "nulls"}, "spec": spec})
    assert expected in message(response, 422)


# ---- sizes and query parameters ------------------------------------------------------------


def test_a_body_past_3_mib_is_a_413(api: httpx.Client) -> None:
    response = api.post(
        "/api/v1/nodes",
        content=b" " * (3 * 1024 * 1024 + 1),
        headers={"Content-Type": "application/json"},
    )
    assert message(response, 413) == "Request entity too large: limit is 3145728"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("limit=99999999999999999999", 'parsing "99999999999999999999": value out of range'),
        ("limit=abc", 'parsing "abc": invalid syntax'),
        ("limit=%205", 'parsing " 5": invalid syntax'),
        (
            "timeoutSeconds=99999999999999999999",
            'parsing "99999999999999999999": value out of range',
        ),
    ],
)
def test_integer_query_parameters_are_int64(api: httpx.Client, query: str, expected: str) -> None:
    # 35cd131: limit=99999999999999999999 was a 500 OverflowError from SQLite.
    response = api.get(f"/api/v1/nodes?{query}")
    assert message(response, 400) == f"strconv.ParseInt: {expected}"


def test_the_largest_int64_limit_lists_everything(api: httpx.Client) -> None:
    response = api.get("/api/v1/nodes?limit=9223372036854775807")
    assert response.status_code == 200
    assert "continue" not in response.json()["metadata"]


def test_grace_period_overflow_is_a_400(api: httpx.Client) -> None:
    response = api.delete("/api/v1/nodes/limits?gracePeriodSeconds=99999999999999999999")
    assert "value out of range" in message(response, 400)


def test_parse_int64_takes_what_strconv_takes() -> None:
    assert parse_int64("+5") == 5
    assert parse_int64("-9223372036854775808") == -(2**63)
    for text in ("5_0", "٣", "0x10", "1e3", ""):
        with pytest.raises(APIError):
            parse_int64(text)


def test_an_eviction_field_of_the_wrong_type_is_a_400(api: httpx.Client) -> None:
    # Found by the fuzz suite: a 500 TypeError ('float' object is not iterable).
    pod = {"metadata": {"name": "evictee"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    api.post("/api/v1/namespaces/default/pods", json=pod)
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "evictee"},
        "deleteOptions": {"preconditions": 1.5},
    }
    response = api.post("/api/v1/namespaces/default/pods/evictee/eviction", json=eviction)
    assert message(response, 400) == (
        'Eviction in version "v1" cannot be handled as a Eviction: json: cannot unmarshal '
        "number into Go struct field DeleteOptions.deleteOptions.preconditions of type "
        "v1.Preconditions"
    )


def test_warnings_are_truncated_as_the_warning_recorder_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # filters/warning_test.go TestTruncation's case, with its small limits.
    monkeypatch.setattr(warning, "TRUNCATE_AT_TOTAL_RUNES", 25)
    monkeypatch.setattr(warning, "TRUNCATE_ITEM_RUNES", 5)
    added = ["aaaaaaaaaa", "bb", "ccc", "Iñtërnâtiô", "e", "ffffffffff", "gggggggggg", "h"]
    assert warning.truncated(added) == ["aaaaa", "bb", "ccc", "Iñtër", "e", "fffff", "ggggg"]


def test_thousands_of_unknown_fields_get_at_most_4_ki_runes_of_warnings(
    api: httpx.Client,
) -> None:
    # Found by the schemathesis run: one header per unknown field, 100s of them.
    body = {"metadata": {"name": "chatty"}, **{f"field{i}": i for i in range(3000)}}
    response = api.post("/api/v1/nodes", json=body)
    assert response.status_code == 201
    warnings = response.headers.get_list("warning")
    assert 0 < len(warnings) < 200
    assert sum(len(w) for w in warnings) < 4096 + 20 * len(warnings)


def test_json_sent_as_yaml_is_read_as_json(api: httpx.Client) -> None:
    # kubectl apply --server-side sends JSON as apply-patch+yaml. go-yaml reads 1e3 as a
    # number, as JSON does (PyYAML's YAML 1.1 resolver made it the string "1e3").
    response = api.post(
        "/api/v1/nodes",
        content=b'{"metadata": {"name": "json-as-yaml", "labels": {"a": 1e3}}}',
        headers={"Content-Type": "application/yaml"},
    )
    assert message(response, 400).endswith(
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of "
        "type string"
    )


@pytest.mark.parametrize(
    ("token", "code", "expected"),
    [
        # Found by probing after the fuzz run: json.loads' stack, then the store's revision.
        (b"[" * 5000, 400, "invalid character '[' exceeded max depth"),
        (
            b'{"v":"meta.k8s.io/v1","rv":9223372036854775807,"start":"a"}',
            504,
            "Timeout: Too large resource version: 9223372036854775807",
        ),
    ],
    ids=["nested", "future-revision"],
)
def test_a_forged_continue_token_is_not_a_500(
    api: httpx.Client, token: bytes, code: int, expected: str
) -> None:
    text = base64.urlsafe_b64encode(token).decode().rstrip("=")
    response = api.get("/api/v1/nodes", params={"limit": "1", "continue": text})
    assert expected in message(response, code)


@pytest.mark.parametrize("depth", [500, 5000])
def test_a_protobuf_raw_object_nested_too_deep_is_a_400(depth: int) -> None:
    # managedFields' fieldsV1 travels as raw JSON bytes inside protobuf; json.loads of
    # 5000 brackets overflowed the stack (a 500).
    raw = b"[" * depth + b"]" * depth
    managed = ld(1, "kubectl") + ld(2, "Update") + ld(7, ld(1, raw))
    body = unknown("v1", "Namespace", ld(1, ld(17, managed)))
    with pytest.raises(APIError) as refused:
        codec.decode_body(body, "application/vnd.kubernetes.protobuf")
    assert refused.value.code == 400
    assert refused.value.status["message"].startswith("error decoding protobuf body: ")
