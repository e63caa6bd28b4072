"""The embedded SQLite backend: a kine-style revision log (see STORAGE.md §6).

* One table ``kine`` holds every revision of every key; ``id`` is the global revision.
  A create inserts ``created=1``; an update a new row pointing at the previous one through
  ``prev_revision``; a delete a tombstone row (``deleted=1``) carrying the last value. The
  unique ``(name, prev_revision)`` index makes a lost update impossible.
* One writer thread owns the write connection and group-commits whatever is queued: each
  operation runs in its own savepoint inside one ``BEGIN IMMEDIATE … COMMIT``, so a failed
  precondition affects only its caller. A write is acknowledged only after COMMIT returns,
  which in WAL mode survives a crash of the process (``synchronous=FULL`` also survives
  power loss).
* Reads use their own connections, each in one read transaction so that the rows and the
  revision come from one snapshot. Lists run in a worker thread; point reads do not.
* Watches are served from the in-process hub; only a watcher resuming from older than the
  hub's buffer reads the log.
"""

from __future__ import annotations

import asyncio
import bisect
import builtins
import queue
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from taintplane.store.batch import Write
from taintplane.store.errors import (
    AlreadyExists,
    Compacted,
    Conflict,
    FutureRevision,
    NotFound,
    StoreError,
    TooLarge,
)
from taintplane.store.hub import HubWatch, WatchHub
from taintplane.store.interface import KV, MAX_VALUE_SIZE, EventType, ListResult, WatchEvent

_T = TypeVar("_T")

