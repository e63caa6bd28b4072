"""Generic storage of API objects over a ``Store``: what every resource has in common.

Objects are plain JSON dicts. On the way in, the registry fills in system metadata (uid,
creationTimestamp, generation), applies the kind's strategy (defaults, what a request may
change, validation) and writes through the store with the right precondition. On the way
out, it injects ``metadata.resourceVersion`` from the store revision, which is never stored.
It knows nothing about HTTP: the handlers translate requests into these calls.
"""

from __future__ import annotations

import base64
import os
import random
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import orjson

from taintplane.api.decoding import DecodeError, format_time
from taintplane.api.features import FeatureGates
from taintplane.api.scheme import SCHEME, ResourceType, Scheme
from taintplane.api.selectors import FieldSelector, LabelSelector
from taintplane.apiserver import fieldmanager, typecheck
from taintplane.apiserver.codec import clone
from taintplane.apiserver.status import APIError, from_store_error
from taintplane.apiserver.strategies import Strategy, strategy_for
from taintplane.apiserver.strategies.base import meta
from taintplane.clock import Clock
from taintplane.store import errors as store_errors
from taintplane.store.interface import KV, EventType, ListResult, Store, Watch

__all__ = ["Admit", "Apply", "ListPage", "Registry", "WatchItem", "WatchProgress"]

_METADATA = b'"metadata":{'
_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_SYSTEM_FIELDS = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds")

#: Names and uids need to be unique, not secret: a generator seeded once from the OS, because
#: reading the OS's randomness per object (uuid4, secrets) was 5 % of a create on this host.
_UNIQUE = random.Random(os.urandom(32))

#: An admission hook: (operation, resource, namespace, new object or None, old or None,
#: subresource or "").
Admit = Callable[
    [str, ResourceType, str, dict[str, Any] | None, dict[str, Any] | None, str], Awaitable[None]
]


async def _admit_nothing(*_: object) -> None:
    return None


@dataclass(frozen=True)
class Apply:
    """A server-side apply: the applied configuration and whether conflicts are overridden."""

    config: dict[str, Any]
    force: bool = False


@dataclass
class ListPage:
    items: list[dict[str, Any]]
    resource_version: str
    continue_token: str | None


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


def _encode_continue(revision: int, key: str) -> str:
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": revision, "start": key})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = orjson.loads(raw)
        return int(data["rv"]), str(data["start"])
    except (ValueError, KeyError, TypeError) as error:
        raise APIError.bad_request(f"continue key is not valid: {error}") from error


