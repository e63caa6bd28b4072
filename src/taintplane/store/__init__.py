"""Storage: the ``Store`` protocol and its backends (SQLite embedded, etcd distributed)."""

from taintplane.store.errors import (
    AlreadyExists,
    Compacted,
    Conflict,
    FutureRevision,
    NotFound,
    StoreError,
    TooLarge,
)
from taintplane.store.interface import KV, EventType, ListResult, Store, WatchEvent

__all__ = [
    "KV",
    "AlreadyExists",
    "Compacted",
    "Conflict",
    "EventType",
    "FutureRevision",
    "ListResult",
    "NotFound",
    "Store",
    "StoreError",
    "TooLarge",
    "WatchEvent",
]
