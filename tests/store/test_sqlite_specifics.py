import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from taintplane.store.interface import EventType
from taintplane.store.sqlite import SqliteStore


def test_data_survives_a_clean_reopen(tmp_path):
    async def scenario():
        store = await SqliteStore(tmp_path / "s.db").open()
        rev = await store.create("/k", b"v")
        await store.compact(rev)
        await store.close()
        again = await SqliteStore(tmp_path / "s.db").open()
        kv = await again.get("/k")
        assert kv is not None
        assert (kv.value, kv.mod_revision) == (b"v", rev)
        assert await again.current_revision() == rev
        assert await again.create("/k2", b"v") == rev + 1
        await again.close()

    asyncio.run(scenario())


def test_a_watch_older_than_the_buffer_replays_from_the_log(tmp_path):
    async def scenario():
        store = await SqliteStore(tmp_path / "s.db", watch_buffer=3).open()
        base = await store.current_revision()
        revs = [await store.create(f"/w/{i}", b"x") for i in range(2500)]
        kv = await store.get("/w/0")
        assert kv is not None
        revs.append(await store.update("/w/0", b"y", kv.mod_revision))
        watch = store.watch("/w/", base)
        seen = []
        async for event in watch:
            seen.append(event)
            if len(seen) == len(revs):
                break
        watch.close()
        assert [e.revision for e in seen] == revs
        assert seen[-1].type is EventType.MODIFIED
        assert seen[-1].prev_value == b"x"
        await store.close()

    asyncio.run(scenario())


WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from taintplane.store.sqlite import SqliteStore

    async def main():
        store = await SqliteStore(sys.argv[1]).open()
        counter = 0
        async def writer(worker):
            nonlocal counter
            while True:
                counter += 1
                key = f"/acked/{worker}/{counter}"
                await store.create(key, b"x" * 512)
                print(key, flush=True)
        await asyncio.gather(*(writer(w) for w in range(8)))

    asyncio.run(main())
    """
)


def test_every_acknowledged_write_survives_sigkill(tmp_path: Path):
    db = tmp_path / "crash.db"
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    acknowledged = []
    for line in child.stdout:
        acknowledged.append(line.strip())
        if len(acknowledged) >= 3000:
            break
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    # Acknowledgements printed after the kill was decided are also in the pipe: read them.
    acknowledged += [line.strip() for line in child.stdout if line.strip()]
    child.stdout.close()

    async def check():
        store = await SqliteStore(db).open()
        present = {kv.key for kv in (await store.list("/acked/")).items}
        await store.close()
        return present

    present = asyncio.run(check())
    missing = [key for key in acknowledged if key not in present]
    assert missing == []
    assert len(acknowledged) >= 3000


def test_write_many_is_one_transaction_whose_items_fail_alone(tmp_path):
    """A batch (store.batch.write_many): each write keeps its precondition and fails alone,
    writing nothing; the rest commit together and reach watchers in one fan-out, in order."""
    from taintplane.store.batch import Write, write_many
    from taintplane.store.errors import AlreadyExists, Conflict, NotFound, TooLarge
    from taintplane.store.interface import MAX_VALUE_SIZE

    async def scenario():
        store = await SqliteStore(tmp_path / "s.db").open()
        taken = await store.create("/b/taken", b"t")
        watch = store.watch("/b/", taken)
        results = await write_many(
            store,
            [
                Write("create", "/b/new", b"n"),
                Write("create", "/b/taken", b"again"),
                Write("update", "/b/taken", b"u", taken),
                Write("update", "/b/taken", b"stale", taken),
                Write("delete", "/b/none"),
                Write("create", "/b/huge", b"x" * (MAX_VALUE_SIZE + 1)),
                Write("delete", "/b/new"),
            ],
        )
        new, again, updated, stale, none, huge, deleted = results
        assert isinstance(again, AlreadyExists)
        assert isinstance(stale, Conflict)
        assert isinstance(none, NotFound)
        assert isinstance(huge, TooLarge)
        assert updated == new + 1
        assert deleted[0] == updated + 1
        assert deleted[1] == b"n"
        stored = await store.get("/b/taken")
        assert stored is not None
        assert stored.value == b"u"
        assert await store.get("/b/new") is None
        assert await store.get("/b/huge") is None
        seen = []
        async for event in watch:
            seen.append((event.type, event.key, event.revision))
            if len(seen) == 3:
                break
        watch.close()
        assert seen == [
            (EventType.ADDED, "/b/new", new),
            (EventType.MODIFIED, "/b/taken", updated),
            (EventType.DELETED, "/b/new", deleted[0]),
        ]
        await store.close()

    asyncio.run(scenario())


def test_a_batch_that_fails_midway_leaves_none_of_it(tmp_path, monkeypatch):
    """Store-level atomic: an error other than a write's own precondition (here the disk
    failing on the third write) fails the whole batch and leaves none of it, as a crash
    before its COMMIT would."""
    import sqlite3

    import pytest

    from taintplane.store import sqlite as backend
    from taintplane.store.batch import Write, write_many

    def failing(conn, write):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setitem(backend._WRITERS, "delete", failing)

    async def scenario():
        store = await SqliteStore(tmp_path / "s.db").open()
        before = await store.current_revision()
        with pytest.raises(sqlite3.OperationalError):
            await write_many(
                store,
                [Write("create", "/a", b"1"), Write("create", "/b", b"2"), Write("delete", "/a")],
            )
        assert await store.get("/a") is None
        assert await store.get("/b") is None
        # The rolled-back rows are gone; the revision counter may have moved (AUTOINCREMENT).
        assert (await store.list("/")).items == []
        assert await store.create("/c", b"3") > before
        await store.close()

    asyncio.run(scenario())
