"""A controller's own writes that its informer has not shown it yet (client-go's
``MutationCache`` with integer resource versions, as ``NewIntegerResourceVersionMutationCache``).

A controller that writes an object and is asked to sync it again before the watch event of
that write reached its informer would act on the copy from before its own write: the status
looks out of date, so it writes again with the old ``resourceVersion``, is refused with a 409,
re-reads and writes what is already stored, and the owner is queued again for each of those
writes. On a cluster that event arrives a few milliseconds after the write, almost always
before the next event of the same object; in-process, the next sync can run first, every
time. So a sync reads the object through this cache: the object as the controller's last
write returned it while the informer's copy is older, the informer's copy from then on.

Resource versions are compared as integers; a version that is not one is never newer.
"""

from __future__ import annotations

from typing import Any

from taintplane.controllers.workloads import deep_copy

__all__ = ["OwnWrites"]


def _version(obj: dict[str, Any]) -> int | None:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or "")
    except ValueError:
        return None


class OwnWrites:
    """The object each key's last write by this controller returned, until the informer's
    cache holds that version or a later one."""

    def __init__(self) -> None:
        self._written: dict[str, tuple[int, dict[str, Any]]] = {}

    def __len__(self) -> int:
        return len(self._written)

    def wrote(self, key: str, result: dict[str, Any]) -> None:
        """Record what a write of ``key`` returned (the object as stored; copied, as the
        caller may go on changing its own)."""
        version = _version(result)
        if version is not None and version > self._written.get(key, (-1, {}))[0]:
            self._written[key] = (version, deep_copy(result))

    def newer(self, key: str, cached: dict[str, Any]) -> dict[str, Any]:
        """``cached`` (the informer's copy of ``key``), or our last write of it if that is
        newer; once the cache has caught up, the write is forgotten. Treat the result as
        read-only, as an informer's objects."""
        written = self._written.get(key)
        if written is None:
            return cached
        version = _version(cached)
        if version is not None and version < written[0]:
            return written[1]
        del self._written[key]
        return cached

    def forget(self, key: str) -> None:
        """The object is gone: no watch event of our write will follow its deletion."""
        self._written.pop(key, None)
