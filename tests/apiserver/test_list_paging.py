"""Paged lists as kube-apiserver serves them (etcd3 GetList, storage continue tokens): a page
with a continue token tells how many items remain when no selector filters the list; a token
whose revision is compacted is a 410 carrying a token that continues at the latest revision
(test/e2e/apimachinery/chunking.go); a token that does not decode is a 400 worded as
DecodeContinue words it. And field selectors worded per kind, as ConvertFieldLabel does."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from taintplane.api.selectors import SelectorError, parse_field_selector

CLASSES = "/apis/node.k8s.io/v1/runtimeclasses"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
ALL_LEASES = "/apis/coordination.k8s.io/v1/leases"
INCONSISTENT = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list."
)
DEFAULT_CONVERSION = 'is not a known field selector: only "metadata.name", "metadata.namespace"'


@pytest.fixture(scope="module")
def api(cluster: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def compact(cluster: Any, api: httpx.Client) -> None:
    """Forget every revision before the latest, as the API server's periodic compaction does
    a compaction interval later."""
    latest = int(api.get(CLASSES).json()["metadata"]["resourceVersion"])
    asyncio.run_coroutine_threadsafe(cluster.store.compact(latest), cluster.loop).result(10)


def create_namespace(api: httpx.Client, name: str) -> None:
    created = api.post("/api/v1/namespaces", json={"metadata": {"name": name}})
    assert created.status_code == 201, created.text


def create_lease(api: httpx.Client, namespace: str, name: str) -> None:
    path = LEASES.format(namespace=namespace)
    created = api.post(path, json={"metadata": {"name": name, "labels": {"set": namespace}}})
    assert created.status_code == 201, created.text


def create_class(api: httpx.Client, name: str) -> None:
    created = api.post(CLASSES, json={"metadata": {"name": name}, "handler": "runc"})
    assert created.status_code == 201, created.text


def names(body: dict[str, Any]) -> list[str]:
    return [item["metadata"]["name"] for item in body["items"]]


def all_names(pages: list[dict[str, Any]]) -> list[str]:
    return [name for page in pages for name in names(page)]


def token_of(fields: Any) -> str:
    return raw_token(json.dumps(fields).encode())


def raw_token(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def read_token(token: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    return data


def page_through(api: httpx.Client, path: str, limit: int, **params: str) -> list[dict[str, Any]]:
    """Every page of a list, checked as chunking.go checks them."""
    pages: list[dict[str, Any]] = []
    query: dict[str, Any] = {"limit": limit, **params}
    while True:
        response = api.get(path, params=query)
        assert response.status_code == 200, response.text
        pages.append(response.json())
        token = response.json()["metadata"].get("continue")
        if not token:
            return pages
        query["continue"] = token


# ---- remainingItemCount --------------------------------------------------------------------


def test_every_page_tells_how_many_items_remain(api: httpx.Client) -> None:
    namespace = "paging"
    create_namespace(api, namespace)
    for i in range(7):
        create_lease(api, namespace, f"lease-{i}")
    path = LEASES.format(namespace=namespace)
    total = len(api.get(path).json()["items"])
    pages = page_through(api, path, 3)
    assert [len(page["items"]) for page in pages] == [3, 3, 1]
    found = 0
    for page in pages[:-1]:
        # chunking.go: remaining + this page + already seen is the whole list.
        assert page["metadata"]["remainingItemCount"] + len(page["items"]) + found == total
        found += len(page["items"])
        assert list(page["metadata"]) == ["resourceVersion", "continue", "remainingItemCount"]
    assert "remainingItemCount" not in pages[-1]["metadata"]
    assert {page["metadata"]["resourceVersion"] for page in pages} == {
        pages[0]["metadata"]["resourceVersion"]
    }
    assert all_names(pages) == [f"lease-{i}" for i in range(7)]


def test_the_count_is_of_the_first_page_s_revision(api: httpx.Client) -> None:
    namespace = "paging-snapshot"
    create_namespace(api, namespace)
    for i in range(4):
        create_lease(api, namespace, f"lease-{i}")
    path = LEASES.format(namespace=namespace)
    first = api.get(path, params={"limit": 2}).json()
    assert first["metadata"]["remainingItemCount"] == 2
    create_lease(api, namespace, "lease-9")  # after the snapshot the pages are read at
    second = api.get(path, params={"limit": 1, "continue": first["metadata"]["continue"]})
    assert names(second.json()) == ["lease-2"]
    assert second.json()["metadata"]["remainingItemCount"] == 1


def test_a_selector_leaves_the_count_out(api: httpx.Client) -> None:
    namespace = "paging-selected"
    create_namespace(api, namespace)
    for i in range(4):
        create_lease(api, namespace, f"lease-{i}")
    for params in ({"labelSelector": "set=paging-selected"}, {"fieldSelector": "metadata.name!=x"}):
        page = api.get(ALL_LEASES, params={"limit": 2, **params}).json()
        assert page["metadata"]["continue"]
        assert "remainingItemCount" not in page["metadata"]


def test_a_table_page_tells_the_count_too(api: httpx.Client) -> None:
    namespace = "paging-table"
    create_namespace(api, namespace)
    for i in range(3):
        create_lease(api, namespace, f"lease-{i}")
    table = api.get(
        LEASES.format(namespace=namespace),
        params={"limit": 2},
        headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
    ).json()
    assert table["kind"] == "Table"
    assert table["metadata"]["remainingItemCount"] == 1


def test_tokens_keep_the_key_relative_to_the_listed_prefix(api: httpx.Client) -> None:
    namespace = "paging-tokens"
    create_namespace(api, namespace)
    for i in range(3):
        create_lease(api, namespace, f"lease-{i}")
    first = api.get(LEASES.format(namespace=namespace), params={"limit": 1}).json()
    token = read_token(first["metadata"]["continue"])
    assert token == {
        "v": "meta.k8s.io/v1",
        "rv": int(first["metadata"]["resourceVersion"]),
        "start": "lease-0\u0000",
    }
    everywhere = api.get(ALL_LEASES, params={"limit": 1}).json()
    assert read_token(everywhere["metadata"]["continue"])["start"].endswith("\u0000")
    assert "/" in read_token(everywhere["metadata"]["continue"])["start"]


# ---- continue tokens whose revision is compacted ------------------------------------------------


def test_an_expired_token_is_a_410_with_a_token_that_goes_on_at_the_latest_revision(
    api: httpx.Client, cluster: Any
) -> None:
    """chunking.go "should support continue listing from the last key if the token is
    expired"."""
    namespace = "paging-expired"
    create_namespace(api, namespace)
    for i in range(6):
        create_lease(api, namespace, f"lease-{i}")
    path = LEASES.format(namespace=namespace)
    first = api.get(path, params={"limit": 2}).json()
    first_rv = first["metadata"]["resourceVersion"]
    assert names(first) == ["lease-0", "lease-1"]
    create_lease(api, namespace, "lease-3a")  # a write between the pages, then compaction
    compact(cluster, api)

    expired = api.get(path, params={"limit": 2, "continue": first["metadata"]["continue"]})
    assert expired.status_code == 410
    status = expired.json()
    assert (status["reason"], status["message"], status["code"]) == ("Expired", INCONSISTENT, 410)
    inconsistent = status["metadata"]["continue"]
    assert read_token(inconsistent) == {"v": "meta.k8s.io/v1", "rv": -1, "start": "lease-1\u0000"}

    second = api.get(path, params={"limit": 2, "continue": inconsistent})
    assert second.status_code == 200, second.text
    assert second.json()["metadata"]["resourceVersion"] != first_rv
    assert names(second.json()) == ["lease-2", "lease-3"]
    assert second.json()["metadata"]["remainingItemCount"] == 3
    found = 4
    last_rv = second.json()["metadata"]["resourceVersion"]
    rest = page_through(api, path, 2, **{"continue": second.json()["metadata"]["continue"]})
    assert {page["metadata"]["resourceVersion"] for page in rest} == {last_rv}
    found += sum(len(page["items"]) for page in rest)
    assert all_names(rest) == ["lease-3a", "lease-4", "lease-5"]
    assert found == 7


