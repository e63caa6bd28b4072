"""Informers: a local cache of one resource kept current by list-then-watch.

The informer lists, replaces its cache (announcing the differences), then watches from the
list's resourceVersion. A watch that ends is resumed from the last resourceVersion seen; one
that answers 410 (compacted) is replaced by a fresh list, so no change is ever missed or seen
twice. Handlers run on the event loop, in event order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from taintplane.api.scheme import ResourceType
from taintplane.client.client import ApiError, Client

__all__ = ["Informer", "object_key"]

log = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any]], None]
UpdateHandler = Callable[[dict[str, Any], dict[str, Any]], None]


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
    ) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.cache: dict[str, dict[str, Any]] = {}
        self.synced = asyncio.Event()
        self._on_add = on_add or (lambda obj: None)
        self._on_update = on_update or (lambda old, new: None)
        self._on_delete = on_delete or (lambda obj: None)
        self.resource_version = ""

    async def run(self, *, resume_from: str = "") -> None:
        """Keep the cache current until cancelled. ``resume_from`` starts by watching from
        that resourceVersion over the current cache instead of listing first."""
        resume = resume_from
        while True:
            try:
                if resume:
                    self.resource_version, resume = resume, ""
                else:
                    await self._list()
                await self._watch()
            except asyncio.CancelledError:
                raise
            except ApiError as error:
                if error.code != 410:
                    log.warning("informer %s: %s", self.resource.plural, error)
            except Exception:  # keep informing; a transient failure must not end the component
                log.exception("informer %s failed; relisting", self.resource.plural)

    async def _list(self) -> None:
        items, rv = await self.client.list(self.resource, self.namespace)
        fresh = {object_key(obj): obj for obj in items}
        for key, gone in list(self.cache.items()):
            if key not in fresh:
                del self.cache[key]
                self._on_delete(gone)
        for key, obj in fresh.items():
            old = self.cache.get(key)
            self.cache[key] = obj
            if old is None:
                self._on_add(obj)
            elif old["metadata"].get("resourceVersion") != obj["metadata"].get("resourceVersion"):
                self._on_update(old, obj)
        self.resource_version = rv
        self.synced.set()

    async def _watch(self) -> None:
        while True:
            async for kind, obj in self.client.watch(
                self.resource, self.namespace, resource_version=self.resource_version
            ):
                if kind == "ERROR":
                    raise ApiError(obj)
                self.resource_version = obj["metadata"].get(
                    "resourceVersion", self.resource_version
                )
                if kind == "BOOKMARK":
                    continue
                key = object_key(obj)
                old = self.cache.get(key)
                if kind == "DELETED":
                    self.cache.pop(key, None)
                    self._on_delete(obj)
                elif old is None:
                    self.cache[key] = obj
                    self._on_add(obj)
                else:
                    self.cache[key] = obj
                    self._on_update(old, obj)
