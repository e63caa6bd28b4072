"""The client over both transports, and informers (list, watch, relist after 410)."""

import asyncio

import pytest

from taintplane.apiserver.app import APIServer
from taintplane.client import (
    ApiError,
    Client,
    HTTPTransport,
    Informer,
    InProcessTransport,
    resource,
)
from taintplane.clock import RealClock
from taintplane.store.sqlite import SqliteStore

NODES = resource("", "v1", "nodes")
PODS = resource("", "v1", "pods")


async def in_process(tmp_path):
    store = await SqliteStore(tmp_path / "s.db").open()
    server = APIServer(store, RealClock())
    await server.bootstrap()
    return store, server, Client(InProcessTransport(server.app))


def test_in_process_client_crud_and_errors(tmp_path):
    async def scenario():
        store, server, client = await in_process(tmp_path)
        created = await client.create(NODES, {"metadata": {"name": "n1"}})
        assert created["metadata"]["uid"]
        patched = await client.patch(
            NODES,
            "n1",
            {"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}},
            patch_type="strategic",
        )
        assert patched["spec"]["taints"] == [{"key": "k", "effect": "NoSchedule"}]
        items, rv = await client.list(NODES)
        assert [n["metadata"]["name"] for n in items] == ["n1"]
        assert int(rv) >= int(patched["metadata"]["resourceVersion"])
        with pytest.raises(ApiError) as caught:
            await client.get(NODES, "nope")
        assert (caught.value.code, caught.value.reason) == (404, "NotFound")
        await client.create(
            PODS,
            {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
            namespace="default",
        )
        await client.post_subresource(
            PODS,
            "p",
            "default",
            "binding",
            {"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}},
        )
        assert (await client.get(PODS, "p", "default"))["spec"]["nodeName"] == "n1"
        await server.close()
        await store.close()

    asyncio.run(scenario())


def test_http_client_against_a_running_server(cluster):
    async def scenario():
        transport = HTTPTransport(cluster.url)
        client = Client(transport)
        await client.create(NODES, {"metadata": {"name": "over-http"}})
        assert (await client.get(NODES, "over-http"))["metadata"]["name"] == "over-http"
        await transport.close()

    asyncio.run(scenario())


def test_informer_lists_then_watches_and_relists_after_compaction(tmp_path):
    async def scenario():
        store, server, client = await in_process(tmp_path)
        await client.create(NODES, {"metadata": {"name": "a"}})
        seen: asyncio.Queue[tuple[str, str]] = asyncio.Queue()

        async def next_seen():
            return await asyncio.wait_for(seen.get(), 10)

        informer = Informer(
            client,
            NODES,
            on_add=lambda o: seen.put_nowait(("add", o["metadata"]["name"])),
            on_update=lambda old, new: seen.put_nowait(("update", new["metadata"]["name"])),
            on_delete=lambda o: seen.put_nowait(("delete", o["metadata"]["name"])),
        )
        task = asyncio.create_task(informer.run())
        await informer.synced.wait()
        assert await next_seen() == ("add", "a")
        await client.create(NODES, {"metadata": {"name": "b"}})
        await client.patch(NODES, "a", {"metadata": {"labels": {"x": "y"}}})
        await client.delete(NODES, "b")
        assert [await next_seen() for _ in range(3)] == [
            ("add", "b"),
            ("update", "a"),
            ("delete", "b"),
        ]
        assert set(informer.cache) == {"a"}
        task.cancel()

        # The informer stops; meanwhile history it has not seen is compacted away. Resuming
        # from its last resourceVersion gets 410, and it relists: the differences arrive once.
        stopped_at = informer.resource_version
        await client.delete(NODES, "a")
        await client.create(NODES, {"metadata": {"name": "c"}})
        await store.compact(await store.current_revision())
        task = asyncio.create_task(informer.run(resume_from=stopped_at))
        assert [await next_seen() for _ in range(2)] == [("delete", "a"), ("add", "c")]
        assert set(informer.cache) == {"c"}
        task.cancel()
        await server.close()
        await store.close()

    asyncio.run(scenario())
