"""Every namespace carries ``kubernetes.io/metadata.name: <its name>`` (SetDefaults_Namespace,
and the namespace strategy's Canonicalize for generated names): set on create and on every
update, so a client can neither remove nor change it. Namespaces an older taintplane stored
without it are labelled when the server starts."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from taintplane.apiserver.app import DEFAULT_NAMESPACES, APIServer
from taintplane.clock import VirtualClock
from taintplane.store.sqlite import SqliteStore

NAMESPACES = "/api/v1/namespaces"
LABEL = "kubernetes.io/metadata.name"


@pytest.fixture(scope="module")
def api(cluster: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def labels(response: httpx.Response) -> dict[str, str]:
    assert response.status_code in (200, 201), response.text
    return dict(response.json()["metadata"].get("labels") or {})


@pytest.mark.parametrize("name", DEFAULT_NAMESPACES)
def test_the_default_namespaces_are_labelled(api: httpx.Client, name: str) -> None:
    assert labels(api.get(f"{NAMESPACES}/{name}")) == {LABEL: name}


def test_a_created_namespace_is_labelled_whatever_the_client_sent(api: httpx.Client) -> None:
    created = api.post(
        NAMESPACES,
        json={"metadata": {"name": "team-a", "labels": {LABEL: "other", "tier": "gold"}}},
    )
    assert labels(created) == {LABEL: "team-a", "tier": "gold"}


def test_a_generated_name_is_labelled_once_known(api: httpx.Client) -> None:
    created = api.post(NAMESPACES, json={"metadata": {"generateName": "gen-"}})
    name = created.json()["metadata"]["name"]
    assert name.startswith("gen-")
    assert labels(created) == {LABEL: name}


def test_updates_cannot_remove_or_change_the_label(api: httpx.Client) -> None:
    api.post(NAMESPACES, json={"metadata": {"name": "team-b"}}).raise_for_status()
    current = api.get(f"{NAMESPACES}/team-b").json()
    current["metadata"]["labels"] = {}
    assert labels(api.put(f"{NAMESPACES}/team-b", json=current)) == {LABEL: "team-b"}
    removed = api.patch(
        f"{NAMESPACES}/team-b",
        json={"metadata": {"labels": {LABEL: None}}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert labels(removed) == {LABEL: "team-b"}
    changed = api.patch(
        f"{NAMESPACES}/team-b",
        json={"metadata": {"labels": {LABEL: "x", "env": "dev"}}},
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )
    assert labels(changed) == {LABEL: "team-b", "env": "dev"}


def test_namespaces_stored_without_the_label_get_it_at_start_up(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = await SqliteStore(tmp_path / "store.db").open()
        server = APIServer(store, VirtualClock())
        await server.bootstrap()
        namespaces = server.scheme.lookup("", "v1", "namespaces")
        assert namespaces is not None
        await server.registry.create(namespaces, "", {"metadata": {"name": "old"}})
        # As an older taintplane stored them: no labels at all.
        for name in ("old", "default"):
            key = namespaces.storage_key("", name)
            kv = await store.get(key)
            assert kv is not None
            stored = orjson.loads(kv.value)
            del stored["metadata"]["labels"]
            await store.update(key, orjson.dumps(stored), kv.mod_revision)
        await server.close()

        restarted = APIServer(store, VirtualClock())
        await restarted.bootstrap()
        for name in ("old", "default"):
            got = await restarted.registry.get(namespaces, "", name)
            assert got["metadata"]["labels"] == {LABEL: name}
        await restarted.close()
        await store.close()

    asyncio.run(scenario())
