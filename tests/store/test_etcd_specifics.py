"""What the etcd backend does beyond the shared conformance suite: etcd's own compaction,
the watch window of the in-process hub, several API servers on one etcd, endpoints."""

import asyncio
import socket

import pytest

from taintplane.store.errors import Compacted
from taintplane.store.etcd import EtcdStore, Unavailable
from taintplane.store.etcd_target import EtcdTarget, EtcdURLError, parse_etcd_url
from taintplane.store.interface import EventType
from tests.store.etcd_server import EtcdServer


async def take(watch, count):
    events = []

    async def collect():
        async for event in watch:
            events.append(event)
            if len(events) == count:
                return

    await asyncio.wait_for(collect(), 10)
    return events


def test_a_continued_list_at_a_revision_another_server_compacted_is_refused(etcd_server):
    async def scenario():
        url = etcd_server.url()
        ours, other = await EtcdStore(url).open(), await EtcdStore(url).open()
        try:
            for i in range(5):
                await ours.create(f"/p/{i}", b"v")
            page = await ours.list("/p/", limit=2)
            kv = await ours.get("/p/0")
            assert kv is not None
            await ours.update("/p/0", b"w", kv.mod_revision)
            # Compacted by another API server: only etcd knows, and says so.
            await other.compact(await other.current_revision())
            with pytest.raises(Compacted) as caught:
                await ours.list(
                    "/p/", revision=page.revision, limit=2, continue_after=page.continue_after
                )
            assert caught.value.requested == page.revision
            with pytest.raises(Compacted):
                await ours.get("/p/0", revision=page.revision)
            assert [k.key for k in (await ours.list("/p/")).items] == [f"/p/{i}" for i in range(5)]
        finally:
            await ours.close()
            await other.close()

    asyncio.run(scenario())


def test_a_watch_resumes_across_api_servers_sharing_one_etcd(etcd_server):
    async def scenario():
        url = etcd_server.url()
        a, b = await EtcdStore(url).open(), await EtcdStore(url).open()
        try:
            base = await a.current_revision()
            first = b.watch("/pods/", base)
            created = await a.create("/pods/web", b"1")
            updated = await a.update("/pods/web", b"2", created)
            seen = await take(first, 1)
            first.close()
            # Resume on the other server from the last event seen: nothing skipped or repeated.
            second = a.watch("/pods/", seen[-1].revision)
            deleted, _ = await b.delete("/pods/web")
            seen += await take(second, 2)
            second.close()
            assert [(e.type, e.revision, e.value, e.prev_value) for e in seen] == [
                (EventType.ADDED, created, b"1", None),
                (EventType.MODIFIED, updated, b"2", b"1"),
                (EventType.DELETED, deleted, b"2", b"2"),
            ]
        finally:
            await a.close()
            await b.close()

    asyncio.run(scenario())


def test_a_watch_from_before_what_the_hub_holds_is_too_old(etcd_server):
    async def scenario():
        url = etcd_server.url()
        writer = await EtcdStore(url).open()
        before = await writer.create("/w/early", b"x")
        await writer.create("/w/late", b"y")
        # A server started after those writes holds none of them (kube-apiserver's watch
        # cache answers "too old resource version" too); so does one whose buffer moved on.
        late = await EtcdStore(url, watch_buffer=3).open()
        try:
            with pytest.raises(Compacted):
                await take(late.watch("/w/", before), 1)
            start = await late.current_revision()
            revs = [await late.create(f"/w/{i}", b"z") for i in range(5)]
            with pytest.raises(Compacted):
                await take(late.watch("/w/", start), 1)
            recent = await take(late.watch("/w/", revs[1]), 3)
            assert [e.revision for e in recent] == revs[2:]
        finally:
            await writer.close()
            await late.close()

    asyncio.run(scenario())


