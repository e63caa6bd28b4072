"""Snapshots: what ``kubectl get … -o yaml`` prints, read back, and restored into a fresh
store as an etcd backup is (uids, owners, creation times and statuses as they were)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from taintplane.client import resource
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster
from taintplane.sim.snapshot import (
    RESTORE_BATCH,
    SnapshotError,
    read_snapshot_file,
    restore,
    snapshot_instant,
)
from taintplane.store.sqlite import SqliteStore

PODS = resource("", "v1", "pods")
NAMESPACES = resource("", "v1", "namespaces")

LIST = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: n1
    uid: 11111111-1111-1111-1111-111111111111
    creationTimestamp: 2026-03-01T10:00:00Z
    resourceVersion: "812"
  status:
    conditions:
    - type: Ready
      status: "True"
      lastHeartbeatTime: "2026-03-01T11:59:50Z"
- apiVersion: v1
  kind: Pod
  metadata:
    name: web-1
    namespace: shop
    uid: 22222222-2222-2222-2222-222222222222
    creationTimestamp: "2026-03-01T11:00:00Z"
    ownerReferences:
    - {apiVersion: apps/v1, kind: ReplicaSet, name: web, uid: 33333333-3333-3333-3333-333333333333, controller: true}
  spec:
    nodeName: n1
    containers: [{name: c, image: nginx}]
  status: {phase: Running}
metadata:
  resourceVersion: ""
"""

MORE = """\
apiVersion: v1
kind: Event
metadata: {name: web-1.1, namespace: shop}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
---
"""


def test_a_list_and_further_documents_are_read_with_times_as_strings(tmp_path: Path) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text(LIST + "---\n" + MORE)
    objects = read_snapshot_file(path)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("Node", "n1"),
        ("Pod", "web-1"),
        ("Event", "web-1.1"),
        ("Widget", "w"),
    ]
    # An unquoted time stays the string the API server expects, not a YAML timestamp.
    assert objects[0]["metadata"]["creationTimestamp"] == "2026-03-01T10:00:00Z"
    assert snapshot_instant(objects) == datetime(2026, 3, 1, 11, 59, 50, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- a\n- b\n", "snapshot {path}, document 1: expected an object or a List, found list"),
        (
            "kind: Pod\nmetadata: {name: x}\n",
            "snapshot {path}, document 1: an object needs apiVersion, kind and metadata",
        ),
        (
            "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {}}\n",
            "snapshot {path}, document 1, item 0: Pod has no metadata.name",
        ),
        ("a: [\n", "snapshot {path} is not YAML or JSON: "),
    ],
)
def test_a_bad_snapshot_says_where(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text(text)
    with pytest.raises(SnapshotError) as error:
        read_snapshot_file(path)
    assert str(error.value).startswith(message.format(path=path))


def test_a_missing_snapshot_file(tmp_path: Path) -> None:
    with pytest.raises(
        SnapshotError, match=r"^cannot read snapshot .*nope.yaml: No such file or directory$"
    ):
        read_snapshot_file(tmp_path / "nope.yaml")


def test_restored_objects_keep_their_identity_and_their_namespace_is_made(tmp_path: Path) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text(LIST + "---\n" + MORE)
    objects = read_snapshot_file(path)

    async def main() -> None:
        store = await SqliteStore(tmp_path / "state.db").open()
        try:
            skipped = await restore(store, objects)
        finally:
            await store.close()
        assert skipped == ["example.com/v1 Widget", "v1 Event"]
        clock = VirtualClock(datetime(2026, 3, 1, 12, tzinfo=UTC))
        async with in_process_cluster(tmp_path, clock, components=()) as cluster:
            client = cluster.client
            assert client is not None
            web = await client.get(PODS, "web-1", "shop")
            assert web["metadata"]["uid"] == "22222222-2222-2222-2222-222222222222"
            assert web["metadata"]["creationTimestamp"] == "2026-03-01T11:00:00Z"
            assert web["metadata"]["ownerReferences"][0]["name"] == "web"
            assert web["status"] == {"phase": "Running"}
            assert web["metadata"]["resourceVersion"] != "812"
            shop = await client.get(NAMESPACES, "shop")
            assert shop["status"] == {"phase": "Active"}
            # Written through the API as usual afterwards (a namespace that exists).
            created: dict[str, Any] = await client.create(
                PODS,
                {
                    "metadata": {"name": "new"},
                    "spec": {"containers": [{"name": "c", "image": "x"}]},
                },
                "shop",
            )
            assert created["metadata"]["creationTimestamp"] == "2026-03-01T12:00:00Z"

    asyncio.run(main())


def test_a_taints_time_counts_towards_the_snapshots_instant() -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n", "creationTimestamp": "2026-03-01T10:00:00Z"},
        "spec": {
            "taints": [{"key": "k", "effect": "NoExecute", "timeAdded": "2026-03-01T12:00:05Z"}]
        },
    }
    assert snapshot_instant([node]) == datetime(2026, 3, 1, 12, 0, 5, tzinfo=UTC)


def test_restore_commits_in_batches_and_the_first_of_a_repeated_object_stands(
    tmp_path: Path,
) -> None:
    def pod(name: str, version: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "team", "labels": {"v": version}},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        }

    count = RESTORE_BATCH * 2 + 7
    objects = [pod(f"p-{i}", "1") for i in range(count)]
    # Repeated within the first batch, across batches, and in the last (partial) one.
    objects[5:5] = [pod("p-1", "2")]
    objects[RESTORE_BATCH + 10 : RESTORE_BATCH + 10] = [pod("p-2", "2")]
    objects.append(pod(f"p-{count - 1}", "2"))
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team", "labels": {"own": "yes"}},
    }
    objects.append(namespace)  # after the pods that use it: the snapshot's own still wins

    async def main() -> None:
        store = await SqliteStore(tmp_path / "state.db").open()
        try:
            await restore(store, objects)
            listed = await store.list(PODS.storage_prefix())
        finally:
            await store.close()
        assert len(listed.items) == count
        clock = VirtualClock(datetime(2026, 3, 1, 12, tzinfo=UTC))
        async with in_process_cluster(tmp_path, clock, components=()) as cluster:
            client = cluster.client
            assert client is not None
            for name in ("p-1", "p-2", f"p-{count - 1}"):
                assert (await client.get(PODS, name, "team"))["metadata"]["labels"] == {"v": "1"}
            team = await client.get(NAMESPACES, "team")
            assert team["metadata"]["labels"]["own"] == "yes"

    asyncio.run(main())
