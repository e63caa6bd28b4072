"""resourceVersion, resourceVersionMatch, continue and sendInitialEvents on lists and watches,
as upstream's ValidateListOptions and the storage layer read them."""

import asyncio
import json

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

MATCH_NEEDS_RV = "resourceVersionMatch is forbidden unless resourceVersion is provided"
MATCH_WITH_CONTINUE = "resourceVersionMatch is forbidden when continue is provided"
EXACT_AT_ZERO = 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
WATCH_MATCH = "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
WATCH_INITIAL = "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def core(cluster):
    api_client = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig_path))
    yield k8s.CoreV1Api(api_client)
    api_client.close()


def create_node(api, name):
    created = api.post("/api/v1/nodes", json={"metadata": {"name": name}})
    assert created.status_code == 201, created.text
    return created.json()["metadata"]["resourceVersion"]


def names(body):
    return [item["metadata"]["name"] for item in body["items"]]


def invalid(response, *errors):
    """A 422 ListOptions Status with one cause per (field, cause message)."""
    assert response.status_code == 422, response.text
    status = response.json()
    rendered = [f"{field}: {message}" for field, message in errors]
    aggregated = rendered[0] if len(rendered) == 1 else "[" + ", ".join(rendered) + "]"
    assert status["message"] == f'ListOptions.meta.k8s.io "" is invalid: {aggregated}'
    assert status["reason"] == "Invalid"
    assert status["details"] == {
        "group": "meta.k8s.io",
        "kind": "ListOptions",
        "causes": [
            {"reason": _reason(message), "message": message, "field": field}
            for field, message in errors
        ],
    }


def _reason(message):
    return "FieldValueForbidden" if message.startswith("Forbidden") else "FieldValueNotSupported"


@pytest.mark.parametrize(
    ("params", "errors"),
    [
        (
            {"resourceVersionMatch": "Exact"},
            [("resourceVersionMatch", f"Forbidden: {MATCH_NEEDS_RV}")],
        ),
        (
            {"resourceVersionMatch": "NotOlderThan"},
            [("resourceVersionMatch", f"Forbidden: {MATCH_NEEDS_RV}")],
        ),
        (
            {"resourceVersionMatch": "Exact", "resourceVersion": "0"},
            [("resourceVersionMatch", f"Forbidden: {EXACT_AT_ZERO}")],
        ),
        (
            {"resourceVersionMatch": "Newest", "resourceVersion": "1"},
            [
                (
                    "resourceVersionMatch",
                    'Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""',
                )
            ],
        ),
        (
            {"resourceVersionMatch": "NotOlderThan", "continue": "abc"},
            [
                ("resourceVersionMatch", f"Forbidden: {MATCH_NEEDS_RV}"),
                ("resourceVersionMatch", f"Forbidden: {MATCH_WITH_CONTINUE}"),
            ],
        ),
        (
            {"sendInitialEvents": "true"},
            [("sendInitialEvents", "Forbidden: sendInitialEvents is forbidden for list")],
        ),
    ],
)
def test_invalid_list_options_are_422(api, params, errors):
    invalid(api.get("/api/v1/nodes", params=params), *errors)


@pytest.mark.parametrize(
    ("params", "errors"),
    [
        (
            {"resourceVersionMatch": "NotOlderThan"},
            [("resourceVersionMatch", f"Forbidden: {WATCH_MATCH}")],
        ),
        (
            {"sendInitialEvents": "true"},
            [("resourceVersionMatch", f"Forbidden: {WATCH_INITIAL}")],
        ),
        (
            {"sendInitialEvents": "true", "resourceVersionMatch": "Exact"},
            [
                ("resourceVersionMatch", f"Forbidden: {WATCH_INITIAL}"),
                (
                    "resourceVersionMatch",
                    'Unsupported value: "Exact": supported values: "NotOlderThan"',
                ),
            ],
        ),
    ],
)
def test_invalid_watch_options_are_422(api, params, errors):
    invalid(api.get("/api/v1/nodes", params={"watch": "true", **params}), *errors)


def test_kubectl_shows_the_list_options_error(kubectl):
    done = kubectl.run("get", "--raw", "/api/v1/nodes?resourceVersionMatch=Exact")
    assert done.returncode == 1
    # kubectl renders an Invalid Status from its details: 'The <kind> "<name>" is invalid'.
    assert done.stderr.strip() == (
        f'The ListOptions "" is invalid: resourceVersionMatch: Forbidden: {MATCH_NEEDS_RV}'
    )


