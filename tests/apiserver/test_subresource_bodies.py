"""The bodies of pods/binding and pods/eviction decode as the create handler decodes them:
fieldValidation applies to their unknown and duplicate fields, and a body of another kind
gets transformDecodeError's words (a kind the scheme has does not convert; one it lacks is
not registered)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

PODS = "/api/v1/namespaces/default/pods"
NODE = {"kind": "Node", "name": "n1"}
_names = itertools.count()


@pytest.fixture(scope="module")
def api(cluster: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def _pod(api: httpx.Client) -> dict[str, Any]:
    body = {
        "metadata": {"name": f"body-{next(_names)}"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    created = api.post(PODS, json=body)
    assert created.status_code == 201, created.text
    return dict(created.json())


def _binding(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, **fields}


def _eviction(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}, **fields}


def test_strict_refuses_unknown_binding_fields_and_binds_nothing(api: httpx.Client) -> None:
    pod = _pod(api)
    name = pod["metadata"]["name"]
    body = _binding(name, target={**NODE, "bogus": 1}, spec={})
    refused = api.post(f"{PODS}/{name}/binding?fieldValidation=Strict", json=body)
    assert refused.status_code == 400, refused.text
    assert refused.json()["message"] == (
        'Binding in version "v1" cannot be handled as a Binding: strict decoding error: '
        'unknown field "target.bogus", unknown field "spec"'
    )
    assert api.get(f"{PODS}/{name}").json() == pod


def test_warn_binds_and_warns_of_each_unknown_field(api: httpx.Client) -> None:
    name = _pod(api)["metadata"]["name"]
    bound = api.post(f"{PODS}/{name}/binding", json=_binding(name, target=NODE, spec={}))
    assert bound.status_code == 201, bound.text
    assert bound.headers.get_list("warning") == ['299 - "unknown field \\"spec\\""']
    assert api.get(f"{PODS}/{name}").json()["spec"]["nodeName"] == "n1"


def test_strict_refuses_a_duplicate_binding_field(api: httpx.Client) -> None:
    name = _pod(api)["metadata"]["name"]
    raw = (
        '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"' + name + '"},'
        '"target":{"name":"n1"},"target":{"name":"n2"}}'
    )
    refused = api.post(
        f"{PODS}/{name}/binding?fieldValidation=Strict",
        content=raw,
        headers={"Content-Type": "application/json"},
    )
    assert refused.status_code == 400, refused.text
    assert refused.json()["message"] == (
        'Binding in version "v1" cannot be handled as a Binding: strict decoding error: '
        'duplicate field "target"'
    )


@pytest.mark.parametrize(
    ("type_meta", "message"),
    [
        (
            {"apiVersion": "v1", "kind": "Pod"},
            'Pod in version "v1" cannot be handled as a Binding: converting (v1.Pod) to '
            "(core.Binding): unknown conversion",
        ),
        (
            {"apiVersion": "policy/v1", "kind": "Eviction"},
            'Eviction in version "v1" cannot be handled as a Binding: converting (v1.Eviction) '
            "to (core.Binding): unknown conversion",
        ),
        (
            {"apiVersion": "v1", "kind": "Bogus"},
            'Bogus in version "v1" cannot be handled as a Binding: no kind "Bogus" is '
            'registered for version "v1" in scheme "pkg/api/legacyscheme/scheme.go:30"',
        ),
        (
            {"apiVersion": "apps/v1", "kind": "Binding"},
            'Binding in version "v1" cannot be handled as a Binding: no kind "Binding" is '
            'registered for version "apps/v1" in scheme "pkg/api/legacyscheme/scheme.go:30"',
        ),
    ],
)
def test_a_body_of_another_kind_is_refused_in_upstreams_words(
    api: httpx.Client, type_meta: dict[str, str], message: str
) -> None:
    pod = _pod(api)
    name = pod["metadata"]["name"]
    body = {**_binding(name, target=NODE), **type_meta}
    for path in (f"{PODS}/{name}/binding", "/api/v1/namespaces/default/bindings"):
        refused = api.post(path, json=body)
        assert (refused.status_code, refused.json()["message"]) == (400, message)
    assert api.get(f"{PODS}/{name}").json() == pod


def test_strict_refuses_unknown_eviction_fields(api: httpx.Client) -> None:
    pod = _pod(api)
    name = pod["metadata"]["name"]
    body = _eviction(name, deleteOptions={"gracePeriodSeconds": 0, "bogus": True})
    refused = api.post(f"{PODS}/{name}/eviction?fieldValidation=Strict", json=body)
    assert refused.status_code == 400, refused.text
    assert refused.json()["message"] == (
        'Eviction in version "v1" cannot be handled as a Eviction: strict decoding error: '
        'unknown field "deleteOptions.bogus"'
    )
    assert api.get(f"{PODS}/{name}").json() == pod
    evicted = api.post(f"{PODS}/{name}/eviction", json=body)
    assert evicted.status_code == 201, evicted.text
    assert evicted.headers.get_list("warning") == [
        '299 - "unknown field \\"deleteOptions.bogus\\""'
    ]