__all__ = ["SqliteStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kine (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  created INTEGER NOT NULL,
  deleted INTEGER NOT NULL,
  create_revision INTEGER NOT NULL,
  prev_revision INTEGER NOT NULL,
  value BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS kine_name_id ON kine (name, id);
CREATE UNIQUE INDEX IF NOT EXISTS kine_name_prev_revision ON kine (name, prev_revision);
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL) WITHOUT ROWID;
"""

_LATEST = (
    "SELECT id, deleted, create_revision, value FROM kine WHERE name = ? ORDER BY id DESC LIMIT 1"
)
_AT = (
    "SELECT id, deleted, create_revision, value FROM kine WHERE name = ? AND id <= ? "
    "ORDER BY id DESC LIMIT 1"
)
# {low} is ">=" for a first page (from the prefix) and ">" when continuing after a key.
_LIST = (
    "SELECT k.name, k.id, k.create_revision, k.value FROM kine k "
    "WHERE k.name {low} ? AND k.name < ? AND k.deleted = 0 "
    "AND k.id = (SELECT max(x.id) FROM kine x WHERE x.name = k.name AND x.id <= ?) "
    "ORDER BY k.name"
)
# The live keys under a prefix at a revision, in order: what a paged list counts its
# remainingItemCount against (kept per list snapshot, see _live_names).
_LIVE_NAMES = (
    "SELECT k.name FROM kine k "
    "WHERE k.name >= ? AND k.name < ? AND k.deleted = 0 "
    "AND k.id = (SELECT max(x.id) FROM kine x WHERE x.name = k.name AND x.id <= ?) "
    "ORDER BY k.name"
)
_COUNT_LATEST = (
    "SELECT count(*) FROM kine k "
    "WHERE k.name >= ? AND k.name < ? AND k.deleted = 0 "
    "AND k.id = (SELECT max(x.id) FROM kine x WHERE x.name = k.name)"
)
#: How many list snapshots keep their live keys (a paged list reads one page at a time).
_LIVE_NAMES_KEPT = 4
_EVENTS = (
    "SELECT k.id, k.name, k.created, k.deleted, k.value, p.value FROM kine k "
    "LEFT JOIN kine p ON p.id = k.prev_revision "
    "WHERE k.id > ? AND k.id <= ? AND k.name >= ? AND k.name < ? ORDER BY k.id LIMIT 1000"
)


def _prefix_end(prefix: str) -> str:
    """The smallest string greater than every string starting with ``prefix``."""
    if not prefix:
        return "\U0010ffff"
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def _revision(conn: sqlite3.Connection) -> int:
    # Not max(id): compaction may delete the newest row. AUTOINCREMENT never reuses ids.
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'kine'").fetchone()
    return int(row[0]) if row else 0


def _compact_revision(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT v FROM meta WHERE k = 'compact_revision'").fetchone()
    return int(row[0]) if row else 0


@dataclass
class _Op:
    run: Callable[[sqlite3.Connection], Any]
    future: asyncio.Future[Any]
    #: The caller gets the whole ``(result, changes)`` pair (a batch), not just the result.
    whole: bool = False


class SqliteStore:
    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        watch_buffer: int = 20_000,
    ) -> None:
        self.path = str(path)
        self._synchronous = synchronous
        self._queue: queue.Queue[list[_Op] | None] = queue.Queue()
        #: Writes submitted during this turn of the event loop, handed to the writer thread
        #: together once the turn's callbacks have run: one queue operation, and at most one
        #: wake-up of the thread, per turn rather than per write (a queue put that wakes the
        #: thread was ~5 % of an in-process write).
        self._pending: list[_Op] = []
        self._hub = WatchHub(watch_buffer)
        self._compacted_to = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._writer: threading.Thread | None = None
        self._reader: sqlite3.Connection | None = None
        self._local = threading.local()
        self._closed = False
        self._inflight: set[asyncio.Future[Any]] = set()
        self._live_names_cache: OrderedDict[tuple[str, int], builtins.list[str]] = OrderedDict()
        self._live_names_lock = threading.Lock()

    # ---- lifecycle ---------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={self._synchronous}")
        conn.execute("PRAGMA busy_timeout=5000")
        conn.execute("PRAGMA cache_size=-65536")
        return conn

    async def open(self) -> SqliteStore:
        self._loop = asyncio.get_running_loop()
        writer_conn = self._connect()
        writer_conn.executescript(_SCHEMA)
        self._hub.start_at(_revision(writer_conn))
        self._compacted_to = _compact_revision(writer_conn)
        self._reader = self._connect()
        self._writer = threading.Thread(
            target=self._write_loop, args=(writer_conn,), name="sqlite-writer", daemon=True
        )
        self._writer.start()
        return self

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._hand_over()  # what was submitted before the close is written first
        self._queue.put(None)
        if self._writer is not None:
            await asyncio.to_thread(self._writer.join)
        self._hub.close_all()
        if self._reader is not None:
            self._reader.close()

    # ---- the writer thread -------------------------------------------------------------

    def _write_loop(self, conn: sqlite3.Connection) -> None:
        try:
            while True:
                first = self._queue.get()
                if first is None:
                    return
                batch = list(first)
                stop = False
                while len(batch) < 512:
                    try:
                        more = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if more is None:
                        stop = True
                        break
                    batch.extend(more)
                self._commit(conn, batch)
                if stop:
                    return
        finally:
            conn.close()

    def _commit(self, conn: sqlite3.Connection, batch: list[_Op]) -> None:
        outcomes: list[tuple[_Op, Any, BaseException | None]] = []
        conn.execute("BEGIN IMMEDIATE")
        for op in batch:
            conn.execute("SAVEPOINT op")
            try:
                result = op.run(conn)
            except BaseException as error:  # handed to the caller, never lost
                conn.execute("ROLLBACK TO op")
                conn.execute("RELEASE op")
                outcomes.append((op, None, error))
            else:
                conn.execute("RELEASE op")
                outcomes.append((op, result, None))
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as error:
            conn.execute("ROLLBACK")
            outcomes = [(op, None, error) for op, _, _ in outcomes]
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._deliver, outcomes)

    def _deliver(self, outcomes: list[tuple[_Op, Any, BaseException | None]]) -> None:
        # Publish first, in revision order, then wake the writers' callers: anyone who
        # sees the acknowledgement can already watch from that revision.
        events: list[WatchEvent] = []
        for _, result, error in outcomes:
            if error is None and isinstance(result, tuple):
                if isinstance(result[1], WatchEvent):
                    events.append(result[1])
                elif isinstance(result[1], _Published):
                    events.extend(result[1])
        self._hub.publish(events)
        for op, result, error in outcomes:
            if op.future.done():
                continue
            if error is not None:
                op.future.set_exception(error)
            else:
                whole = op.whole or not isinstance(result, tuple)
                op.future.set_result(result if whole else result[0])

    async def _submit_many(self, run: Callable[[sqlite3.Connection], Any]) -> Any:
        """Submit an operation whose result is ``(value, changes)`` and return both (a
        batch's callers need every write's result, not only the first)."""
        return await self._submit(run, whole=True)

    async def _submit(
        self, run: Callable[[sqlite3.Connection], Any], *, whole: bool = False
    ) -> Any:
        if self._closed or self._loop is None:
            raise StoreError("store is closed")
        future: asyncio.Future[Any] = self._loop.create_future()
        self._inflight.add(future)
        future.add_done_callback(self._inflight.discard)
        if not self._pending:
            self._loop.call_soon(self._hand_over)
        self._pending.append(_Op(run, future, whole))
        return await future

    def _hand_over(self) -> None:
        """Give the writer thread, in submission order, the writes submitted so far."""
        ops, self._pending = self._pending, []
        if ops:
            self._queue.put(ops)

    async def drained(self) -> bool:
        """Wait until every submitted write and every read in a worker thread has completed;
        whether there were any (virtual time waits on this before it moves on)."""
        if not self._inflight:
            return False
        await asyncio.gather(*list(self._inflight), return_exceptions=True)
        return True

    async def _in_thread(self, function: Callable[..., _T], *args: Any) -> _T:
        """Run a read in a worker thread, counted among the work :meth:`drained` waits for."""
        future = asyncio.ensure_future(asyncio.to_thread(function, *args))
        self._inflight.add(future)
        future.add_done_callback(self._inflight.discard)
        return await future

    # ---- writes --------------------------------------------------------------------------

    @staticmethod
    def _check_size(key: str, value: bytes) -> None:
        if len(value) > MAX_VALUE_SIZE:
            raise TooLarge(key, len(value), MAX_VALUE_SIZE)

    async def create(self, key: str, value: bytes) -> int:
        self._check_size(key, value)
        return int(await self._submit(lambda conn: _create_row(conn, key, value)))

    async def update(self, key: str, value: bytes, expected_revision: int) -> int:
        self._check_size(key, value)
        return int(
            await self._submit(lambda conn: _update_row(conn, key, value, expected_revision))
        )

    async def delete(self, key: str, expected_revision: int | None = None) -> tuple[int, bytes]:
        rev, last = await self._submit(lambda conn: _delete_row(conn, key, expected_revision))
        return int(rev), bytes(last)

    async def write_many(self, writes: Sequence[Write]) -> builtins.list[Any]:
        """The writes in one transaction: one whose precondition fails writes nothing and is
        its own result (the error); the others commit together, and their changes are
        published in one fan-out (see ``store.batch``)."""
        outcomes: builtins.list[Any] = []
        for write in writes:
            if write.kind != "delete" and len(write.value) > MAX_VALUE_SIZE:
                outcomes.append(TooLarge(write.key, len(write.value), MAX_VALUE_SIZE))
            else:
                outcomes.append(None)

        def run(conn: sqlite3.Connection) -> tuple[builtins.list[Any], _Published]:
            events = _Published()
            for i, write in enumerate(writes):
                if outcomes[i] is not None:
                    continue
                # No savepoint per write: a failed precondition is found by the read before
                # anything is written, so it leaves nothing to undo; any other error fails
                # the whole batch (the operation's own savepoint in _commit undoes it).
                try:
                    result, event = _WRITERS[write.kind](conn, write)
                except StoreError as error:
                    outcomes[i] = error
                else:
                    outcomes[i] = result
                    events.append(event)
            return outcomes, events

        results, _ = await self._submit_many(run)
        return list(results)

    async def compact(self, revision: int) -> None:
        def run(conn: sqlite3.Connection) -> None:
            current = _revision(conn)
            target = min(revision, current)
            if target <= _compact_revision(conn):
                return
            # Rows superseded at or below the target, then tombstones at or below it.
            conn.execute(
                "DELETE FROM kine WHERE id IN (SELECT prev_revision FROM kine "
                "WHERE id <= ? AND prev_revision != 0)",
                (target,),
            )
            conn.execute("DELETE FROM kine WHERE deleted = 1 AND id <= ?", (target,))
            conn.execute(
                "INSERT INTO meta (k, v) VALUES ('compact_revision', ?) "
                "ON CONFLICT(k) DO UPDATE SET v = excluded.v",
                (target,),
            )
            self._compacted_to = target

        await self._submit(run)

    # ---- reads ---------------------------------------------------------------------------

    def _read_conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    def _check_revision(self, conn: sqlite3.Connection, revision: int) -> int:
        current = _revision(conn)
        if revision == 0:
            return current
        compacted = _compact_revision(conn)
        if revision < compacted:
            raise Compacted(revision, compacted)
        if revision > current:
            raise FutureRevision(revision, current)
        return revision

    async def current_revision(self) -> int:
        assert self._reader is not None
        return _revision(self._reader)

    async def get(self, key: str, revision: int = 0) -> KV | None:
        conn = self._reader
        assert conn is not None
        if revision == 0:
            # The latest row: one statement is one snapshot, no transaction or revision check
            # needed (the row carries its own revision). The hottest read: every update and
            # delete starts with it.
            row = conn.execute(_LATEST, (key,)).fetchone()
        else:
            conn.execute("BEGIN")
            try:
                at = self._check_revision(conn, revision)
                row = conn.execute(_AT, (key, at)).fetchone()
            finally:
                conn.execute("COMMIT")
        if row is None or row[1]:
            return None
        return KV(key, bytes(row[3]), int(row[0]), int(row[2]))

    async def list(
        self, prefix: str, *, revision: int = 0, limit: int = 0, continue_after: str | None = None
    ) -> ListResult:
        return await self._in_thread(self._list, prefix, revision, limit, continue_after)

    def _list(
        self, prefix: str, revision: int, limit: int, continue_after: str | None
    ) -> ListResult:
        conn = self._read_conn()
        conn.execute("BEGIN")
        try:
            at = self._check_revision(conn, revision)
            continuing = continue_after is not None and continue_after >= prefix
            sql = _LIST.format(low=">" if continuing else ">=") + (" LIMIT ?" if limit > 0 else "")
            low = continue_after if continuing and continue_after is not None else prefix
            params: tuple[Any, ...] = (low, _prefix_end(prefix), at)
            if limit > 0:
                # One row past the page tells whether there is more; SQLite's integers are
                # int64, and so are the API's limits (9223372036854775807 is a valid one).
                params += (min(limit + 1, 2**63 - 1),)
            rows = conn.execute(sql, params).fetchall()
            more = limit > 0 and len(rows) > limit
            remaining = 0
            if more:
                # The keys after the page at the same revision. Counting them with SQL for
                # every page made paging through 150 000 pods quadratic (68 s instead of 5 s):
                # the live keys of the snapshot are read once, every page of it bisects them.
                names = self._live_names(conn, prefix, at)
                remaining = len(names) - bisect.bisect_right(names, rows[limit - 1][0])
        finally:
            conn.execute("COMMIT")
        rows = rows[:limit] if more else rows
        items = [KV(r[0], bytes(r[3]), int(r[1]), int(r[2])) for r in rows]
        return ListResult(items, at, items[-1].key if more else None, int(remaining))

    def _live_names(self, conn: sqlite3.Connection, prefix: str, at: int) -> builtins.list[str]:
        """The live keys under ``prefix`` at revision ``at`` (in the caller's transaction),
        kept for the last few list snapshots: a revision's keys never change."""
        key = (prefix, at)
        with self._live_names_lock:
            names = self._live_names_cache.get(key)
            if names is not None:
                self._live_names_cache.move_to_end(key)
                return names
        names = [row[0] for row in conn.execute(_LIVE_NAMES, (prefix, _prefix_end(prefix), at))]
        with self._live_names_lock:
            self._live_names_cache[key] = names
            while len(self._live_names_cache) > _LIVE_NAMES_KEPT:
                self._live_names_cache.popitem(last=False)
        return names

    async def count(self, prefix: str) -> int:
        return await self._in_thread(self._count, prefix)

    def _count(self, prefix: str) -> int:
        conn = self._read_conn()
        (count,) = conn.execute(_COUNT_LATEST, (prefix, _prefix_end(prefix))).fetchone()
        return int(count)

    # ---- watch ---------------------------------------------------------------------------

    def watch(self, prefix: str, after_revision: int) -> HubWatch:
        return HubWatch(self._hub, prefix, after_revision, self._replay, lambda: self._compacted_to)

    async def _replay(self, prefix: str, after: int, until: int) -> builtins.list[WatchEvent]:
        return await self._in_thread(_events_between, self._read_conn, prefix, after, until)


def _create_row(conn: sqlite3.Connection, key: str, value: bytes) -> tuple[int, WatchEvent]:
    latest = conn.execute(_LATEST, (key,)).fetchone()
    if latest is not None and not latest[1]:
        raise AlreadyExists(key, latest[0])
    prev = latest[0] if latest is not None else 0
    cursor = conn.execute(
        "INSERT INTO kine (name, created, deleted, create_revision, prev_revision, value)"
        " VALUES (?, 1, 0, 0, ?, ?)",
        (key, prev, value),
    )
    rev = int(cursor.lastrowid or 0)
    conn.execute("UPDATE kine SET create_revision = ? WHERE id = ?", (rev, rev))
    return rev, WatchEvent(EventType.ADDED, key, value, None, rev)


def _update_row(
    conn: sqlite3.Connection, key: str, value: bytes, expected_revision: int
) -> tuple[int, WatchEvent]:
    latest = conn.execute(_LATEST, (key,)).fetchone()
    if latest is None or latest[1]:
        raise NotFound(key)
    if latest[0] != expected_revision:
        raise Conflict(key, latest[0])
    cursor = conn.execute(
        "INSERT INTO kine (name, created, deleted, create_revision, prev_revision, value)"
        " VALUES (?, 0, 0, ?, ?, ?)",
        (key, latest[2], latest[0], value),
    )
    rev = int(cursor.lastrowid or 0)
    return rev, WatchEvent(EventType.MODIFIED, key, value, bytes(latest[3]), rev)


def _delete_row(
    conn: sqlite3.Connection, key: str, expected_revision: int | None
) -> tuple[tuple[int, bytes], WatchEvent]:
    latest = conn.execute(_LATEST, (key,)).fetchone()
    if latest is None or latest[1]:
        raise NotFound(key)
    if expected_revision is not None and latest[0] != expected_revision:
        raise Conflict(key, latest[0])
    last = bytes(latest[3])
    cursor = conn.execute(
        "INSERT INTO kine (name, created, deleted, create_revision, prev_revision, value)"
        " VALUES (?, 0, 1, ?, ?, ?)",
        (key, latest[2], latest[0], last),
    )
    rev = int(cursor.lastrowid or 0)
    return (rev, last), WatchEvent(EventType.DELETED, key, last, last, rev)


_WRITERS: dict[str, Callable[[sqlite3.Connection, Write], tuple[Any, WatchEvent]]] = {
    "create": lambda conn, w: _create_row(conn, w.key, w.value),
    "update": lambda conn, w: _update_row(conn, w.key, w.value, int(w.expected_revision or 0)),
    "delete": lambda conn, w: _delete_row(conn, w.key, w.expected_revision),
}


class _Published(builtins.list[WatchEvent]):
    """The changes of a batch, published together (``_deliver`` tells them from a result)."""


def _events_between(
    connect: Callable[[], sqlite3.Connection], prefix: str, after: int, until: int
) -> list[WatchEvent]:
    """The logged changes under ``prefix`` with ``after < revision <= until``, in order."""
    conn = connect()
    events: list[WatchEvent] = []
    cursor = after
    while True:
        rows = conn.execute(_EVENTS, (cursor, until, prefix, _prefix_end(prefix))).fetchall()
        for rev, name, created, deleted, value, prev in rows:
            kind = (
                EventType.DELETED if deleted else EventType.ADDED if created else EventType.MODIFIED
            )
            previous = None if prev is None or created else bytes(prev)
            events.append(WatchEvent(kind, name, bytes(value), previous, int(rev)))
        if len(rows) < 1000:
            return events
        cursor = int(rows[-1][0])
