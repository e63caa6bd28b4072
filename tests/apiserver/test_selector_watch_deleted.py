"""A watch with a label or field selector sees an object that stops matching as DELETED
carrying the content it last matched with, at the resourceVersion of the change that moved it
out (cacher/cache_watcher.go convertToWatchEvent: !curObjPasses && oldObjPasses); one that
starts matching again is ADDED with its new content; a deletion carries the last content."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch

from taintplane.sim.cluster import Cluster

MERGE = {"content-type": "application/merge-patch+json"}


@pytest.fixture(scope="module")
def api(cluster: Cluster) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def _at(obj: dict[str, Any], revision: str) -> dict[str, Any]:
    moved = copy.deepcopy(obj)
    moved["metadata"]["resourceVersion"] = revision
    return moved


def _watch(api: httpx.Client, path: str, params: dict[str, str], count: int) -> list[Any]:
    """The first ``count`` events of a watch replaying history from ``params``."""
    events: list[Any] = []
    with api.stream("GET", path, params={**params, "watch": "true"}) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line:
                events.append(json.loads(line))
            if len(events) == count:
                break
    return events


def _node_moves(api: httpx.Client, name: str) -> tuple[str, list[dict[str, Any]]]:
    """A node selected, moved out (its label and an annotation changed in one write), moved
    back, then deleted: the revision before, the objects the three writes returned, and the
    last content at the deletion's revision."""
    start = api.get("/api/v1/nodes").json()["metadata"]["resourceVersion"]
    created = api.post(
        "/api/v1/nodes", json={"metadata": {"name": name, "labels": {"tier": "web"}}}
    )
    assert created.status_code == 201, created.text
    moved_out = api.patch(
        f"/api/v1/nodes/{name}",
        json={"metadata": {"labels": {"tier": "db"}, "annotations": {"moved": "out"}}},
        headers=MERGE,
    )
    moved_back = api.patch(
        f"/api/v1/nodes/{name}", json={"metadata": {"labels": {"tier": "web"}}}, headers=MERGE
    )
    deleted = api.delete(f"/api/v1/nodes/{name}")
    assert deleted.status_code == 200, deleted.text
    gone_at = api.get("/api/v1/nodes").json()["metadata"]["resourceVersion"]
    return start, [
        created.json(),
        moved_out.json(),
        moved_back.json(),
        _at(moved_back.json(), gone_at),
    ]


def test_a_label_selector_watch_deletes_with_the_previous_content(api: httpx.Client) -> None:
    start, (created, moved_out, moved_back, deleted) = _node_moves(api, "sel-raw")
    events = _watch(
        api, "/api/v1/nodes", {"resourceVersion": start, "labelSelector": "tier=web"}, 3
    )
    out_revision = moved_out["metadata"]["resourceVersion"]
    assert events == [
        {"type": "ADDED", "object": created},
        # What the watcher last saw match (tier=web, no annotation), at the revision of the
        # write that moved it out, not the new content (tier=db).
        {"type": "DELETED", "object": _at(created, out_revision)},
        {"type": "ADDED", "object": moved_back},
    ]
    later = _watch(
        api,
        "/api/v1/nodes",
        {"resourceVersion": moved_back["metadata"]["resourceVersion"], "labelSelector": "tier=web"},
        1,
    )
    assert later == [{"type": "DELETED", "object": deleted}]


def test_a_field_selector_watch_deletes_with_the_previous_content(api: httpx.Client) -> None:
    pods = "/api/v1/namespaces/default/pods"
    start = api.get(pods).json()["metadata"]["resourceVersion"]
    pod = {"metadata": {"name": "sel-phase"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    created = api.post(pods, json=pod)
    assert created.status_code == 201, created.text
    running = api.patch(
        f"{pods}/sel-phase/status", json={"status": {"phase": "Running"}}, headers=MERGE
    )
    assert running.status_code == 200, running.text
    events = _watch(
        api, pods, {"resourceVersion": start, "fieldSelector": "status.phase=Pending"}, 2
    )
    assert events == [
        {"type": "ADDED", "object": created.json()},
        {
            "type": "DELETED",
            "object": _at(created.json(), running.json()["metadata"]["resourceVersion"]),
        },
    ]


def test_the_official_client_sees_the_previous_content(cluster: Cluster, api: httpx.Client) -> None:
    start, (created, moved_out, moved_back, _) = _node_moves(api, "sel-py")
    api_client = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig_path))
    try:
        core = k8s.CoreV1Api(api_client)
        seen: list[tuple[str, Any, dict[str, Any]]] = []
        for event in k8s_watch.Watch().stream(
            core.list_node, label_selector="tier=web", resource_version=start, timeout_seconds=10
        ):
            seen.append((event["type"], event["object"], event["raw_object"]))
            if len(seen) == 3:
                break
    finally:
        api_client.close()
    assert [kind for kind, _, _ in seen] == ["ADDED", "DELETED", "ADDED"]
    _, gone, raw = seen[1]
    assert raw == _at(created, moved_out["metadata"]["resourceVersion"])
    assert gone.metadata.resource_version == moved_out["metadata"]["resourceVersion"]
    assert gone.metadata.labels == {"tier": "web"}
    assert gone.metadata.annotations is None
    assert seen[2][2] == moved_back
