"""Hostile requests for the API server, and the checks every answer and the store must pass.

Shared by the CI fuzz test (tests/fuzz/test_api_fuzz.py, a bounded number of examples) and the
longer run (benchmarks/fuzz_api.py). Requests are drawn by hypothesis:

* objects of every served kind generated from the kind's own OpenAPI schema (the schemas the
  server type-checks against), with nulls, wrong types and odd strings mixed in, sent as
  creates, updates and patches of every type (JSON, YAML, apply);
* bodies built to hurt: nesting around and far past the depth limit, YAML alias bombs and
  self-referencing anchors, tags PyYAML knows and Go does not, bad UTF-8, protobuf junk,
  ``[null]`` in every list of every kind;
* query parameters with numbers Go's int64 does not hold, junk selectors and tokens.

What must hold: no answer >= 500 (except upstream's 504 for a resourceVersion the store has
not reached), every 4xx a Status with its code, and every stored object still decoding
against its schema and passing the server's own validation.
"""

from __future__ import annotations

import base64
import functools
import json
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
import yaml
from hypothesis import strategies as st

from taintplane.api.field import ErrorType, FieldError
from taintplane.api.scheme import SCHEME, ResourceType
from taintplane.apiserver import typecheck
from taintplane.apiserver.body_limits import MAX_DEPTH
from taintplane.apiserver.registry import Registry
from tests.apiserver.test_protobuf import ld, unknown

NAMES = ("fuzz", "fuzz-2")
NAMESPACE = "default"
PATCH_TYPES = (
    "application/strategic-merge-patch+json",
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/apply-patch+yaml",
)
#: Kinds whose every field the generator knows (the reviews are answered, never stored).
RESOURCES = tuple(
    r
    for r in SCHEME
    if "update" in r.verbs and typecheck.schemas()["kinds"].get(f"{r.group}/{r.version}/{r.kind}")
)
REVIEWS = tuple(r for r in SCHEME if r.verbs == ("create",))


def collection(resource: ResourceType, namespace: str = NAMESPACE) -> str:
    root = f"/apis/{resource.group}/{resource.version}" if resource.group else "/api/v1"
    scope = f"/namespaces/{namespace}" if resource.namespaced else ""
    return f"{root}{scope}/{resource.plural}"


def schema_name(resource: ResourceType) -> str:
    return str(typecheck.schemas()["kinds"][f"{resource.group}/{resource.version}/{resource.kind}"])


# ---- values from the schemas -----------------------------------------------------------

ODD_STRINGS = st.sampled_from(
    [
        "",
        "a",
        "Exists",
        "Equal",
        "NoExecute",
        "NoSchedule",
        "1",
        "100m",
        "1Gi",
        "-1",
        "x y",
        "a/b",
        "example.com/k",
        "2024-01-01T00:00:00Z",
        "not a time",
        "\x00",
        "é",
        "💥",
        "a" * 300,
        "{}",
        "[",
        "null",
    ]
)
ODD_INTS = st.sampled_from([0, 1, -1, 2**31, 2**53 + 1, 2**63 - 1, -(2**63), 2**63, 10**20])
JSON_LEAVES = st.none() | st.booleans() | ODD_INTS | st.floats(allow_nan=False) | ODD_STRINGS


def nested(depth: int, leaf: Any = "x") -> Any:
    """A value ``depth`` levels of arrays and objects deep, built without recursion."""
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"a": value}
    return value


chaos = st.one_of(
    st.none(),
    JSON_LEAVES,
    st.lists(JSON_LEAVES, max_size=2),
    st.dictionaries(ODD_STRINGS, JSON_LEAVES, max_size=2),
    st.sampled_from([MAX_DEPTH - 3, MAX_DEPTH + 1, 300]).map(nested),
)


