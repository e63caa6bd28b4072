"""Informers: a local cache of one resource kept current by list-then-watch.

The informer lists, replaces its cache (announcing the differences), then watches from the
list's resourceVersion. A watch that ends is resumed from the last resourceVersion seen; one
that answers 410 (compacted) is replaced by a fresh list, so no change is ever missed or seen
twice. Handlers run on the event loop, in event order.

Any other failure (a 403 for a component without the right, a server out of reach) is logged
in one line, as client-go's reflector logs it (``"Failed to watch" err="failed to list
*v1.Pod: …"``), and the informer lists again after the reflector's back-off on its clock:
800 ms doubling to 30 s, each wait up to twice as long by jitter, started over once two
minutes pass without a failure.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from taintplane.api.scheme import ResourceType
from taintplane.backoff import ExponentialBackoffManager
from taintplane.client.client import ApiError, Client
from taintplane.client.workqueue import EXPECTED
from taintplane.clock import Clock, RealClock

__all__ = ["Informer", "object_key"]

log = logging.getLogger(__name__)

#: The ``reflector`` named in log lines (client-go names the informer factory's call site).
REFLECTOR = "taintplane/client/informer.py"

Handler = Callable[[dict[str, Any]], None]
UpdateHandler = Callable[[dict[str, Any], dict[str, Any]], None]
#: An index function: the values under which an object is filed (e.g. its node's name).
IndexFunc = Callable[[dict[str, Any]], Iterable[str]]
#: Applied to every object before it is cached or handed to a handler (client-go's
#: TransformFunc); it may change the object in place and returns what to keep.
Transform = Callable[[dict[str, Any]], dict[str, Any]]


def object_key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta['name']}" if namespace else str(meta["name"])


class Informer:
    def __init__(
        self,
        client: Client,
        resource: ResourceType,
        *,
        namespace: str = "",
        on_add: Handler | None = None,
        on_update: UpdateHandler | None = None,
        on_delete: Handler | None = None,
        transform: Transform | None = None,
        field_selector: str = "",
        clock: Clock | None = None,
        backoff: ExponentialBackoffManager | None = None,
    ) -> None:
        self.client = client
        self.clock = clock or RealClock()
        #: The reflector's back-off between failed list-and-watch rounds.
        self.backoff = backoff or ExponentialBackoffManager(self.clock)
        self.resource = resource
        self.namespace = namespace
        #: Lists and watches only what this selects (a kubelet's pods: ``spec.nodeName=NAME``).
        self.field_selector = field_selector
        self._transform = transform
        self.cache: dict[str, dict[str, Any]] = {}
        self.synced = asyncio.Event()
        self._adds: list[Handler] = [on_add] if on_add else []
        self._updates: list[UpdateHandler] = [on_update] if on_update else []
        self._deletes: list[Handler] = [on_delete] if on_delete else []
        self._index_funcs: dict[str, IndexFunc] = {}
        self._indexes: dict[str, defaultdict[str, dict[str, dict[str, Any]]]] = {}
        self.resource_version = ""

    def add_handlers(
        self,
        on_add: Handler | None = None,
        on_update: UpdateHandler | None = None,
        on_delete: Handler | None = None,
    ) -> None:
        """Further handlers (for informers shared by several components); they run after
        the cache and indexes are updated, in the order they were added. As client-go's
        AddEventHandler, a handler added to a running informer is first told of every object
        already cached, as added."""
        if on_add:
            self._adds.append(on_add)
            for obj in list(self.cache.values()):
                on_add(obj)
        if on_update:
            self._updates.append(on_update)
        if on_delete:
            self._deletes.append(on_delete)

    def add_index(self, name: str, func: IndexFunc) -> None:
        """File every cached object under ``func(obj)`` (before the informer starts)."""
        self._index_funcs[name] = func
        index: defaultdict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
        for key, obj in self.cache.items():
            for value in func(obj):
                index[value][key] = obj
        self._indexes[name] = index

    def has_index(self, name: str) -> bool:
        return name in self._index_funcs

    def by_index(self, name: str, value: str) -> list[dict[str, Any]]:
        bucket = self._indexes[name].get(value)
        return list(bucket.values()) if bucket else []

    def index_values(self, name: str) -> list[str]:
        """Every value some cached object is filed under (client-go's ``ListIndexFuncValues``)."""
        return list(self._indexes[name])

    def index_count(self, name: str, value: str) -> int:
        """How many cached objects are filed under ``value``, without listing them."""
        bucket = self._indexes[name].get(value)
        return len(bucket) if bucket else 0

    def get(self, key: str) -> dict[str, Any] | None:
        return self.cache.get(key)

    def _store(self, key: str, obj: dict[str, Any] | None) -> dict[str, Any] | None:
        """Put ``obj`` under ``key`` (None removes it), keeping the indexes; returns the old."""
        old = self.cache.pop(key, None) if obj is None else self.cache.get(key)
        if obj is not None:
            self.cache[key] = obj
        for name, func in self._index_funcs.items():
            index = self._indexes[name]
            values = [] if obj is None else list(func(obj))
            if old is not None:
                for value in func(old):
                    if value in values:
                        continue  # replaced below, in place: a bucket keeps the cache's order
                    bucket = index.get(value)
                    if bucket is not None:
                        bucket.pop(key, None)
                        if not bucket:
                            del index[value]
            if obj is not None:
                for value in values:
                    index[value][key] = obj
        return old

    def _added(self, obj: dict[str, Any]) -> None:
        for handler in self._adds:
            handler(obj)

    def _updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        for handler in self._updates:
            handler(old, new)

    def _deleted(self, obj: dict[str, Any]) -> None:
        for handler in self._deletes:
            handler(obj)

    async def run(self, *, resume_from: str = "") -> None:
        """Keep the cache current until cancelled. ``resume_from`` starts by watching from
        that resourceVersion over the current cache instead of listing first."""
        resume = resume_from
        while True:
            listing = False
            try:
                if resume:
                    self.resource_version, resume = resume, ""
                else:
                    listing = True
                    await self._list()
                    listing = False
                await self._watch()
            except asyncio.CancelledError:
                raise
            except EXPECTED as error:
                if isinstance(error, ApiError) and error.code == 410:
                    continue  # compacted: list again at once
                message = f"failed to list {self.type_description}: {error}" if listing else error
                # One line, as DefaultWatchErrorHandler's HandleError (no traceback).
                log.error(
                    '"Failed to watch" err=%s reflector=%s type=%s',
                    _quote(str(message)),
                    _quote(REFLECTOR),
                    _quote(self.type_description),
                )
            except Exception:  # keep informing; a transient failure must not end the component
                log.exception("informer %s failed; relisting", self.resource.plural)
            await self.clock.sleep(self.backoff.next_delay())

    @property
    def type_description(self) -> str:
        """What client-go's reflector calls the type: ``*v1.Pod``."""
        return f"*{self.resource.version}.{self.resource.kind}"

    async def _list(self) -> None:
        items, rv = await self.client.list(
            self.resource, self.namespace, field_selector=self.field_selector
        )
        if self._transform is not None:
            items = [self._transform(obj) for obj in items]
        fresh = {object_key(obj): obj for obj in items}
        for key, gone in list(self.cache.items()):
            if key not in fresh:
                self._store(key, None)
                self._deleted(gone)
        for key, obj in fresh.items():
            old = self._store(key, obj)
            if old is None:
                self._added(obj)
            elif old["metadata"].get("resourceVersion") != obj["metadata"].get("resourceVersion"):
                self._updated(old, obj)
        self.resource_version = rv
        self.synced.set()

    async def _watch(self) -> None:
        while True:
            async for kind, obj in self.client.watch(
                self.resource,
                self.namespace,
                resource_version=self.resource_version,
                field_selector=self.field_selector,
            ):
                if kind == "ERROR":
                    raise ApiError(obj)
                self.resource_version = obj["metadata"].get(
                    "resourceVersion", self.resource_version
                )
                if kind == "BOOKMARK":
                    continue
                if self._transform is not None:
                    obj = self._transform(obj)
                key = object_key(obj)
                if kind == "DELETED":
                    self._store(key, None)
                    self._deleted(obj)
                    continue
                old = self._store(key, obj)
                if old is None:
                    self._added(obj)
                else:
                    self._updated(old, obj)


def _quote(value: str) -> str:
    """A value as klog quotes it in a structured line (Go's strconv.Quote)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
