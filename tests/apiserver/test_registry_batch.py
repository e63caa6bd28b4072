"""The registry's batch path (``Client.batch``): each request of a batch takes the whole
single-request path (admission, validation, field management) and fails alone; their writes
are one store transaction and one watch fan-out, in order."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from taintplane.apiserver.registry_batch import WriteGroup
from taintplane.client import ApiError, Client, Op, resource
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import Cluster, in_process_cluster
from taintplane.store.sqlite import SqliteStore

PODS = resource("", "v1", "pods")
EVENTS = resource("", "v1", "events")


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}], **spec},
    }


CONDITION = {"type": "DisruptionTarget", "status": "True", "reason": "R", "message": "m"}


def run(tmp_path: Path, scenario: Callable[[Cluster, Client], Awaitable[None]]) -> None:
    async def main() -> None:
        async with in_process_cluster(tmp_path, VirtualClock(), components=()) as cluster:
            assert cluster.client is not None
            await scenario(cluster, cluster.client.with_field_manager("batcher"))

    asyncio.run(main())


def count_transactions(cluster: Cluster) -> list[int]:
    """How many store write operations reach the SQLite writer (a batch is one)."""
    store = cluster.store
    assert isinstance(store, SqliteStore)
    submitted: list[int] = []
    submit = store._submit

    async def counted(run: Any, *, whole: bool = False) -> Any:
        submitted.append(1)
        return await submit(run, whole=whole)

    store._submit = counted  # type: ignore[method-assign]
    return submitted


def test_a_batch_is_one_transaction_and_each_item_fails_alone(tmp_path: Path) -> None:
    async def scenario(cluster: Cluster, client: Client) -> None:
        for name in ("a", "b", "c", "d"):
            await client.create(PODS, pod(name), namespace="default")
        submitted = count_transactions(cluster)
        results = await client.batch(
            [
                Op.patch(
                    PODS,
                    name,
                    {"status": {"conditions": [CONDITION]}},
                    namespace="default",
                    patch_type="strategic",
                    subresource="status",
                )
                for name in ("a", "missing", "b", "c")
            ]
            # Validation per item: an invalid label is refused, alone.
            + [
                Op.patch(
                    PODS, "d", {"metadata": {"labels": {"bad key!": "v"}}}, namespace="default"
                )
            ]
        )
        assert len(submitted) == 1
        a, missing, b, c, invalid = results
        assert isinstance(missing, ApiError)
        assert missing.code == 404
        assert missing.status["message"] == 'pods "missing" not found'
        assert isinstance(invalid, ApiError)
        assert invalid.code == 422
        for answer in (a, b, c):
            assert isinstance(answer, dict)
            assert [k["type"] for k in answer["status"]["conditions"]] == ["DisruptionTarget"]
            # Field management per item: the batch's client is the condition's manager.
            managers = {e["manager"] for e in answer["metadata"]["managedFields"]}
            assert "batcher" in managers
        # Identical to what a single request answers and stores.
        stored = await client.get(PODS, "a", "default")
        assert stored == a
        versions = [int(x["metadata"]["resourceVersion"]) for x in (a, b, c)]
        assert versions == sorted(set(versions))

    run(tmp_path, scenario)


def test_admission_runs_per_item(tmp_path: Path) -> None:
    async def scenario(cluster: Cluster, client: Client) -> None:
        # DefaultTolerationSeconds admits every pod it creates, one by one.
        results = await client.batch(
            [Op.create(PODS, pod(n), namespace="default") for n in ("x", "y")]
            + [Op.create(PODS, pod("z"), namespace="no-such-namespace")]
        )
        x, y, z = results
        for created in (x, y):
            keys = {t["key"] for t in created["spec"]["tolerations"]}
            assert keys == {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
        assert isinstance(z, ApiError)
        assert z.code == 404

    run(tmp_path, scenario)


def test_watchers_see_every_change_once_in_revision_order(tmp_path: Path) -> None:
    async def scenario(cluster: Cluster, client: Client) -> None:
        names = [f"p{i}" for i in range(20)]
        for name in names:
            await client.create(PODS, pod(name), namespace="default")
        _, version = await client.list(PODS, "default")
        seen: list[tuple[str, str, int]] = []

        async def watch() -> None:
            async for kind, obj in client.watch(PODS, "default", resource_version=version):
                if kind == "BOOKMARK":
                    continue
                meta = obj["metadata"]
                seen.append((kind, meta["name"], int(meta["resourceVersion"])))
                if len(seen) == 2 * len(names):
                    return

        watcher = asyncio.create_task(watch())
        status = [
            Op.patch(
                PODS,
                n,
                {"status": {"conditions": [CONDITION]}},
                namespace="default",
                patch_type="strategic",
                subresource="status",
            )
            for n in names
        ]
        assert not any(isinstance(r, ApiError) for r in await client.batch(status))
        deletes = await client.batch([Op.delete(PODS, n, "default") for n in names])
        assert not any(isinstance(r, ApiError) for r in deletes)
        await asyncio.wait_for(watcher, 10)
        assert [kind for kind, _, _ in seen] == ["MODIFIED"] * (2 * len(names))
        revisions = [rv for _, _, rv in seen]
        assert revisions == sorted(set(revisions))
        # Each pod's condition, then its graceful deletion.
        assert [n for _, n, _ in seen] == names + names

    run(tmp_path, scenario)


def test_a_lost_race_is_retried_in_the_next_round(tmp_path: Path) -> None:
    """A guaranteed update whose object changed after its read writes again, alone in a
    later round; the others of its round are not disturbed."""

    async def scenario(cluster: Cluster, client: Client) -> None:
        assert cluster.apiserver is not None
        registry = cluster.apiserver.registry
        for name in ("a", "b"):
            await client.create(PODS, pod(name), namespace="default")
        admit = registry.admit
        interfered: list[str] = []

        async def interfere(operation: str, resource: Any, *args: Any) -> None:
            await admit(operation, resource, *args)
            new = args[1]
            if operation == "UPDATE" and new["metadata"]["name"] == "a" and not interfered:
                interfered.append("a")
                # Another writer, outside the batch, changes "a" first.
                await registry.store.update(
                    PODS.storage_key("default", "a"),
                    (await registry.store.get(PODS.storage_key("default", "a"))).value,  # type: ignore[union-attr]
                    int(args[2]["metadata"]["resourceVersion"]),
                )

        registry.admit = interfere
        results = await client.batch(
            [
                Op.patch(PODS, n, {"metadata": {"labels": {"k": "v"}}}, namespace="default")
                for n in ("a", "b")
            ]
        )
        assert interfered == ["a"]
        assert all(r["metadata"]["labels"] == {"k": "v"} for r in results)

    run(tmp_path, scenario)


def test_a_member_waiting_on_something_else_does_not_hold_the_others(tmp_path: Path) -> None:
    async def scenario(cluster: Cluster, client: Client) -> None:
        assert cluster.store is not None
        group = WriteGroup(cluster.store)
        release = asyncio.Event()
        from taintplane.store.batch import Write

        async def slow() -> int:
            await release.wait()
            return int(await group.write(Write("create", "/registry/test/slow", b"{}")))

        async def fast() -> int:
            revision = int(await group.write(Write("create", "/registry/test/fast", b"{}")))
            release.set()  # only once the fast write has committed without it
            return revision

        fast_rev, slow_rev = await group.run([fast, slow])
        assert isinstance(fast_rev, int)
        assert isinstance(slow_rev, int)
        assert fast_rev < slow_rev
        assert group.rounds == 2

    run(tmp_path, scenario)