class Registry:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        features: FeatureGates | None = None,
        scheme: Scheme = SCHEME,
        admit: Admit = _admit_nothing,
    ) -> None:
        self.store = store
        self.clock = clock
        self.features = features or FeatureGates()
        self.scheme = scheme
        self.admit = admit
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
        # apiVersion, kind and metadata first: then the first nested object in the bytes is
        # metadata, which lets reads splice the resourceVersion in without decoding.
        stored: dict[str, Any] = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind")}
        stored["metadata"] = {k: v for k, v in meta(obj).items() if k != "resourceVersion"}
        stored.update((k, v) for k, v in obj.items() if k not in stored)
        return orjson.dumps(stored)

    @staticmethod
    def splice(kv: KV) -> bytes:
        """The stored JSON with ``metadata.resourceVersion`` injected, without decoding it
        (STORAGE.md §2.4: about 3x cheaper than an orjson round trip)."""
        raw = kv.value
        at = raw.find(_METADATA)
        if at < 0 or raw.find(b"{", 1) != at + len(_METADATA) - 1:
            return orjson.dumps(Registry._decode(kv))
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
    ) -> ListPage:
        strategy = self.strategy(resource)
        revision, after = await self._list_start(resource, continue_token, resource_version)
        items: list[dict[str, Any]] = []
        # With selectors, a page of matches may need several store pages.
        page_size = max(limit, 500) if limit else 0
        while True:
            page = await self._page(resource, namespace, revision, page_size, after)
            revision = page.revision
            for kv in page.items:
                obj = self._decode(kv)
                if labels is not None and not labels.matches(meta(obj).get("labels")):
                    continue
                if fields is not None and not fields.matches(strategy.field_values(obj)):
                    continue
                items.append(obj)
                if limit and len(items) == limit:
                    more = kv.key != page.items[-1].key or page.continue_after is not None
                    token = _encode_continue(revision, kv.key) if more else None
                    return ListPage(items, str(revision), token)
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

    async def list_raw(
        self,
        resource: ResourceType,
        namespace: str,
        *,
        limit: int = 0,
        continue_token: str | None = None,
        resource_version: str = "",
    ) -> tuple[Sequence[bytes], str, str | None]:
        """A list page as encoded items, for lists without selectors (the common large case:
        informers and ``-o json``): no object is decoded."""
        revision, after = await self._list_start(resource, continue_token, resource_version)
        page = await self._page(resource, namespace, revision, limit, after)
        token = (
            _encode_continue(page.revision, page.continue_after) if page.continue_after else None
        )
        return [self.splice(kv) for kv in page.items], str(page.revision), token

    async def _list_start(
        self, resource: ResourceType, continue_token: str | None, resource_version: str
    ) -> tuple[int, str | None]:
        if continue_token:
            return _decode_continue(continue_token)
        if resource_version not in ("", "0"):
            revision = _parse_rv(resource_version)
            current = await self.store.current_revision()
            if revision > current:
                raise from_store_error(store_errors.FutureRevision(revision, current), resource, "")
        return 0, None  # NotOlderThan any given revision: the latest state is never older

    async def _page(
        self, resource: ResourceType, namespace: str, revision: int, limit: int, after: str | None
    ) -> ListResult:
        try:
            return await self.store.list(
                self._prefix(resource, namespace),
                revision=revision,
                limit=limit,
                continue_after=after,
            )
        except store_errors.Compacted as error:
            raise APIError.gone(
                "The provided continue parameter is too old to display a consistent list "
                "result. You can start a new list without the continue parameter, or use "
                f"the continue token in this response to retrieve the remainder of the "
                f"results. ({error})"
            ) from error

    # ---- create ----------------------------------------------------------------------------

    async def create(
        self,
        resource: ResourceType,
        namespace: str,
        body: dict[str, Any],
        *,
        dry_run: bool = False,
        field_validation: str = "Warn",
        manager: str = "",
        apply: Apply | None = None,
    ) -> dict[str, Any]:
        obj: dict[str, Any] = clone(body)
        self._check_type(resource, obj, field_validation)
        metadata = meta(obj)
        if resource.namespaced:
            if metadata.get("namespace") and metadata["namespace"] != namespace:
                raise APIError.bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            metadata["namespace"] = namespace
        generated = not metadata.get("name") and bool(metadata.get("generateName"))
        if generated:
            metadata["name"] = _generate_name(str(metadata["generateName"]))
        if metadata.get("resourceVersion"):
            raise APIError.bad_request("resourceVersion should not be set on objects to be created")
        name = str(metadata.get("name") or "")
        strategy = self.strategy(resource)
        for field in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            metadata.pop(field, None)
        metadata.pop("managedFields", None)  # the server records who set what
        metadata["uid"] = str(uuid.UUID(int=_UNIQUE.getrandbits(128), version=4))
        metadata["creationTimestamp"] = format_time(self.clock.now())
        obj["apiVersion"], obj["kind"] = resource.api_version, resource.kind
        self._run_strategy(resource, name, lambda: strategy.default(obj))
        strategy.prepare_for_create(obj)
        if resource.namespaced:
            await self._check_namespace_open(resource, namespace, name)
        await self.admit("CREATE", resource, namespace, obj, None, "")
        self._validate(resource, name, lambda: strategy.validate(obj))
        self._record_fields(resource, obj, None, manager, apply, "")
        if dry_run:
            return obj
        # A generated name that is taken is generated again, up to 8 tries in all, as
        # kube-apiserver does since RetryGenerateName (GA in 1.32); then the 409 stands.
        for attempt in range(_GENERATE_NAME_TRIES if generated else 1):
            try:
                revision = await self.store.create(
                    self._key(resource, namespace, name), self._encode(obj)
                )
                break
            except store_errors.AlreadyExists as error:
                if not generated:
                    raise from_store_error(error, resource, name) from error
                if attempt == _GENERATE_NAME_TRIES - 1:
                    raise APIError.generate_name_conflict(resource, name) from error
                name = metadata["name"] = _generate_name(str(metadata["generateName"]))
            except store_errors.StoreError as error:
                raise from_store_error(error, resource, name) from error
        self._written(resource)
        metadata["resourceVersion"] = str(revision)
        return obj

    async def _check_namespace_open(
        self, resource: ResourceType, namespace: str, name: str
    ) -> None:
        if namespace in self._open_namespaces:
            return
        ns_type = self.scheme.lookup("", "v1", "namespaces")
        assert ns_type is not None
        kv = await self.store.get(self._key(ns_type, "", namespace))
        if kv is None:
            raise APIError.not_found(ns_type, namespace)
        if meta(self._decode(kv)).get("deletionTimestamp"):
            raise APIError.forbidden(
                resource,
                name,
                f"unable to create new content in namespace {namespace} because it is being "
                "terminated",
            )
        self._open_namespaces.add(namespace)

    # ---- update ----------------------------------------------------------------------------

    async def update(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        body: dict[str, Any],
        *,
        subresource: str = "",
        dry_run: bool = False,
        field_validation: str = "Warn",
        manager: str = "",
    ) -> dict[str, Any]:
        new: dict[str, Any] = clone(body)
        self._check_type(resource, new, field_validation)
        body_name = meta(new).get("name")
        if body_name and body_name != name:
            raise APIError.bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
        precondition = meta(new).get("resourceVersion") or None
        old = await self.get(resource, namespace, name)
        if precondition is not None and precondition != meta(old)["resourceVersion"]:
            raise from_store_error(store_errors.Conflict(name, 0), resource, name)
        return await self._write_update(
            resource, namespace, name, new, old, subresource, dry_run, manager, None
        )

    async def guaranteed_update(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        mutate: Callable[[dict[str, Any]], dict[str, Any]],
        *,
        subresource: str = "",
        dry_run: bool = False,
        field_validation: str = "Warn",
        manager: str = "",
        apply: Apply | None = None,
    ) -> dict[str, Any]:
        """Read, ``mutate`` a copy, write; retried on conflicts unless the result pins a
        resourceVersion (then a stale one is the caller's conflict)."""
        for _ in range(32):
            kv = await self._get_kv(resource, namespace, name)
            old = self._decode(kv)
            # The mutation gets its own copy (decoded again: cheaper than copying ``old``),
            # without a resourceVersion (stored bytes have none): if it sets one, that is the
            # caller's precondition (a patch that names a resourceVersion).
            current: dict[str, Any] = orjson.loads(kv.value)
            new = mutate(current)
            self._check_type(resource, new, field_validation, baseline=old)
            pinned = meta(new).get("resourceVersion")
            if pinned and pinned != meta(old)["resourceVersion"]:
                raise from_store_error(store_errors.Conflict(name, 0), resource, name)
            try:
                return await self._write_update(
                    resource, namespace, name, new, old, subresource, dry_run, manager, apply
                )
            except APIError as error:
                if error.status.get("reason") != "Conflict" or pinned:
                    raise
        raise APIError.conflict(resource, name, "too many concurrent updates; try again")

    async def _write_update(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        new: dict[str, Any],
        old: dict[str, Any],
        subresource: str,
        dry_run: bool,
        manager: str,
        apply: Apply | None,
    ) -> dict[str, Any]:
        strategy = self.strategy(resource)
        new_meta, old_meta = meta(new), meta(old)
        new_meta["name"] = name
        if resource.namespaced:
            new_meta["namespace"] = namespace
        for field in _SYSTEM_FIELDS:
            if field in old_meta:
                new_meta[field] = old_meta[field]
            else:
                new_meta.pop(field, None)
        new["apiVersion"], new["kind"] = resource.api_version, resource.kind
        self._run_strategy(resource, name, lambda: strategy.default(new))
        if subresource == "status":
            strategy.prepare_for_status_update(new, old)
            check = strategy.validate_status_update
        elif subresource == "binding":
            # Binding sets spec.nodeName and a status condition: its own rules, checked by
            # the caller, and neither the spec nor the status update rules apply.
            def check(new: dict[str, Any], old: dict[str, Any]) -> list[Any]:
                return []
        else:
            strategy.prepare_for_update(new, old)
            check = strategy.validate_update
        await self.admit("UPDATE", resource, namespace, new, old, subresource)
        self._validate(resource, name, lambda: check(new, old))
        new_meta["resourceVersion"] = old_meta["resourceVersion"]
        # A client cannot write managedFields: the server records who set what.
        if "managedFields" in old_meta:
            new_meta["managedFields"] = old_meta["managedFields"]
        else:
            new_meta.pop("managedFields", None)
        if new == old:
            return old  # a no-op update does not write (and keeps the resourceVersion)
        self._record_fields(resource, new, old, manager, apply, subresource)
        if _without_times(new) == _without_times(old):
            return old  # a no-op update does not write (and keeps the resourceVersion)
        if dry_run:
            return new
        key = self._key(resource, namespace, name)
        if (
            old_meta.get("deletionTimestamp")
            and not new_meta.get("finalizers")
            and not int(old_meta.get("deletionGracePeriodSeconds") or 0)
        ):
            # An object being deleted with no finalizer left goes now — once its grace period
            # is over (upstream's shouldDeleteDuringUpdate): a pod still terminating gracefully
            # stays for its kubelet's status updates and final deletion.
            await self._delete_now(resource, namespace, name, key, int(old_meta["resourceVersion"]))
            return new
        try:
            revision = await self.store.update(
                key, self._encode(new), int(old_meta["resourceVersion"])
            )
        except store_errors.StoreError as error:
            raise from_store_error(error, resource, name) from error
        self._written(resource)
        new_meta["resourceVersion"] = str(revision)
        return new

    # ---- delete ----------------------------------------------------------------------------

    async def delete(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        *,
        grace_period: int | None = None,
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
        propagation: str | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """Delete, or start a graceful deletion. Returns the object and whether it is gone.

        ``propagation`` Orphan or Foreground puts the garbage collector's finalizer on the
        object (``orphan`` / ``foregroundDeletion``), so it stays until the collector has
        orphaned or deleted its dependents; Background (the default) deletes it now and lets
        the collector find the dependents."""
        obj = await self.get(resource, namespace, name)
        metadata = meta(obj)
        preconditions = preconditions or {}
        if preconditions.get("uid") and preconditions["uid"] != metadata.get("uid"):
            raise APIError.conflict(
                resource,
                name,
                f"Precondition failed: UID in precondition: {preconditions['uid']}, "
                f"UID in object meta: {metadata.get('uid')}",
            )
        if (
            preconditions.get("resourceVersion")
            and preconditions["resourceVersion"] != metadata["resourceVersion"]
        ):
            raise APIError.conflict(
                resource,
                name,
                f"Precondition failed: ResourceVersion in precondition: "
                f"{preconditions['resourceVersion']}, ResourceVersion in object meta: "
                f"{metadata['resourceVersion']}",
            )
        await self.admit("DELETE", resource, namespace, None, obj, "")
        grace = self.strategy(resource).grace_period_seconds(obj, grace_period)
        gc_finalizer = {"Orphan": "orphan", "Foreground": "foregroundDeletion"}.get(
            propagation or ""
        )
        if propagation is not None:
            kept = [
                f
                for f in metadata.get("finalizers") or []
                if f not in ("orphan", "foregroundDeletion")
            ]
            if gc_finalizer is not None:
                kept.append(gc_finalizer)
            if kept != (metadata.get("finalizers") or []):
                if kept:
                    metadata["finalizers"] = kept
                else:
                    metadata.pop("finalizers", None)
                if metadata.get("deletionTimestamp"):
                    # Already being deleted: only the garbage collection policy changes.
                    grace = max(grace, int(metadata.get("deletionGracePeriodSeconds") or 0))
                    metadata.pop("deletionTimestamp")
        finalizers = metadata.get("finalizers") or []
        if resource.kind == "Namespace":
            finalizers = [*finalizers, *((obj.get("spec") or {}).get("finalizers") or [])]
        if grace > 0 or finalizers:
            if metadata.get("deletionTimestamp") and grace >= int(
                metadata.get("deletionGracePeriodSeconds") or 0
            ):
                return obj, False  # already being deleted, no sooner than now
            if dry_run:
                return obj, False
            metadata["deletionTimestamp"] = format_time(self.clock.now() + timedelta(seconds=grace))
            metadata["deletionGracePeriodSeconds"] = grace
            if resource.kind == "Namespace":
                obj.setdefault("status", {})["phase"] = "Terminating"
            key = self._key(resource, namespace, name)
            try:
                revision = await self.store.update(
                    key, self._encode(obj), int(metadata["resourceVersion"])
                )
            except store_errors.StoreError as error:
                raise from_store_error(error, resource, name) from error
            self._written(resource)
            metadata["resourceVersion"] = str(revision)
            return obj, False
        if dry_run:
            return obj, True
        key = self._key(resource, namespace, name)
        revision = await self._delete_now(
            resource, namespace, name, key, int(metadata["resourceVersion"])
        )
        metadata["resourceVersion"] = str(revision)
        return obj, True

    async def remove(self, resource: ResourceType, namespace: str, name: str) -> None:
        """Delete at once, ignoring grace periods and finalizers (for the system's own use:
        finishing a namespace, collecting a pod whose node is gone)."""
        key = self._key(resource, namespace, name)
        try:
            await self.store.delete(key)
        except store_errors.StoreError as error:
            raise from_store_error(error, resource, name) from error
        self._written(resource)

    async def _delete_now(
        self, resource: ResourceType, namespace: str, name: str, key: str, expected: int
    ) -> int:
        try:
            revision, _ = await self.store.delete(key, expected)
        except store_errors.StoreError as error:
            raise from_store_error(error, resource, name) from error
        self._written(resource)
        return revision

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
    ) -> AsyncIterator[WatchItem]:
        """Changes after ``resource_version``; from "" or "0", the current objects as ADDED
        first. Selectors turn moves in and out of the selection into ADDED and DELETED."""
        progress = progress if progress is not None else WatchProgress()
        strategy = self.strategy(resource)

        def selected(obj: dict[str, Any] | None) -> bool:
            if obj is None:
                return False
            if labels is not None and not labels.matches(meta(obj).get("labels")):
                return False
            return fields is None or fields.matches(strategy.field_values(obj))

        if resource_version in ("", "0"):
            page = await self.list(resource, namespace, labels=labels, fields=fields)
            for obj in page.items:
                yield WatchItem("ADDED", obj)
            after = int(page.resource_version)
        else:
            after = _parse_rv(resource_version)
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
                    yield WatchItem("DELETED", obj)
        except store_errors.Compacted as error:
            raise from_store_error(error, resource, "") from error
        finally:
            watch.close()

    # ---- helpers ---------------------------------------------------------------------------

    def _check_type(
        self,
        resource: ResourceType,
        obj: dict[str, Any],
        field_validation: str = "Warn",
        baseline: dict[str, Any] | None = None,
    ) -> None:
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if api_version and api_version != resource.api_version:
            raise APIError.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({resource.api_version})"
            )
        if kind and kind != resource.kind:
            raise APIError.bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({resource.kind})"
            )
        schema = typecheck.schemas()["kinds"].get(
            f"{resource.group}/{resource.version}/{resource.kind}"
        )
        if schema is None:
            return
        try:
            report = typecheck.check_object(obj, schema, baseline)
        except typecheck.TypeCheckError as error:
            raise _cannot_handle(resource, DecodeError(error.message)) from error
        if report.unknown and field_validation == "Strict":
            unknown = ", ".join(f'unknown field "{path}"' for path in report.unknown)
            raise _cannot_handle(resource, DecodeError(f"strict decoding error: {unknown}"))

    def _record_fields(
        self,
        resource: ResourceType,
        new: dict[str, Any],
        old: dict[str, Any] | None,
        manager: str,
        apply: Apply | None,
        subresource: str,
    ) -> None:
        """Record in ``metadata.managedFields`` which fields ``manager`` set."""
        if subresource == "binding" or not manager:
            return
        now = format_time(self.clock.now())
        skip_status = self.strategy(resource).has_status
        if apply is not None:
            fieldmanager.record_apply(
                new,
                old,
                apply.config,
                manager,
                resource.api_version,
                now,
                force=apply.force,
                skip_status=skip_status,
            )
        else:
            fieldmanager.record_update(
                new,
                old,
                manager,
                resource.api_version,
                now,
                subresource=subresource,
                skip_status=skip_status,
            )

    def _run_strategy(self, resource: ResourceType, name: str, step: Callable[[], None]) -> None:
        try:
            step()
        except DecodeError as error:
            raise _cannot_handle(resource, error) from error

    def _validate(
        self, resource: ResourceType, name: str, check: Callable[[], Sequence[Any]]
    ) -> None:
        try:
            errors = check()
        except DecodeError as error:
            raise _cannot_handle(resource, error) from error
        if errors:
            raise APIError.invalid(resource, name, errors)


#: How often a create tries a generated name (upstream's RetryGenerateName).
_GENERATE_NAME_TRIES = 8
#: A generated name: the prefix cut to 58 characters, then five random ones
#: (upstream's names.SimpleNameGenerator).
_MAX_GENERATED_PREFIX = 58


def _generate_name(prefix: str) -> str:
    return prefix[:_MAX_GENERATED_PREFIX] + "".join(_UNIQUE.choices(_NAME_SUFFIX_ALPHABET, k=5))


def _without_times(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with the managedFields timestamps left out (they alone are no change)."""
    entries = meta(obj).get("managedFields") or []
    stripped = [{k: v for k, v in e.items() if k != "time"} for e in entries if isinstance(e, dict)]
    return {**obj, "metadata": {**meta(obj), "managedFields": stripped}}


def _cannot_handle(resource: ResourceType, error: DecodeError) -> APIError:
    return APIError.bad_request(
        f'{resource.kind} in version "{resource.version}" cannot be handled as a '
        f"{resource.kind}: {error.message}"
    )


def _parse_rv(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise APIError.bad_request(f"invalid resource version: {text}")
    return value
