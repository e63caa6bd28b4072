"""The reading half of the registry: encoding, get, list (paged, selected, cached) and watch.

Objects come out of the store with ``metadata.resourceVersion`` injected from the store
revision (it is never stored); lists and watches without selectors pass the stored bytes on
with the resourceVersion spliced in, undecoded. ``Registry`` adds the writes on top.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from taintplane.api.features import FeatureGates
from taintplane.api.scheme import SCHEME, ResourceType, Scheme
from taintplane.api.selectors import FieldSelector, LabelSelector
from taintplane.apiserver.fairness import offload, yield_turn
from taintplane.apiserver.list_options import EXACT, decode_continue, encode_continue
from taintplane.apiserver.status import APIError, from_store_error, too_large_resource_version
from taintplane.apiserver.strategies import Strategy, strategy_for
from taintplane.apiserver.strategies.base import meta
from taintplane.clock import Clock
from taintplane.store import errors as store_errors
from taintplane.store.interface import KV, EventType, ListResult, Store, Watch, WatchEvent

__all__ = [
    "ListPage",
    "RawListPage",
    "RegistryReads",
    "WatchItem",
    "WatchProgress",
    "encode_for_storage",
    "parse_resource_version",
]

_METADATA = b'"metadata":{'
#: Objects decoded and matched in one step of a list (see RegistryReads.list): a few ms.
_CHUNK = 100


def encode_for_storage(obj: dict[str, Any]) -> bytes:
    """The bytes the store keeps for ``obj``: JSON without ``metadata.resourceVersion`` (the
    store's revision is the resourceVersion), apiVersion, kind and metadata first: then the
    first nested object in the bytes is metadata, which lets reads splice the resourceVersion
    in without decoding."""
    stored: dict[str, Any] = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind")}
    stored["metadata"] = {k: v for k, v in meta(obj).items() if k != "resourceVersion"}
    stored.update((k, v) for k, v in obj.items() if k not in stored)
    # Copied to a bytes of its own size: orjson's result keeps the whole buffer it wrote into
    # (4 KiB at least), and these bytes live on in the watch hub's buffer of recent changes
    # (20 000 of them: ~80 MB more than the 1-2 KB a pod needs).
    return bytes(memoryview(orjson.dumps(stored)))


@dataclass
class ListPage:
    items: list[dict[str, Any]]
    resource_version: str
    continue_token: str | None
    #: Set on a page with a continue token of a list without selectors (as upstream: with a
    #: selector the store's count would include objects the selector drops).
    remaining_item_count: int | None = None

    def list_meta(self) -> dict[str, Any]:
        return _list_meta(self.resource_version, self.continue_token, self.remaining_item_count)


@dataclass
class RawListPage:
    """A list page as encoded items (see ``RegistryReads.list_raw_page``)."""

    items: Sequence[bytes]
    resource_version: str
    continue_token: str | None
    remaining_item_count: int | None = None

    def list_meta(self) -> dict[str, Any]:
        return _list_meta(self.resource_version, self.continue_token, self.remaining_item_count)


def _list_meta(revision: str, token: str | None, remaining: int | None) -> dict[str, Any]:
    """The list's ListMeta, fields in upstream's order."""
    list_meta: dict[str, Any] = {"resourceVersion": revision}
    if token:
        list_meta["continue"] = token
        if remaining is not None:
            list_meta["remainingItemCount"] = remaining
    return list_meta


@dataclass
class WatchItem:
    type: str
    #: The object; for raw items (see ``raw``) decoded only when someone asks.
    _object: dict[str, Any] | None = None
    #: The object's JSON with its resourceVersion, when the watch could pass it undecoded.
    raw: bytes | None = None

    @property
    def object(self) -> dict[str, Any]:
        if self._object is None:
            assert self.raw is not None
            self._object = orjson.loads(self.raw)
        return self._object

    @property
    def encoded(self) -> bytes:
        return self.raw if self.raw is not None else orjson.dumps(self.object)


@dataclass
class WatchProgress:
    """How far a watch has got, for bookmarks: a revision such that every change up to it
    has been handed to the consumer."""

    revision: int = 0
    source: Watch | None = None

    def bookmark(self) -> int:
        if self.source is not None:
            caught_up = self.source.bookmark_revision()
            if caught_up is not None:
                return max(caught_up, self.revision)
        return self.revision


_INCONSISTENT_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list."
)


@dataclass(frozen=True)
class _ListStart:
    """Where a list reads: at ``revision`` (0: the latest), from after ``after`` (None: from
    the start), under ``prefix``; ``paging`` when a continue token said so."""

    prefix: str
    revision: int
    after: str | None
    paging: bool

    def token(self, last_key: str, revision: int) -> str:
        """The continue token of a page that ended at ``last_key``: the next one starts just
        after it (etcd3's lastKey followed by a NUL)."""
        return encode_continue(last_key + "\x00", self.prefix, revision)


class RegistryReads:
    """Reads of every kind, over a ``Store``; shared state for the writes."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        features: FeatureGates | None = None,
        scheme: Scheme = SCHEME,
    ) -> None:
        self.store = store
        self.clock = clock
        self.features = features or FeatureGates()
        self.scheme = scheme
        self._strategies = {rt: strategy_for(rt, self.features, clock) for rt in scheme}
        # Namespaces known to exist and not be terminating. Every namespace write goes through
        # this registry (the embedded store has one writer process), which forgets the entry;
        # a store shared by several API servers will need a watch here instead.
        self._open_namespaces: set[str] = set()
        # Writes seen per kind, and whole-kind lists kept between them (``list_cached``).
        self._writes: dict[ResourceType, int] = {}
        self._cached_lists: dict[ResourceType, tuple[int, Sequence[dict[str, Any]]]] = {}

    def strategy(self, resource: ResourceType) -> Strategy:
        return self._strategies[resource]

    # ---- encoding --------------------------------------------------------------------------

    @staticmethod
    def _decode(kv: KV) -> dict[str, Any]:
        obj: dict[str, Any] = orjson.loads(kv.value)
        meta(obj)["resourceVersion"] = str(kv.mod_revision)
        return obj

    @staticmethod
    def _encode(obj: dict[str, Any]) -> bytes:
        return encode_for_storage(obj)

    @staticmethod
    def splice(kv: KV) -> bytes:
        """The stored JSON with ``metadata.resourceVersion`` injected, without decoding it
        (STORAGE.md §2.4: about 3x cheaper than an orjson round trip)."""
        raw = kv.value
        at = raw.find(_METADATA)
        if at < 0 or raw.find(b"{", 1) != at + len(_METADATA) - 1:
            return orjson.dumps(RegistryReads._decode(kv))
        cut = at + len(_METADATA)
        return raw[:cut] + b'"resourceVersion":"%d",' % kv.mod_revision + raw[cut:]

    def _key(self, resource: ResourceType, namespace: str, name: str) -> str:
        if resource.kind == "Namespace" and resource.group == "":
            # Any write (or read for writing) of a namespace: its cached state may change.
            self._open_namespaces.discard(name)
        return resource.storage_key(namespace, name)

    def _prefix(self, resource: ResourceType, namespace: str) -> str:
        prefix = resource.storage_prefix()
        return f"{prefix}{namespace}/" if resource.namespaced and namespace else prefix

    # ---- reads -----------------------------------------------------------------------------

    async def get(self, resource: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        return self._decode(await self._get_kv(resource, namespace, name))

    async def _get_kv(self, resource: ResourceType, namespace: str, name: str) -> KV:
        kv = await self.store.get(self._key(resource, namespace, name))
        if kv is None:
            raise APIError.not_found(resource, name)
        return kv

    async def list(
        self,
        resource: ResourceType,
        namespace: str,
        *,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
        limit: int = 0,
        continue_token: str | None = None,
        resource_version: str = "",
        resource_version_match: str = "",
    ) -> ListPage:
        strategy = self.strategy(resource)
        start = await self._list_start(
            resource,
            namespace,
            continue_token,
            resource_version,
            resource_version_match,
            limit,
        )
        selected = labels is not None or fields is not None
        items: list[dict[str, Any]] = []
        # With selectors, a page of matches may need several store pages.
        page_size = max(limit, 500) if limit else 0
        revision, after = start.revision, start.after
        while True:
            page = await self._page(start, revision, page_size, after)
            revision = page.revision
            matched: list[tuple[int, KV, dict[str, Any]]] = []
            # Decoded and matched in chunks, between which other requests get their turn
            # (in the worker thread for a request in a seat for expensive work).
            for first in range(0, len(page.items), _CHUNK):
                if first:
                    await yield_turn()
                chunk = page.items[first : first + _CHUNK]
                matched += await offload(_matching, chunk, first, labels, fields, strategy)
            for at, kv, obj in matched:
                items.append(obj)
                if limit and len(items) == limit:
                    if at == len(page.items) and page.continue_after is None:
                        return ListPage(items, str(revision), None)
                    token = start.token(kv.key, revision)
                    remaining = len(page.items) - at + page.remaining
                    return ListPage(items, str(revision), token, None if selected else remaining)
            if page.continue_after is None:
                return ListPage(items, str(revision), None)
            after = page.continue_after

    async def list_cached(self, resource: ResourceType) -> Sequence[dict[str, Any]]:
        """Every object of a cluster-scoped kind, kept in memory until the next write to the
        kind (for lookups on hot paths, such as admission reading PriorityClasses on every
        pod create). Callers must not modify the objects.

        A list is kept only if no write completed while it was read, so a list read before a
        write commits is never kept past it. Like the open-namespace cache, this relies on
        every write going through this registry; API servers sharing a store will need a
        watch here instead."""
        writes = self._writes.get(resource, 0)
        cached = self._cached_lists.get(resource)
        if cached is not None and cached[0] == writes:
            return cached[1]
        items = (await self.list(resource, "")).items
        if self._writes.get(resource, 0) == writes:
            self._cached_lists[resource] = (writes, items)
        return items

    def _written(self, resource: ResourceType) -> None:
        self._writes[resource] = self._writes.get(resource, 0) + 1

    async def list_raw_page(
        self,
        resource: ResourceType,
        namespace: str,
        *,
        limit: int = 0,
        continue_token: str | None = None,
        resource_version: str = "",
        resource_version_match: str = "",
    ) -> RawListPage:
        """A list page as encoded items, for lists without selectors (the common large case:
        informers and ``-o json``): no object is decoded."""
        start = await self._list_start(
            resource, namespace, continue_token, resource_version, resource_version_match, limit
        )
        page = await self._page(start, start.revision, limit, start.after)
        items = [self.splice(kv) for kv in page.items]
        if page.continue_after is None:
            return RawListPage(items, str(page.revision), None)
        token = start.token(page.continue_after, page.revision)
        return RawListPage(items, str(page.revision), token, page.remaining)

    async def _list_start(
        self,
        resource: ResourceType,
        namespace: str,
        continue_token: str | None,
        resource_version: str,
        match: str,
        limit: int,
    ) -> _ListStart:
        """Where to list, as the etcd3 store's GetList reads the options (the handler has
        validated them)."""
        prefix = self._prefix(resource, namespace)
        legacy = resource_version in ("", "0")
        if continue_token:
            start_key, revision = decode_continue(continue_token, prefix)
            if not legacy:
                raise APIError.bad_request(
                    "specifying resource version is not allowed when using continue"
                )
            # Tokens made here start just after a key (its name + NUL); the store goes on
            # after a key, so one that does not (never made here) continues after itself.
            after = start_key.removesuffix("\x00")
            # A negative revision (the token of a 410 for a compacted one): the latest.
            return _ListStart(prefix, max(revision, 0), after, paging=True)
        if legacy:
            # The latest state: most recent, and "any" is never older.
            return _ListStart(prefix, 0, None, paging=False)
        revision = parse_resource_version(resource_version)
        current = await self.store.current_revision()
        if revision > current:
            raise from_store_error(store_errors.FutureRevision(revision, current), resource, "")
        # Exact when asked, and (legacy) for the first page of a limited list; otherwise
        # NotOlderThan the given revision, which the latest state always is.
        if match == EXACT or (not match and limit > 0):
            return _ListStart(prefix, revision, None, paging=False)
        return _ListStart(prefix, 0, None, paging=False)

    async def _page(
        self, start: _ListStart, revision: int, limit: int, after: str | None
    ) -> ListResult:
        try:
            return await self.store.list(
                start.prefix, revision=revision, limit=limit, continue_after=after
            )
        except store_errors.Compacted as error:
            raise _compacted(start) from error
        except store_errors.FutureRevision as error:
            # Only a continue token names a revision unchecked before here: one the store
            # has not reached (forged; tokens made here never do) is the cacher's 504.
            raise too_large_resource_version(error) from error

    # ---- watch -----------------------------------------------------------------------------

    async def watch(
        self,
        resource: ResourceType,
        namespace: str,
        *,
        resource_version: str = "",
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
        progress: WatchProgress | None = None,
        send_initial_events: bool | None = None,
        initial_events_end: bool = False,
    ) -> AsyncIterator[WatchItem]:
        """Changes after ``resource_version``; first the current objects as ADDED when
        ``send_initial_events`` says so (unset: from "" or "0", as a legacy watch), then, with
        ``initial_events_end``, the BOOKMARK annotated ``k8s.io/initial-events-end`` that ends
        them (a watch-list). Selectors turn moves in and out of the selection into ADDED and
        DELETED (a move out carries the content that matched)."""
        progress = progress if progress is not None else WatchProgress()
        strategy = self.strategy(resource)

        def selected(obj: dict[str, Any] | None) -> bool:
            if obj is None:
                return False
            if labels is not None and not labels.matches(meta(obj).get("labels")):
                return False
            return fields is None or fields.matches(strategy.field_values(obj))

        legacy = resource_version in ("", "0")
        if send_initial_events is None:
            send_initial_events = legacy
        if send_initial_events:
            # NotOlderThan the given revision: the latest state (a future one is a 504).
            if labels is None and fields is None:
                # The stored bytes go out undecoded, as a list's do (half the work).
                raw = await self.list_raw_page(
                    resource, namespace, resource_version=resource_version
                )
                for item in raw.items:
                    yield WatchItem("ADDED", raw=item)
                after = int(raw.resource_version)
            else:
                page = await self.list(
                    resource,
                    namespace,
                    labels=labels,
                    fields=fields,
                    resource_version=resource_version,
                )
                for obj in page.items:
                    yield WatchItem("ADDED", obj)
                after = int(page.resource_version)
            if initial_events_end:
                yield WatchItem("BOOKMARK", _initial_events_end(resource, after))
        elif legacy:
            after = await self.store.current_revision()  # from now on, nothing before
        else:
            after = parse_resource_version(resource_version)
        watch = self.store.watch(self._prefix(resource, namespace), after)
        progress.revision, progress.source = after, watch
        try:
            async for event in watch:
                progress.revision = event.revision
                if labels is None and fields is None:
                    # No selection to move in or out of: the event type is the answer, and the
                    # stored bytes go out with the resourceVersion spliced in, undecoded.
                    kv = KV(event.key, event.value, event.revision, 0)
                    yield WatchItem(event.type.value, raw=self.splice(kv))
                    continue
                obj = orjson.loads(event.value)
                meta(obj)["resourceVersion"] = str(event.revision)
                previous = orjson.loads(event.prev_value) if event.prev_value is not None else None
                now_in = event.type is not EventType.DELETED and selected(obj)
                was_in = event.type is not EventType.ADDED and selected(previous)
                if event.type is EventType.DELETED:
                    was_in = selected(obj)
                if now_in and was_in:
                    yield WatchItem("MODIFIED", obj)
                elif now_in:
                    yield WatchItem("ADDED", obj)
                elif was_in:
                    yield WatchItem("DELETED", _left_selection(event, obj, previous))
        except store_errors.Compacted as error:
            raise from_store_error(error, resource, "") from error
        finally:
            watch.close()


def _matching(
    kvs: Sequence[KV],
    offset: int,
    labels: LabelSelector | None,
    fields: FieldSelector | None,
    strategy: Strategy,
) -> list[tuple[int, KV, dict[str, Any]]]:
    """The decoded objects of ``kvs`` the selectors match, each with its 1-based position in
    the page (``offset``: where ``kvs`` starts in it)."""
    found = []
    for at, kv in enumerate(kvs, start=offset + 1):
        obj = RegistryReads._decode(kv)
        if labels is not None and not labels.matches(meta(obj).get("labels")):
            continue
        if fields is not None and not fields.matches(strategy.field_values(obj)):
            continue
        found.append((at, kv, obj))
    return found


def _left_selection(
    event: WatchEvent, obj: dict[str, Any], previous: dict[str, Any] | None
) -> dict[str, Any]:
    """What a DELETED carries for an object the watch no longer selects: the content the
    watcher last saw match, at this event's resourceVersion (cache_watcher.go
    convertToWatchEvent), not the new content that does not match. A deletion's value
    already is the object's last content."""
    if event.type is EventType.DELETED or previous is None:
        return obj
    meta(previous)["resourceVersion"] = str(event.revision)
    return previous


def _compacted(start: _ListStart) -> APIError:
    """etcd3's interpretListError for a compacted revision: a continued list gets a token
    that continues where it would have, at the latest revision (-1), with its 410."""
    if not start.paging:  # an Exact list below the compacted revision
        return APIError.gone("The resourceVersion for the provided list is too old.")
    expired = APIError.gone(_INCONSISTENT_CONTINUE)
    resume = start.after + "\x00" if start.after is not None else start.prefix
    expired.status["metadata"]["continue"] = encode_continue(resume, start.prefix, -1)
    return expired


def _initial_events_end(resource: ResourceType, revision: int) -> dict[str, Any]:
    """The bookmark that ends a watch-list's initial events (metav1.InitialEventsAnnotationKey),
    at the revision they were read at."""
    return {
        "kind": resource.kind,
        "apiVersion": resource.api_version,
        "metadata": {
            "resourceVersion": str(revision),
            "annotations": {"k8s.io/initial-events-end": "true"},
        },
    }


def parse_resource_version(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise APIError.bad_request(f"invalid resource version: {text}")
    return value