def test_continue_with_a_resource_version_is_400(api):
    create_node(api, "page-a")
    create_node(api, "page-b")
    token = api.get("/api/v1/nodes", params={"limit": "1"}).json()["metadata"]["continue"]
    response = api.get("/api/v1/nodes", params={"continue": token, "resourceVersion": "5"})
    assert response.status_code == 400
    assert response.json()["message"] == (
        "specifying resource version is not allowed when using continue"
    )
    # resourceVersion "0" is the legacy "any" and goes on with the token.
    going_on = api.get("/api/v1/nodes", params={"continue": token, "resourceVersion": "0"})
    assert going_on.status_code == 200


def test_exact_lists_the_state_at_that_revision(api, core):
    before = create_node(api, "exact-old")
    create_node(api, "exact-new")
    api.delete("/api/v1/nodes/exact-old")
    exact = api.get(
        "/api/v1/nodes", params={"resourceVersion": before, "resourceVersionMatch": "Exact"}
    ).json()
    assert exact["metadata"]["resourceVersion"] == before
    assert "exact-old" in names(exact)
    assert "exact-new" not in names(exact)
    # With a selector too (the decoding path).
    selected = api.get(
        "/api/v1/nodes",
        params={
            "resourceVersion": before,
            "resourceVersionMatch": "Exact",
            "fieldSelector": "metadata.name=exact-old",
        },
    ).json()
    assert names(selected) == ["exact-old"]
    # NotOlderThan: the latest state.
    latest = api.get(
        "/api/v1/nodes", params={"resourceVersion": before, "resourceVersionMatch": "NotOlderThan"}
    ).json()
    assert "exact-new" in names(latest)
    assert "exact-old" not in names(latest)
    # The official client's resource_version_match.
    listed = core.list_node(resource_version=before, resource_version_match="Exact")
    assert listed.metadata.resource_version == before
    assert "exact-old" in [n.metadata.name for n in listed.items]


def test_a_limited_list_at_a_revision_is_exact(api):
    """The legacy reading: resourceVersion=N with a limit and no match is Exact."""
    before = create_node(api, "limited-old")
    api.delete("/api/v1/nodes/limited-old")
    page = api.get("/api/v1/nodes", params={"resourceVersion": before, "limit": "500"}).json()
    assert page["metadata"]["resourceVersion"] == before
    assert "limited-old" in names(page)
    unlimited = api.get("/api/v1/nodes", params={"resourceVersion": before}).json()
    assert "limited-old" not in names(unlimited)


def test_exact_below_the_compacted_revision_is_410(api, cluster, core):
    old = create_node(api, "compacted-away")
    latest = int(create_node(api, "compaction-mark"))
    asyncio.run_coroutine_threadsafe(cluster.store.compact(latest), cluster.loop).result(10)
    response = api.get(
        "/api/v1/nodes", params={"resourceVersion": old, "resourceVersionMatch": "Exact"}
    )
    assert response.status_code == 410
    assert (response.json()["reason"], response.json()["message"]) == (
        "Expired",
        "The resourceVersion for the provided list is too old.",
    )
    with pytest.raises(ApiException) as caught:
        core.list_node(resource_version=old, resource_version_match="Exact")
    assert caught.value.status == 410


def test_a_future_revision_is_a_504_for_both_matches(api):
    current = int(api.get("/api/v1/nodes").json()["metadata"]["resourceVersion"])
    for match in ("Exact", "NotOlderThan"):
        response = api.get(
            "/api/v1/nodes",
            params={"resourceVersion": str(current + 100), "resourceVersionMatch": match},
        )
        assert response.status_code == 504
        assert (
            f"Too large resource version: {current + 100}, current: "
            in (response.json()["message"])
        )


def read_events(api, params, count):
    events = []
    with api.stream("GET", "/api/v1/nodes", params={**params, "watch": "true"}) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line:
                events.append(json.loads(line))
            if len(events) == count:
                break
    return events


def test_watch_list_sends_initial_events_then_the_end_bookmark(api):
    nodes = names(api.get("/api/v1/nodes").json())
    params = {
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "5",
    }
    events = read_events(api, params, len(nodes) + 1)
    assert [e["type"] for e in events] == ["ADDED"] * len(nodes) + ["BOOKMARK"]
    assert sorted(e["object"]["metadata"]["name"] for e in events[:-1]) == sorted(nodes)
    current = api.get("/api/v1/nodes").json()["metadata"]["resourceVersion"]
    assert events[-1]["object"] == {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {
            "resourceVersion": current,
            "annotations": {"k8s.io/initial-events-end": "true"},
        },
    }


def test_watch_without_initial_events_starts_now(api):
    params = {
        "sendInitialEvents": "false",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "5",
    }
    with api.stream("GET", "/api/v1/nodes", params={**params, "watch": "true"}) as response:
        assert response.status_code == 200
        create_node(api, "after-start")
        line = next(line for line in response.iter_lines() if line)
    event = json.loads(line)
    assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "after-start")
