"""The backend-independent conformance suite for ``Store`` implementations.

Subclass :class:`StoreConformance` in a test module (its name starting with ``Test``) and
implement :meth:`open_store`; every method named ``test_*`` then runs against that backend.
The etcd backend reuses the same suite.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from taintplane.store.errors import (
    AlreadyExists,
    Compacted,
    Conflict,
    FutureRevision,
    NotFound,
    TooLarge,
)
from taintplane.store.interface import MAX_VALUE_SIZE, EventType, Store, WatchEvent

__all__ = ["StoreConformance"]

Scenario = Callable[[Store], Awaitable[None]]


async def _take(watch: object, count: int, timeout: float = 5.0) -> list[WatchEvent]:
    events: list[WatchEvent] = []

    async def collect() -> None:
        async for event in watch:  # type: ignore[attr-defined]
            events.append(event)
            if len(events) == count:
                return

    await asyncio.wait_for(collect(), timeout)
    return events


class StoreConformance:
    async def open_store(self, directory: Path) -> Store:
        raise NotImplementedError

    def run(self, directory: Path, scenario: Scenario) -> None:
        async def main() -> None:
            store = await self.open_store(directory)
            try:
                await scenario(store)
            finally:
                await store.close()

        asyncio.run(main())

    # ---- create / get ---------------------------------------------------------------------

    def test_create_then_get(self, tmp_path: Path) -> None:
        async def scenario(store: Store) -> None:
            rev = await store.create("/core/pods/default/a", b"one")
            kv = await store.get("/core/pods/default/a")
            assert kv is not None
            assert (kv.value, kv.mod_revision, kv.create_revision) == (b"one", rev, rev)
            assert await store.get("/core/pods/default/missing") is None
            assert await store.current_revision() == rev

        self.run(tmp_path, scenario)

    def test_create_of_a_live_key_is_refused(self, tmp_path: Path) -> None:
        async def scenario(store: Store) -> None:
            rev = await store.create("/k", b"1")
            with pytest.raises(AlreadyExists) as caught:
                await store.create("/k", b"2")
            assert caught.value.current_revision == rev
            kv = await store.get("/k")
            assert kv is not None
            assert kv.value == b"1"

        self.run(tmp_path, scenario)

    def test_revisions_strictly_increase_across_keys(self, tmp_path: Path) -> None:
        async def scenario(store: Store) -> None:
            revs = [await store.create(f"/k{i}", b"x") for i in range(5)]
            revs.append(await store.update("/k0", b"y", revs[0]))
            revs.append((await store.delete("/k1"))[0])
            assert revs == sorted(set(revs))

        self.run(tmp_path, scenario)

    def test_values_over_the_limit_are_refused(self, tmp_path: Path) -> None:
        async def scenario(store: Store) -> None:
            with pytest.raises(TooLarge):
                await store.create("/big", b"x" * (MAX_VALUE_SIZE + 1))
            assert await store.get("/big") is None
            await store.create("/big", b"x" * MAX_VALUE_SIZE)

        self.run(tmp_path, scenario)

    # ---- update / delete ------------------------------------------------------------------

    def test_update_is_guarded_by_revision(self, tmp_path: Path) -> None:
        async def scenario(store: Store) -> None:
            first = await store.create("/k", b"1")
            second = await store.update("/k", b"2", first)
            assert second > first
            with pytest.raises(Conflict) as caught:
                await store.update("/k", b"3", first)
            assert caught.value.current_revision == second
            kv = await store.get("/k")
            assert kv is not None
            assert (kv.value, kv.mod_revision, kv.create_revision) == (b"2", second, first)
            with pytest.raises(NotFound):
                await store.update("/nope", b"x", 1)

        self.run(tmp_path, scenario)

    def test_delete_returns_the_last_value_and_is_guarded(self, tmp_path: Path) -> None:
        async def scenario(store: Store) -> None:
            first = await store.create("/k", b"1")
            second = await store.update("/k", b"2", first)
            with pytest.raises(Conflict):
                await store.delete("/k", first)
            rev, last = await store.delete("/k", second)
            assert (rev > second, last) == (True, b"2")
            assert await store.get("/k") is None
            with pytest.raises(NotFound):
                await store.delete("/k")
            again = await store.create("/k", b"new")
            kv = await store.get("/k")
            assert kv is not None
            assert (kv.create_revision, kv.value) == (again, b"new")

        self.run(tmp_path, scenario)

    def test_concurrent_read_modify_write_loses_no_update(self, tmp_path: Path) -> None:
        async def scenario(store: Store) -> None:
            await store.create("/counter", b"0")

            async def increment() -> None:
                while True:
                    kv = await store.get("/counter")
                    assert kv is not None
                    try:
                        await store.update(
                            "/counter", str(int(kv.value) + 1).encode(), kv.mod_revision
                        )
                        return
                    except Conflict:
                        continue

            await asyncio.gather(*(increment() for _ in range(40)))
            kv = await store.get("/counter")
            assert kv is not None
            assert kv.value == b"40"

        self.run(tmp_path, scenario)

    # ---- reads at a revision, lists -------------------------------------------------------

    def test_get_at_an_older_revision(self, tmp_path: Path) -> None:
        async def scenario(store: Store) -> None:
            first = await store.create("/k", b"1")
            second = await store.update("/k", b"2", first)
            deleted, _ = await store.delete("/k")
            old = await store.get("/k", revision=first)
            assert old is not None
            assert old.value == b"1"
            mid = await store.get("/k", revision=second)
            assert mid is not None
            assert mid.value == b"2"
            assert await store.get("/k", revision=deleted) is None
            with pytest.raises(FutureRevision):
                await store.get("/k", revision=deleted + 10)

        self.run(tmp_path, scenario)

    def test_list_by_prefix_in_key_order_without_deleted_keys(self, tmp_path: Path) -> None:
        async def scenario(store: Store) -> None:
            for key in ["/p/b", "/p/a", "/p/c", "/q/a", "/p", "/pz"]:
                await store.create(key, key.encode())
            await store.delete("/p/c")
            result = await store.list("/p/")
            assert [kv.key for kv in result.items] == ["/p/a", "/p/b"]
            assert result.revision == await store.current_revision()
            assert result.continue_after is None
            assert await store.count("/p/") == 2
            assert [kv.key for kv in (await store.list("")).items] == [
                "/p",
                "/p/a",
                "/p/b",
                "/pz",
                "/q/a",
            ]

        self.run(tmp_path, scenario)

    def test_pages_share_one_snapshot_revision(self, tmp_path: Path) -> None:
        async def scenario(store: Store) -> None:
            for i in range(5):
                await store.create(f"/p/{i}", b"v1")
            page = await store.list("/p/", limit=2)
            assert [kv.key for kv in page.items] == ["/p/0", "/p/1"]
            assert page.continue_after == "/p/1"
            # Changes after the first page do not show in later pages.
            kv3 = await store.get("/p/3")
            assert kv3 is not None
            await store.update("/p/3", b"v2", kv3.mod_revision)
            await store.delete("/p/4")
            await store.create("/p/5", b"v1")
            keys, values = [], []
            while page.continue_after is not None:
                page = await store.list(
                    "/p/", revision=page.revision, limit=2, continue_after=page.continue_after
                )
                keys += [kv.key for kv in page.items]
                values += [kv.value for kv in page.items]
            assert keys == ["/p/2", "/p/3", "/p/4"]
            assert values == [b"v1", b"v1", b"v1"]

        self.run(tmp_path, scenario)

    def test_a_page_counts_the_keys_after_it_at_its_revision(self, tmp_path: Path) -> None:
        async def scenario(store: Store) -> None:
            for i in range(5):
                await store.create(f"/p/{i}", b"v1")
            await store.create("/q/0", b"v1")
            page = await store.list("/p/", limit=2)
            assert (page.continue_after, page.remaining) == ("/p/1", 3)
            await store.delete("/p/4")  # after the snapshot: still counted in it
            page = await store.list(
                "/p/", revision=page.revision, limit=2, continue_after=page.continue_after
            )
            assert (page.continue_after, page.remaining) == ("/p/3", 1)
            latest = await store.list("/p/", limit=2, continue_after="/p/1")
            assert (latest.continue_after, latest.remaining) == (None, 0)
            last = await store.list(
                "/p/", revision=page.revision, limit=2, continue_after=page.continue_after
            )
            assert (last.continue_after, last.remaining) == (None, 0)

        self.run(tmp_path, scenario)

    # ---- watch ----------------------------------------------------------------------------

    def test_watch_replays_history_after_a_revision_then_goes_live(self, tmp_path: Path) -> None:
        async def scenario(store: Store) -> None:
            start = await store.create("/w/a", b"1")
            r2 = await store.update("/w/a", b"2", start)
            await store.create("/other/x", b"x")
            r3, _ = await store.delete("/w/a")
            watch = store.watch("/w/", start)
            events = await _take(watch, 2)
            assert [(e.type, e.key, e.value, e.prev_value, e.revision) for e in events] == [
                (EventType.MODIFIED, "/w/a", b"2", b"1", r2),
                (EventType.DELETED, "/w/a", b"2", b"2", r3),
            ]
            r4 = await store.create("/w/b", b"b")
            live = await _take(watch, 1)
            assert [(e.type, e.key, e.prev_value, e.revision) for e in live] == [
                (EventType.ADDED, "/w/b", None, r4)
            ]
            watch.close()

        self.run(tmp_path, scenario)

    def test_resuming_a_watch_neither_skips_nor_repeats(self, tmp_path: Path) -> None:
        async def scenario(store: Store) -> None:
            base = await store.current_revision()
            revs = [await store.create(f"/r/{i}", b"x") for i in range(10)]
            first = store.watch("/r/", base)
            seen = await _take(first, 4)
            first.close()
            second = store.watch("/r/", seen[-1].revision)
            seen += await _take(second, 6)
            second.close()
            assert [e.revision for e in seen] == revs

        self.run(tmp_path, scenario)

    def test_bookmark_revision_covers_everything_delivered(self, tmp_path: Path) -> None:
        async def scenario(store: Store) -> None:
            base = await store.create("/b/a", b"x")
            watch = store.watch("/b/", base)
            rev = await store.create("/b/b", b"y")
            events = await _take(watch, 1)
            assert events[0].revision == rev
            await store.create("/elsewhere", b"z")
            bookmark = watch.bookmark_revision()
            assert bookmark == await store.current_revision()
            watch.close()

        self.run(tmp_path, scenario)

    # ---- compaction -----------------------------------------------------------------------

    def test_reads_and_watches_below_the_compacted_revision_are_refused(
        self, tmp_path: Path
    ) -> None:
        async def scenario(store: Store) -> None:
            first = await store.create("/c/a", b"1")
            second = await store.update("/c/a", b"2", first)
            await store.create("/c/b", b"b")
            gone, _ = await store.delete("/c/b")
            await store.compact(gone)
            with pytest.raises(Compacted):
                await store.get("/c/a", revision=first)
            with pytest.raises(Compacted):
                await store.list("/c/", revision=first)
            with pytest.raises(Compacted):
                await _take(store.watch("/c/", first), 1)
            kv = await store.get("/c/a")
            assert kv is not None
            assert (kv.value, kv.mod_revision) == (b"2", second)
            assert [k.key for k in (await store.list("/c/")).items] == ["/c/a"]
            assert await store.current_revision() == gone
            after = await store.create("/c/b", b"again")
            assert after > gone

        self.run(tmp_path, scenario)