def test_servers_with_different_prefixes_share_an_etcd_without_seeing_each_other(etcd_server):
    async def scenario():
        a = await EtcdStore(etcd_server.url("/team-a")).open()
        b = await EtcdStore(etcd_server.url("/team-a-b")).open()
        try:
            await a.create("/k", b"a")
            await b.create("/k", b"b")
            assert [(kv.key, kv.value) for kv in (await a.list("")).items] == [("/k", b"a")]
            assert await a.count("") == 1
            assert [(kv.key, kv.value) for kv in (await b.list("")).items] == [("/k", b"b")]
        finally:
            await a.close()
            await b.close()

    asyncio.run(scenario())


def test_a_dead_first_endpoint_fails_over_to_the_next(etcd_server):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = sock.getsockname()[1]

    async def scenario():
        url = f"etcd://127.0.0.1:{dead},{etcd_server.endpoint}/t-failover"
        store = await EtcdStore(url).open()
        try:
            rev = await store.create("/k", b"v")
            kv = await store.get("/k")
            assert kv is not None
            assert kv.mod_revision == rev
        finally:
            await store.close()

    asyncio.run(scenario())


def test_an_unreachable_etcd_is_a_clear_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    async def scenario():
        with pytest.raises(Unavailable) as caught:
            await EtcdStore(f"etcd://127.0.0.1:{port}", connect_timeout=0.5).open()
        assert str(caught.value).startswith(f"cannot reach etcd at 127.0.0.1:{port} (")
        assert "start etcd there" in str(caught.value)

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("url", "target"),
    [
        ("etcd://127.0.0.1:2379", EtcdTarget((("127.0.0.1", 2379),))),
        (
            "etcd://h1:2379,h2.example:22379/team-a",
            EtcdTarget((("h1", 2379), ("h2.example", 22379)), "/team-a"),
        ),
        ("etcd://[::1]:2379/", EtcdTarget((("::1", 2379),))),
        ("etcd://a:1/x/y/", EtcdTarget((("a", 1),), "/x/y")),
    ],
)
def test_etcd_urls(url, target):
    assert parse_etcd_url(url) == target


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("etcd://", "names no endpoint"),
        ("etcd://127.0.0.1", "endpoint '127.0.0.1' is not HOST:PORT"),
        ("etcd://h1:2379,", "endpoint '' is not HOST:PORT"),
        ("etcd://h1:99999", "port 99999 is out of range"),
        ("etcd://h1:2379/a b", "key prefix '/a b' may hold only"),
        ("http://h1:2379", "is not an etcd URL"),
    ],
)
def test_malformed_etcd_urls_are_refused(url, message):
    with pytest.raises(EtcdURLError, match=message.replace("(", r"\(")):
        parse_etcd_url(url)


def test_describe_and_url_round_trip():
    target = parse_etcd_url("etcd://[::1]:2379,h:2/p")
    assert target.describe() == "[::1]:2379,h:2"
    assert parse_etcd_url(target.url()) == target


def test_server_fixture_picks_fresh_prefixes(etcd_server: EtcdServer):
    assert etcd_server.url() != etcd_server.url()


def test_write_many_falls_back_to_one_txn_per_write(etcd_server):
    """etcd has no write_many: a batch is its writes as concurrent single-object Txns, with
    the same per-write results and errors as SQLite's one transaction."""
    from taintplane.store.batch import Write, write_many
    from taintplane.store.errors import AlreadyExists, Conflict, NotFound

    async def scenario():
        store = await EtcdStore(etcd_server.url("/write-many")).open()
        try:
            taken = await store.create("/b/taken", b"t")
            results = await write_many(
                store,
                [
                    Write("create", "/b/new", b"n"),
                    Write("create", "/b/taken", b"again"),
                    Write("update", "/b/taken", b"stale", taken - 1),
                    Write("delete", "/b/none"),
                ],
            )
            new, again, stale, none = results
            assert isinstance(new, int)
            assert isinstance(again, AlreadyExists)
            assert isinstance(stale, Conflict)
            assert isinstance(none, NotFound)
            created = await store.get("/b/new")
            assert created is not None
            assert created.value == b"n"
        finally:
            await store.close()

    asyncio.run(scenario())