def test_an_expired_token_of_a_selected_list_is_the_same_410(
    api: httpx.Client, cluster: Any
) -> None:
    namespace = "paging-expired-selected"
    create_namespace(api, namespace)
    for i in range(3):
        create_lease(api, namespace, f"lease-{i}")
    params = {"limit": "1", "labelSelector": f"set={namespace}"}
    first = api.get(ALL_LEASES, params=params).json()
    create_lease(api, namespace, "lease-9")
    compact(cluster, api)
    expired = api.get(ALL_LEASES, params={**params, "continue": first["metadata"]["continue"]})
    assert expired.status_code == 410
    assert expired.json()["message"] == INCONSISTENT
    again = api.get(
        ALL_LEASES, params={**params, "continue": expired.json()["metadata"]["continue"]}
    )
    assert names(again.json()) == ["lease-1"]


def test_a_token_at_revision_minus_one_lists_the_latest_state(api: httpx.Client) -> None:
    for name in ("latest-a", "latest-b", "latest-c"):
        create_class(api, name)
    token = token_of({"v": "meta.k8s.io/v1", "rv": -1, "start": "latest-a\u0000"})
    response = api.get(CLASSES, params={"limit": 1, "continue": token})
    assert response.status_code == 200, response.text
    body = response.json()
    assert names(body) == ["latest-b"]
    current = api.get(CLASSES).json()["metadata"]["resourceVersion"]
    assert body["metadata"]["resourceVersion"] == current
    assert read_token(body["metadata"]["continue"])["rv"] == int(current)


