"""Several writes as one store operation: what the registry's batch path commits.

A backend that can commits a batch of writes in one transaction (``write_many``): each write
keeps its own precondition, and one that fails (``AlreadyExists``, ``Conflict``,
``NotFound``, ``TooLarge``) fails alone — it writes nothing and the others still commit. The
batch is store-level atomic: a crash before the commit leaves none of it, after it all of
it; its changes reach watchers in one fan-out, in revision order.

A backend without ``write_many`` (etcd: one ``Txn`` cannot fail a single compare without
failing every other, and etcd's request size limit would bound the batch) runs the writes as
concurrent single-object transactions: the same per-write results, without the shared
commit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from taintplane.store.interface import Store

__all__ = ["Write", "write_many"]


@dataclass(frozen=True, slots=True)
class Write:
    """One write of a batch, with the arguments of the ``Store`` method of its kind."""

    kind: Literal["create", "update", "delete"]
    key: str
    value: bytes = b""
    #: The revision an update or delete expects (``None``: a delete of whatever is there).
    expected_revision: int | None = None


async def write_many(store: Store, writes: Sequence[Write]) -> list[Any]:
    """Each write's result (what ``create``/``update``/``delete`` return) or the
    ``StoreError`` it raised, in order."""
    many = getattr(store, "write_many", None)
    if many is not None:
        results: list[Any] = await many(writes)
        return results
    return list(await asyncio.gather(*(_one(store, w) for w in writes), return_exceptions=True))


async def _one(store: Store, write: Write) -> Any:
    if write.kind == "create":
        return await store.create(write.key, write.value)
    if write.kind == "update":
        assert write.expected_revision is not None
        return await store.update(write.key, write.value, write.expected_revision)
    return await store.delete(write.key, write.expected_revision)