def _with_chaos(core: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly well-typed values, one in eight anything at all."""
    return st.integers(0, 7).flatmap(lambda n: chaos if n == 0 else core)


@functools.cache
def struct_values(name: str, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """A few of the struct's fields, each from its schema (shallow past 4 levels)."""
    properties: dict[str, Any] = (
        typecheck.schemas()["schemas"].get(name, {}).get("properties") or {}
    )
    names = sorted(properties)
    if not names or depth > 4:
        return st.just({})
    return st.lists(st.sampled_from(names), max_size=4, unique=True).flatmap(
        lambda keys: st.fixed_dictionaries(
            {k: field_values(properties[k], depth + 1) for k in keys}
        )
    )


def field_values(schema: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    ref = typecheck._ref(schema)
    if ref is not None:
        target = typecheck.schemas()["schemas"].get(ref, {})
        if "properties" in target:
            return _with_chaos(struct_values(ref, depth))
        schema = target
    kind = schema.get("type")
    core: st.SearchStrategy[Any]
    if kind == "string":
        core = ODD_STRINGS | st.text(max_size=6)
    elif kind == "integer":
        core = ODD_INTS | st.integers(-3, 3)
    elif kind == "number":
        core = st.floats(allow_nan=False, allow_infinity=False) | ODD_INTS
    elif kind == "boolean":
        core = st.booleans()
    elif kind == "array":
        core = st.lists(field_values(schema.get("items") or {}, depth + 1), max_size=3)
    elif kind == "object":
        inner = schema.get("additionalProperties")
        values = field_values(inner, depth + 1) if isinstance(inner, dict) else JSON_LEAVES
        core = st.dictionaries(ODD_STRINGS, values, max_size=3)
    else:
        core = JSON_LEAVES
    return _with_chaos(core)


def objects(resource: ResourceType) -> st.SearchStrategy[dict[str, Any]]:
    """An object of the kind: a name the other requests use, the rest from its schema."""
    return st.tuples(struct_values(schema_name(resource)), st.sampled_from(NAMES)).map(
        lambda pair: {
            **pair[0],
            "apiVersion": resource.api_version,
            "kind": resource.kind,
            "metadata": {
                **(pair[0].get("metadata") if isinstance(pair[0].get("metadata"), dict) else {}),
                "name": pair[1],
            },
        }
    )


#: Valid objects the patches and updates start from (re-created by the "seed" action after
#: a fuzzed delete), by plural.
_CONTAINERS = [{"name": "c", "image": "nginx", "resources": {"limits": {"cpu": "1"}}}]
_TEMPLATE = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": _CONTAINERS}}
SEEDS: dict[str, dict[str, Any]] = {
    "nodes": {"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}},
    "pods": {"spec": {"containers": _CONTAINERS, "tolerations": [{"operator": "Exists"}]}},
    "namespaces": {},
    "leases": {"spec": {"holderIdentity": "h", "leaseDurationSeconds": 10}},
    "deployments": {"spec": {"selector": {"matchLabels": {"app": "a"}}, "template": _TEMPLATE}},
    "replicasets": {"spec": {"selector": {"matchLabels": {"app": "a"}}, "template": _TEMPLATE}},
    "daemonsets": {"spec": {"selector": {"matchLabels": {"app": "a"}}, "template": _TEMPLATE}},
    "poddisruptionbudgets": {"spec": {"minAvailable": 1}},
    "runtimeclasses": {"handler": "runc"},
    "priorityclasses": {"value": 10},
    "roles": {"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
    "clusterroles": {"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
    "deviceclasses": {"spec": {}},
    "resourceslices": {
        "spec": {
            "driver": "d.example.com",
            "nodeName": "n",
            "pool": {"name": "p", "resourceSliceCount": 1, "generation": 1},
            "devices": [{"name": "g0"}],
        }
    },
    "devicetaintrules": {"spec": {"taint": {"key": "k", "effect": "NoSchedule"}}},
}


def seed_call(resource: ResourceType, name: str) -> Call:
    body = {**SEEDS.get(resource.plural, {}), "metadata": {"name": name}}
    return Call("POST", collection(resource), {}, "application/json", to_json(body))


def null_in_lists(resource: ResourceType) -> list[tuple[str, ...]]:
    """Every list field of the kind down to 3 structs deep, as a path of field names."""
    found: list[tuple[str, ...]] = []

    def walk(name: str, prefix: tuple[str, ...]) -> None:
        properties = typecheck.schemas()["schemas"].get(name, {}).get("properties") or {}
        for key, prop in sorted(properties.items()):
            path = (*prefix, key)
            if prop.get("type") == "array":
                found.append(path)
            ref = typecheck._ref(prop)
            if ref is not None and len(prefix) < 3 and key != "metadata":
                walk(ref, path)

    walk(schema_name(resource), ())
    return found


def with_null_list(resource: ResourceType, path: tuple[str, ...], name: str) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": resource.api_version, "kind": resource.kind}
    node = body
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = [None]
    body.setdefault("metadata", {})["name"] = name
    return body


# ---- bodies built to hurt ----------------------------------------------------------------


def alias_bomb(levels: int, fanout: int = 9) -> bytes:
    lines = [f"l0: &l0 [{', '.join(['lol'] * fanout)}]"]
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * fanout)}]")
    return ("\n".join(lines) + "\nmetadata: {name: fuzz}\n").encode()


HOSTILE_YAML = [
    alias_bomb(8),
    alias_bomb(3),
    alias_bomb(5, 4),
    b"a: &a [*a]\n",
    b"a: &a {b: *a}\nmetadata: {name: fuzz}\n",
    b"metadata: {name: fuzz}\nspec: " + b"[" * 5000,
    b"metadata: {name: fuzz}\nspec: " + b"[" * (MAX_DEPTH - 2) + b"]" * (MAX_DEPTH - 2),
    b"metadata: {name: fuzz}\nspec:\n" + b"- " * 3000 + b"x\n",
    b"metadata: {name: fuzz}\nspec: !!binary aGVsbG8=\n",
    b"metadata: {name: fuzz, creationTimestamp: 2001-12-14t21:59:43.10-05:00}\n",
    b"metadata: {name: !!python/object/apply:os.system [true]}\n",
    b"metadata: {name: fuzz}\nspec: !!set {a, b}\n",
    b"? [a, b]\n: 1\n",
    b"metadata: &m {name: fuzz}\nspec: {<<: *m}\n",
    b"metadata: {name: fuzz}\n---\nmetadata: {name: other}\n",
    b"metadata: {name: fuzz, labels: {a: 1e400}}\n",
    b"x: -1180591620717411303423\n",
    b"\xff\xfe\x00",
    b"metadata:\n\tname: tab\n",
    b"\x00",
]
HOSTILE_JSON = [
    b'{"metadata":{"name":"fuzz","labels":{"a":' + b"[" * 500 + b"]" * 500 + b"}}}",
    b'{"metadata":{"name":"fuzz"},"spec":' + orjson.dumps(nested(MAX_DEPTH - 2)) + b"}",
    b'{"metadata":{"name":"fuzz"},"spec":' + orjson.dumps(nested(MAX_DEPTH)) + b"}",
    b"[" * 3000 + b"]" * 3000,
    b'{"metadata":{"name":"fuzz","labels":{"a":NaN}}}',
    b'{"metadata":{"name":"fuzz","labels":{"a":1e400}}}',
    b'{"metadata":{"name":"fuzz","generation":99999999999999999999999}}',
    b'{"metadata":{"name":"fuzz"},"metadata":{"name":"fuzz"}}',
    b'{"metadata":{"name":"fuzz\\ud800"}}',
    # managedFields keys are JSON too: a key of 5000 brackets once overflowed the stack.
    b'{"metadata":{"name":"fuzz","managedFields":[{"manager":"m","operation":"Update",'
    b'"apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"k:'
    + b"[" * 5000
    + b"]" * 5000
    + b'":{}}}}]}}',
    b"\xef\xbb\xbf{}",
    b'{"a":"\xff"}',
    b"",
    b"null",
    b"[]",
    b'"x"',
]
HOSTILE_PROTOBUF = [b"k8s\x00", b"k8s\x00\x0a\x00\x12\xff\xff\xff\xff\x0f", b"\x00" * 16]
# A Namespace whose managedFields' fieldsV1 (raw JSON inside protobuf) nests 5000 deep.
HOSTILE_PROTOBUF.append(
    unknown(
        "v1",
        "Namespace",
        ld(1, ld(17, ld(1, "kubectl") + ld(2, "Update") + ld(7, ld(1, b"[" * 5000 + b"]" * 5000)))),
    )
)


# ---- query parameters --------------------------------------------------------------------

ODD_NUMBERS = st.sampled_from(
    [
        "",
        "0",
        "-1",
        "1",
        "500",
        "99999999999999999999",
        "9223372036854775807",
        "-9223372036854775809",
        "1e3",
        " 5",
        "5_0",
        "٣",
        "abc",
        "0x10",
    ]
)


def _token(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


ODD_TOKENS = st.sampled_from(
    [
        "",
        "x",
        _token(b'{"v":"meta.k8s.io/v1","rv":999999999999999999999,"start":"a"}'),
        _token(b'{"v":"meta.k8s.io/v1","rv":9223372036854775807,"start":"a"}'),
        _token(b"[" * 3000),
    ]
)
LIST_PARAMS = st.dictionaries(
    st.sampled_from(
        [
            "limit",
            "timeoutSeconds",
            "resourceVersion",
            "resourceVersionMatch",
            "continue",
            "labelSelector",
            "fieldSelector",
            "sendInitialEvents",
            "allowWatchBookmarks",
        ]
    ),
    ODD_NUMBERS
    | ODD_TOKENS
    | st.sampled_from(["NotOlderThan", "Exact", "a=b", "a in (", "!", "metadata.name=x", "true"]),
    max_size=3,
)
DELETE_PARAMS = st.dictionaries(
    st.sampled_from(["gracePeriodSeconds", "propagationPolicy", "orphanDependents", "dryRun"]),
    ODD_NUMBERS | st.sampled_from(["All", "Orphan", "Foreground", "x", "true"]),
    max_size=3,
)
WRITE_PARAMS = st.dictionaries(
    st.sampled_from(["fieldManager", "fieldValidation", "dryRun", "force"]),
    st.sampled_from(["", "fuzz", "Strict", "Warn", "Ignore", "All", "true", "x" * 200, "\x00"]),
    max_size=2,
)


# ---- requests ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    params: dict[str, str] = field(default_factory=dict)
    content_type: str = ""
    body: bytes = b""
    accept: str = ""

    def describe(self) -> str:
        return f"{self.method} {self.path} {self.params} {self.content_type} {self.body[:300]!r}"


def to_json(value: Any) -> bytes:
    """JSON text of ``value``, integers past 64 bits included (orjson refuses them)."""
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _encode(value: Any, as_yaml: bool) -> bytes:
    if as_yaml:
        return yaml.safe_dump(value, allow_unicode=True).encode("utf-8", "surrogatepass")
    return to_json(value)


def _json_patch(value: Any, fields: list[str]) -> list[dict[str, Any]]:
    return [{"op": "add", "path": "/" + "/".join(fields), "value": value}]


@st.composite
def calls(draw: st.DrawFn) -> Call:
    """One request of any kind against any served resource."""
    resource = draw(st.sampled_from(RESOURCES))
    name = draw(st.sampled_from(NAMES))
    base = collection(resource)
    item = f"{base}/{name}"
    subresources = [s.name for s in resource.subresources if s.name in ("status",)]
    action = draw(
        st.sampled_from(
            [
                "seed",
                "create",
                "update",
                "patch",
                "patch",
                "hostile",
                "list",
                "watch",
                "table",
                "delete",
                "null",
                "subresource",
                "review",
            ]
        )
    )
    if action == "seed":
        return seed_call(resource, name)
    if action == "subresource":
        return draw(subresource_calls(name))
    if action == "review":
        review = draw(st.sampled_from(REVIEWS))
        review_body = (
            draw(objects(review))
            if typecheck.schemas()["kinds"].get(f"{review.group}/{review.version}/{review.kind}")
            else {"spec": draw(JSON_LEAVES)}
        )
        return Call("POST", collection(review), {}, "application/json", to_json(review_body))
    if action == "create":
        as_yaml = draw(st.booleans())
        return Call(
            "POST",
            base,
            draw(WRITE_PARAMS),
            "application/yaml" if as_yaml else "application/json",
            _encode(draw(objects(resource)), as_yaml),
        )
    if action == "update":
        body = draw(objects(resource))
        body["metadata"]["name"] = name
        path = item + ("/status" if bool(subresources) and draw(st.booleans()) else "")
        return Call("PUT", path, draw(WRITE_PARAMS), "application/json", to_json(body))
    if action == "patch":
        patch_type = draw(st.sampled_from(PATCH_TYPES))
        path = item + ("/status" if bool(subresources) and draw(st.booleans()) else "")
        params = {"fieldManager": "fuzz", **draw(WRITE_PARAMS)}
        body = draw(objects(resource))
        if patch_type == "application/json-patch+json":
            value = draw(field_values({}, 0) | st.just(body.get("spec")))
            fields = draw(
                st.lists(
                    st.sampled_from(["metadata", "labels", "spec", "a", "0", "-", "~1"]),
                    min_size=1,
                    max_size=4,
                )
            )
            ops = draw(
                st.just(_json_patch(value, fields))
                | st.lists(
                    st.fixed_dictionaries(
                        {
                            "op": st.sampled_from(
                                ["add", "remove", "replace", "move", "copy", "test", "x"]
                            ),
                            "path": st.sampled_from(
                                ["", "/", "/metadata/labels/a", "/spec", "/a/0", "/metadata/name"]
                            ),
                            "value": JSON_LEAVES,
                            "from": st.sampled_from(["/metadata", "/x", "/spec"]),
                        }
                    ),
                    max_size=3,
                )
            )
            return Call("PATCH", path, params, patch_type, to_json(ops))
        if patch_type != "application/apply-patch+yaml":
            del body["apiVersion"], body["kind"]
        as_yaml = patch_type.endswith("yaml") and draw(st.booleans())
        return Call("PATCH", path, params, patch_type, _encode(body, as_yaml))
    if action == "hostile":
        content_type, raw = draw(
            st.sampled_from(
                [("application/yaml", b) for b in HOSTILE_YAML]
                + [("application/apply-patch+yaml", b) for b in HOSTILE_YAML]
                + [("application/json", b) for b in HOSTILE_JSON]
                + [(t, b) for t in PATCH_TYPES[:3] for b in HOSTILE_JSON]
                + [("application/vnd.kubernetes.protobuf", b) for b in HOSTILE_PROTOBUF]
            )
        )
        method = "PATCH" if content_type in PATCH_TYPES else draw(st.sampled_from(["POST", "PUT"]))
        path = base if method == "POST" else item
        return Call(method, path, {"fieldManager": "fuzz"}, content_type, raw)
    if action == "list":
        path = draw(st.sampled_from([base, collection(resource, "no-such-ns"), item]))
        return Call("GET", path, draw(LIST_PARAMS))
    if action == "table":
        # kubectl get: Tables of whatever the fuzzing stored (printer columns over odd values).
        include = draw(st.sampled_from(["", "None", "Metadata", "Object", "x"]))
        params = {"includeObject": include} if include else {}
        path = draw(st.sampled_from([base, item, collection(resource, "no-such-ns")]))
        return Call("GET", path, params, accept=TABLE)
    if action == "watch":
        # A negative timeout ends the watch at once (as upstream's), after its parameters,
        # initial events and bookmarks are handled.
        params = {**draw(LIST_PARAMS), "watch": draw(ODD_NUMBERS | st.just("true"))}
        return Call("GET", base, {**params, "timeoutSeconds": "-1"})
    if action == "delete":
        return Call("DELETE", draw(st.sampled_from([item, base])), draw(DELETE_PARAMS))
    lists = null_in_lists(resource)
    path_fields = draw(st.sampled_from(lists)) if lists else ("metadata", "finalizers")
    body = with_null_list(resource, path_fields, name)
    return Call("POST", base, {}, "application/json", to_json(body))


POD = next(r for r in SCHEME if r.plural == "pods" and not r.group)
EVICTION = {"apiVersion": "policy/v1", "kind": "Eviction"}
BINDING = {"apiVersion": "v1", "kind": "Binding", "target": {"kind": "Node", "name": "fuzz"}}


@st.composite
def subresource_calls(draw: st.DrawFn, name: str) -> Call:
    """Bindings, evictions, scales and namespace finalizers, well-formed or not."""
    pods = collection(POD)
    kind = draw(st.sampled_from(["binding", "eviction", "scale", "finalize", "bindings"]))
    method = draw(st.sampled_from(["POST", "PUT", "PATCH", "GET", "DELETE"]))
    junk = draw(st.dictionaries(ODD_STRINGS, JSON_LEAVES, max_size=2))
    if kind == "binding":
        body: Any = {**BINDING, "metadata": {"name": draw(st.sampled_from([name, "other"]))}}
        return Call(method, f"{pods}/{name}/binding", {}, "application/json", to_json(body | junk))
    if kind == "bindings":
        body = {**BINDING, "metadata": {"name": name}, **junk}
        return Call(
            "POST",
            f"/api/v1/namespaces/{NAMESPACE}/bindings",
            {},
            "application/json",
            to_json(body),
        )
    if kind == "eviction":
        body = {
            **EVICTION,
            "metadata": {"name": name},
            "deleteOptions": draw(
                JSON_LEAVES
                | st.dictionaries(
                    st.sampled_from(["gracePeriodSeconds", "dryRun", "preconditions"]),
                    JSON_LEAVES,
                    max_size=2,
                )
            ),
        }
        return Call(method, f"{pods}/{name}/eviction", {}, "application/json", to_json(body))
    if kind == "scale":
        workload = draw(st.sampled_from(["deployments", "replicasets"]))
        path = f"/apis/apps/v1/namespaces/{NAMESPACE}/{workload}/{name}/scale"
        body = {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": {"name": name},
            "spec": {"replicas": draw(JSON_LEAVES | ODD_INTS)},
        }
        content_type = "application/merge-patch+json" if method == "PATCH" else "application/json"
        return Call(method, path, {}, content_type, to_json(body))
    body = {
        "metadata": {"name": name},
        "spec": {"finalizers": draw(st.lists(ODD_STRINGS, max_size=2))},
    }
    return Call(
        method, f"/api/v1/namespaces/{name}/finalize", {}, "application/json", to_json(body)
    )


# ---- checks ------------------------------------------------------------------------------


TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def send(client: httpx.Client, call: Call) -> httpx.Response:
    headers = {"Content-Type": call.content_type} if call.content_type else {}
    if call.accept:
        headers["Accept"] = call.accept
    return client.request(
        call.method, call.path, params=call.params, content=call.body, headers=headers
    )


def check_answer(call: Call, response: httpx.Response) -> None:
    """No 5xx (but upstream's 504 for a resourceVersion not reached), every error a Status."""
    assert response.status_code < 500 or _too_large_rv(response), (
        f"{response.status_code} for {call.describe()}: {response.text[:600]}"
    )
    if response.status_code >= 400:
        status = response.json()
        assert status.get("kind") == "Status", call.describe()
        assert status.get("code") == response.status_code, call.describe()


def _too_large_rv(response: httpx.Response) -> bool:
    if response.status_code != 504:
        return False
    causes = (response.json().get("details") or {}).get("causes") or []
    return any(c.get("reason") == "ResourceVersionTooLarge" for c in causes)


def stored_problems(client: httpx.Client, registry: Registry) -> list[str]:
    """Every stored object of every kind, re-read: does it still decode against its schema
    and pass the server's own validation?"""
    problems: list[str] = []
    for resource in RESOURCES:
        root = f"/apis/{resource.group}/{resource.version}" if resource.group else "/api/v1"
        listed = client.get(f"{root}/{resource.plural}")
        assert listed.status_code == 200, listed.text
        for obj in listed.json()["items"]:
            where = f"{resource.plural} {obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"
            try:
                typecheck.check_object(orjson.loads(orjson.dumps(obj)), schema_name(resource))
            except typecheck.TypeCheckError as error:
                problems.append(f"{where}: {error.message}")
            errors = [
                e
                for e in registry.strategy(resource).validate(obj)
                if not written_by_a_binding(resource, obj, e)
            ]
            if errors:
                problems.append(f"{where}: {errors}")
    return problems


def written_by_a_binding(resource: ResourceType, obj: dict[str, Any], error: FieldError) -> bool:
    """What a Binding wrote, as upstream stores it too: the only check of a Binding is
    ValidatePodBinding (a non-empty target name), and setPodNodeAndMetadata writes the name
    as spec.nodeName, and the Binding's labels and annotations, through GuaranteedUpdate
    without validating the pod (pkg/registry/core/pod/storage/storage.go). The fuzzed
    reviews post random Bindings (target names like "NoSchedule" included). A binding
    records no managedFields entry, so an invalid value nobody manages is the binding's:
    create and update refuse one (an update of a pod with an invalid nodeName too:
    tests/apiserver/test_subresource_verbs.py), so none of them ever records it."""
    if resource.plural != "pods" or resource.group:
        return False
    managed = [(e.get("fieldsV1") or {}) for e in obj["metadata"].get("managedFields") or []]
    if error.field == "spec.nodeName" and error.type is ErrorType.INVALID:
        return not any("f:nodeName" in (fields.get("f:spec") or {}) for fields in managed)
    for kind in ("labels", "annotations"):
        if error.field != f"metadata.{kind}":
            continue
        values = obj["metadata"].get(kind) or {}
        keys = [k for k, v in values.items() if error.bad_value in (k, v, str(k).lower())]
        owned = [((f.get("f:metadata") or {}).get(f"f:{kind}") or {}) for f in managed]
        return bool(keys) and not any(f"f:{k}" in o for k in keys for o in owned)
    return False