def test_an_exact_list_below_the_compacted_revision_has_no_token(
    api: httpx.Client, cluster: Any
) -> None:
    create_class(api, "exact-old")
    old = api.get(CLASSES).json()["metadata"]["resourceVersion"]
    create_class(api, "exact-new")
    compact(cluster, api)
    response = api.get(CLASSES, params={"resourceVersion": old, "resourceVersionMatch": "Exact"})
    assert response.status_code == 410
    assert response.json()["message"] == "The resourceVersion for the provided list is too old."
    assert response.json()["metadata"] == {}


# ---- tokens that do not decode -----------------------------------------------------------------

NOT_VALID = "invalid continue token: continue key is not valid"


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("not*base64", f"{NOT_VALID}: illegal base64 data at input byte 3"),
        ("abcde", f"{NOT_VALID}: illegal base64 data at input byte 4"),
        ("YWJj=", f"{NOT_VALID}: illegal base64 data at input byte 4"),
        (raw_token(b"{"), f"{NOT_VALID}: unexpected end of JSON input"),
        (raw_token(b"nope"), f"{NOT_VALID}: invalid character 'o' in literal null (expecting 'u')"),
        (
            token_of([]),
            f"{NOT_VALID}: json: cannot unmarshal array into Go value of type "
            "storage.continueToken",
        ),
        (
            token_of({"v": "meta.k8s.io/v1", "rv": "5", "start": "a"}),
            f"{NOT_VALID}: json: cannot unmarshal string into Go struct field "
            "continueToken.rv of type int64",
        ),
        (
            token_of({"v": "meta.k8s.io/v1", "RV": 1.5, "start": "a"}),
            f"{NOT_VALID}: json: cannot unmarshal number 1.5 into Go struct field "
            "continueToken.rv of type int64",
        ),
        (
            token_of({"v": 1, "rv": 5, "start": "a"}),
            f"{NOT_VALID}: json: cannot unmarshal number into Go struct field "
            "continueToken.v of type string",
        ),
        (
            token_of({"v": "meta.k8s.io/v2", "rv": 5, "start": "a"}),
            f"{NOT_VALID}: server does not recognize this encoded version meta.k8s.io/v2",
        ),
        (
            token_of({"rv": 5, "start": "a"}),
            f"{NOT_VALID}: server does not recognize this encoded version ",
        ),
        (
            token_of({"v": "meta.k8s.io/v1", "rv": 0, "start": "a"}),
            f"{NOT_VALID}: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ),
        (
            token_of({"v": "meta.k8s.io/v1", "rv": 5, "start": ""}),
            f"{NOT_VALID}: encoded start key empty (version meta.k8s.io/v1)",
        ),
        (token_of({"v": "meta.k8s.io/v1", "rv": 5, "start": "../x"}), f"{NOT_VALID}: ../x"),
        (token_of({"v": "meta.k8s.io/v1", "rv": 5, "start": "a//b"}), f"{NOT_VALID}: a//b"),
    ],
)
def test_a_token_that_does_not_decode_is_a_400(api: httpx.Client, token: str, message: str) -> None:
    for params in ({"continue": token}, {"continue": token, "limit": "2", "labelSelector": "a"}):
        response = api.get(CLASSES, params=params)
        assert response.status_code == 400, response.text
        status = response.json()
        assert (status["reason"], status["message"]) == ("BadRequest", message)


