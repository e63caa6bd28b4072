"""Store errors. The API server maps each to a Kubernetes Status in one table.

StoreError
├── AlreadyExists     create of a live key                      → 409 AlreadyExists
├── NotFound          update/delete/get of a missing key         → 404 NotFound
├── Conflict          revision precondition failed               → 409 Conflict
├── Compacted         read or watch below the compacted revision → 410 Expired
├── FutureRevision    read at a revision not yet written         → 504 Timeout (upstream)
└── TooLarge          value over the 1.5 MiB limit               → 413 RequestEntityTooLarge
"""

from __future__ import annotations

__all__ = [
    "AlreadyExists",
    "Compacted",
    "Conflict",
    "FutureRevision",
    "NotFound",
    "StoreError",
    "TooLarge",
]


class StoreError(Exception):
    pass


class AlreadyExists(StoreError):
    def __init__(self, key: str, current_revision: int) -> None:
        super().__init__(f"key {key!r} already exists")
        self.key = key
        self.current_revision = current_revision


class NotFound(StoreError):
    def __init__(self, key: str) -> None:
        super().__init__(f"key {key!r} not found")
        self.key = key


class Conflict(StoreError):
    def __init__(self, key: str, current_revision: int) -> None:
        super().__init__(f"key {key!r} is at revision {current_revision}")
        self.key = key
        self.current_revision = current_revision


class Compacted(StoreError):
    def __init__(self, requested: int, compact_revision: int) -> None:
        super().__init__(f"revision {requested} is compacted (compacted to {compact_revision})")
        self.requested = requested
        self.compact_revision = compact_revision


class FutureRevision(StoreError):
    def __init__(self, requested: int, current: int) -> None:
        super().__init__(f"revision {requested} is newer than the current revision {current}")
        self.requested = requested
        self.current = current


class TooLarge(StoreError):
    def __init__(self, key: str, size: int, limit: int) -> None:
        super().__init__(f"value of {key!r} is {size} bytes, over the limit of {limit}")
        self.key = key
        self.size = size
        self.limit = limit
