"""The registry's batch path: the writes of several requests as one store transaction.

A component that writes in bursts (the taint eviction controllers) hands the API server a
batch of requests (``Client.batch``). Each request runs the whole single-request path —
authorization, decoding, the strategy, admission, validation, field management — as its own
task; only its store write is held back (``WriteGroup.write``). Once every request of the
batch has reached its write or finished, the held writes go to the store together
(``store.batch.write_many``: one transaction, one watch fan-out), and each request carries on
with its own result, exactly as after a single write: a precondition that fails is that
request's 409 (or its retry, for a guaranteed update), and fails no other.

A request that writes twice (a retry after a lost race) has its second write in the next
round. A request that waits on something else (a worker thread for a large object) does not
hold the others: once the event loop has gone round a few times with writes held and no new
one arriving, the held writes go without it, and its own write follows in a later round.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

from taintplane.store.batch import Write, write_many
from taintplane.store.interface import Store

__all__ = ["WriteGroup", "current_group"]

_T = TypeVar("_T")

_GROUP: ContextVar[WriteGroup | None] = ContextVar("taintplane_write_group", default=None)

#: Loop iterations with writes held and nothing new before they go without the stragglers.
_IDLE_ROUNDS = 3


def current_group() -> WriteGroup | None:
    """The batch the running task's writes belong to, if it is one of a batch's requests."""
    group = _GROUP.get()
    if group is None or asyncio.current_task() not in group.members:
        # A task a request spawned inherits the context but is no member: it writes alone.
        return None
    return group


class WriteGroup:
    """Runs a batch's requests and commits their writes together, round by round."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.members: set[asyncio.Task[Any]] = set()
        self._held: list[tuple[Write, asyncio.Future[Any]]] = []
        self._idle = 0
        self._polling = False
        self._commits: set[asyncio.Future[None]] = set()
        #: How many store transactions the batch took (tests check it is one).
        self.rounds = 0

    async def run(self, jobs: Sequence[Callable[[], Awaitable[_T]]]) -> list[_T | BaseException]:
        """Run every job as a member of this batch; each one's result or exception."""
        token = _GROUP.set(self)
        try:
            tasks = [asyncio.ensure_future(job()) for job in jobs]
        finally:
            _GROUP.reset(token)
        self.members.update(tasks)
        for task in tasks:
            task.add_done_callback(self._left)
        return list(await asyncio.gather(*tasks, return_exceptions=True))

    async def write(self, write: Write) -> Any:
        """Hold ``write`` until the round commits; its result, or its store error raised."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._held.append((write, future))
        self._idle = 0
        self._check()
        return await future

    def _left(self, task: asyncio.Task[Any]) -> None:
        self.members.discard(task)
        self._check()

    def _check(self) -> None:
        if not self._held:
            return
        if len(self._held) >= len(self.members):
            self._flush()
        elif not self._polling:
            self._polling = True
            asyncio.get_running_loop().call_soon(self._poll, len(self._held))

    def _poll(self, seen: int) -> None:
        self._polling = False
        if not self._held:
            return
        self._idle = self._idle + 1 if len(self._held) == seen else 0
        if self._idle >= _IDLE_ROUNDS:
            self._flush()
            return
        self._polling = True
        asyncio.get_running_loop().call_soon(self._poll, len(self._held))

    def _flush(self) -> None:
        held, self._held, self._idle = self._held, [], 0
        self.rounds += 1
        task = asyncio.ensure_future(self._commit(held))
        self._commits.add(task)
        task.add_done_callback(self._commits.discard)

    async def _commit(self, held: list[tuple[Write, asyncio.Future[Any]]]) -> None:
        try:
            outcomes = await write_many(self.store, [w for w, _ in held])
        except Exception as error:  # the whole commit failed: every write of it did
            for _, future in held:
                if not future.done():
                    future.set_exception(error)
            return
        for (_, future), outcome in zip(held, outcomes, strict=True):
            if future.done():
                continue
            if isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)