def test_the_token_is_read_before_the_resource_version(api: httpx.Client) -> None:
    response = api.get(CLASSES, params={"continue": "abcde", "resourceVersion": "5"})
    assert response.json()["message"] == f"{NOT_VALID}: illegal base64 data at input byte 4"
    good = token_of({"v": "meta.k8s.io/v1", "rv": 5, "start": "a"})
    response = api.get(CLASSES, params={"continue": good, "resourceVersion": "5"})
    assert response.json()["message"] == (
        "specifying resource version is not allowed when using continue"
    )


# ---- field selectors: each kind's field label conversion ------------------------------------


@pytest.mark.parametrize(
    ("path", "label", "message"),
    [
        # runtime.DefaultMetaV1FieldSelectorConversion: no conversion of the kind's own.
        (CLASSES, "handler", f'"handler" {DEFAULT_CONVERSION}'),
        (
            "/apis/apps/v1/namespaces/default/replicasets",
            "spec.replicas",
            f'"spec.replicas" {DEFAULT_CONVERSION}',
        ),
        ("/apis/apps/v1/deployments", "status.phase", f'"status.phase" {DEFAULT_CONVERSION}'),
        (
            "/apis/resource.k8s.io/v1/resourceclaims",
            "spec.devices",
            f'"spec.devices" {DEFAULT_CONVERSION}',
        ),
        ("/apis/scheduling.k8s.io/v1/priorityclasses", "value", f'"value" {DEFAULT_CONVERSION}'),
        # Kinds whose version registers a conversion, worded as each words it.
        ("/api/v1/pods", "spec.bogus", "field label not supported: spec.bogus"),
        ("/api/v1/nodes", "metadata.namespace", "field label not supported: metadata.namespace"),
        ("/api/v1/namespaces", "spec.bogus", "field label not supported: spec.bogus"),
        ("/api/v1/events", "spec.bogus", "field label not supported: spec.bogus"),
        ("/apis/events.k8s.io/v1/events", "spec.bogus", "field label not supported: spec.bogus"),
        (
            "/apis/resource.k8s.io/v1/resourceslices",
            "spec.bogus",
            "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: spec.bogus",
        ),
    ],
)
def test_an_unknown_field_label_is_worded_by_the_kind_s_conversion(
    api: httpx.Client, path: str, label: str, message: str
) -> None:
    for params in ({}, {"watch": "true"}):
        response = api.get(path, params={"fieldSelector": f"{label}=x", **params})
        assert response.status_code == 400, response.text
        assert (response.json()["reason"], response.json()["message"]) == ("BadRequest", message)


def test_the_default_conversion_takes_the_namespace_of_a_cluster_scoped_kind(
    api: httpx.Client,
) -> None:
    create_class(api, "selected-by-name")
    empty = api.get(CLASSES, params={"fieldSelector": "metadata.namespace=default"})
    assert (empty.status_code, empty.json()["items"]) == (200, [])
    everything = api.get(CLASSES, params={"fieldSelector": "metadata.namespace="})
    assert "selected-by-name" in names(everything.json())
    by_name = api.get(CLASSES, params={"fieldSelector": "metadata.name=selected-by-name"})
    assert names(by_name.json()) == ["selected-by-name"]


def test_check_supported_words_the_refusal_by_api_version_and_kind() -> None:
    selector = parse_field_selector("metadata.name=a,spec.x\u00e9=b")

    def refusal(api_version: str, kind: str) -> str:
        with pytest.raises(SelectorError) as caught:
            selector.check_supported(lambda field: field == "metadata.name", api_version, kind)
        return caught.value.message

    assert refusal("v1", "Pod") == "field label not supported: spec.x\u00e9"
    assert refusal("node.k8s.io/v1", "RuntimeClass") == f'"spec.x\u00e9" {DEFAULT_CONVERSION}'
    # Without a kind, worded as core/v1 (the callers that do not say which kind).
    with pytest.raises(SelectorError) as caught:
        selector.check_supported(lambda field: field == "metadata.name")
    assert caught.value.message == "field label not supported: spec.x\u00e9"
