"""The async ``Store`` protocol every backend implements (see STORAGE.md §4).

Revisions are int64, strictly increasing across the whole store. Values are opaque bytes
(JSON objects without ``resourceVersion``, which the API server injects on read).
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

__all__ = ["KV", "MAX_VALUE_SIZE", "EventType", "ListResult", "Store", "Watch", "WatchEvent"]

#: etcd's default request limit; every backend enforces it so all behave the same.
MAX_VALUE_SIZE = 1536 * 1024


@dataclass(frozen=True, slots=True)
class KV:
    key: str
    value: bytes
    mod_revision: int
    create_revision: int


@dataclass(frozen=True, slots=True)
class ListResult:
    items: list[KV]
    #: The snapshot revision the page was read at; later pages use the same one.
    revision: int
    #: The last key of this page when more remain (pass it back as ``continue_after``).
    continue_after: str | None
    #: How many live keys under the prefix follow this page at ``revision`` (0 when none
    #: remain): etcd's range count less the page, for a list's ``remainingItemCount``.
    remaining: int = 0


class EventType(enum.Enum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: EventType
    key: str
    #: The new value; for DELETED, the last value the key held.
    value: bytes
    #: The value before this change (None for ADDED, or when compacted away).
    prev_value: bytes | None
    revision: int


class Watch(Protocol):
    """A running watch: iterate it for events; close it when done."""

    def __aiter__(self) -> AsyncIterator[WatchEvent]: ...

    def bookmark_revision(self) -> int | None:
        """A revision such that every event for this watch up to it has been yielded, or
        ``None`` while events are still queued (a bookmark now would skip them)."""
        ...

    def close(self) -> None: ...


class Store(Protocol):
    async def current_revision(self) -> int: ...

    async def create(self, key: str, value: bytes) -> int:
        """Store a new key; the new revision. ``AlreadyExists`` if the key is live."""
        ...

    async def update(self, key: str, value: bytes, expected_revision: int) -> int:
        """Replace a key whose revision is ``expected_revision``; ``NotFound``/``Conflict``."""
        ...

    async def delete(self, key: str, expected_revision: int | None = None) -> tuple[int, bytes]:
        """Delete a key; the deletion revision and the last value. ``NotFound``/``Conflict``."""
        ...

    async def get(self, key: str, revision: int = 0) -> KV | None:
        """The key at ``revision`` (0: latest), or ``None``; ``Compacted`` if too old."""
        ...

    async def list(
        self, prefix: str, *, revision: int = 0, limit: int = 0, continue_after: str | None = None
    ) -> ListResult:
        """Live keys under ``prefix`` in key order at one snapshot revision, a page at a time."""
        ...

    async def count(self, prefix: str) -> int: ...

    def watch(self, prefix: str, after_revision: int) -> Watch:
        """Every change under ``prefix`` with revision > ``after_revision``, in order, then
        live changes. ``Compacted`` (raised on iteration) if ``after_revision`` is too old."""
        ...

    async def compact(self, revision: int) -> None: ...

    async def close(self) -> None: ...
