"""Fairness between requests: no client's expensive requests may hold the server for long.

Upstream's two defences, in the spirit of API Priority and Fairness:

* **max in flight** (``--max-requests-inflight`` 400, ``--max-mutating-requests-inflight``
  200, filters/maxinflight.go): past the limit a request is answered at once with 429, the
  plain-text "Too many requests, please try again later." and ``Retry-After: 1``. Long-running
  requests (watches) are not counted; ``system:masters`` (and the in-process loopback client)
  is always served.
* **seats for expensive work**: a request that is expensive to serve (a LIST without a small
  limit or with selectors, a Table LIST, a large or YAML body) waits, first come first served,
  for one of few seats; cheap requests (GET, small writes) never wait behind it. A full queue
  is a 429 as above, as APF rejects when a priority level's queues are full.

The server is one event loop: a request holds it for as long as it computes without an
``await``. Work of a request holding a seat that is CPU-bound and self-contained (decoding a
body, type checks, managed fields, Tables) goes through :func:`offload`, which runs it in one
worker thread, so the loop gets the interpreter back every switch interval (5 ms) to serve
the cheap requests. Code outside a seat (cheap requests, components) runs it inline: a thread
hop costs more than small work.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from starlette.responses import Response

__all__ = [
    "LARGE_OBJECT_BYTES",
    "TOO_MANY_REQUESTS",
    "Fairness",
    "RequestClass",
    "drained",
    "offload",
    "offloading",
    "too_many_requests",
    "yield_turn",
]

#: filters/maxinflight.go tooManyRequests (and APF's rejection), written with http.Error.
TOO_MANY_REQUESTS = "Too many requests, please try again later."
#: A stored object this large makes even a small request expensive (a patch of it is decoded,
#: patched, type-checked and its managed fields recorded): that work is offloaded too.
LARGE_OBJECT_BYTES = 64 * 1024
#: maxinflight.go's retryAfter.
RETRY_AFTER_SECONDS = "1"

_P = ParamSpec("_P")
_T = TypeVar("_T")

#: Whether the running request holds a seat for expensive work (its task's context).
_SEATED: contextvars.ContextVar[bool] = contextvars.ContextVar("taintplane_seated", default=False)
#: Whether it comes from an in-process component: its work stays on the loop, where a virtual
#: clock sees it (the clock moves on only when the loop is quiet).
_INLINE: contextvars.ContextVar[bool] = contextvars.ContextVar("taintplane_inline", default=False)
#: One thread: seats are few and the interpreter runs one thread at a time anyway; more
#: threads would only take more turns from the event loop.
_WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="taintplane-expensive")
#: Work handed to the thread and not finished yet (see :func:`drained`).
_PENDING: set[asyncio.Future[Any]] = set()


async def offload(function: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """``function(*args, **kwargs)``: in the worker thread when the running request holds a
    seat for expensive work, inline otherwise. ``function`` must only touch what the request
    owns (its body, its object): the loop goes on serving others meanwhile."""
    if not _SEATED.get():
        return function(*args, **kwargs)
    context = contextvars.copy_context()  # warnings recorded in the thread reach the request
    call = functools.partial(context.run, function, *args, **kwargs)
    future = asyncio.get_running_loop().run_in_executor(_WORKER, call)
    _PENDING.add(future)
    future.add_done_callback(_PENDING.discard)
    return await future


async def drained() -> bool:
    """Wait until no work is left in the worker thread; whether there was any (a virtual
    clock waits on this before it moves on, as on the store's writer thread)."""
    if not _PENDING:
        return False
    await asyncio.gather(*list(_PENDING), return_exceptions=True)
    return True


@contextmanager
def offloading(large: bool) -> Iterator[None]:
    """Within the block, :func:`offload` uses the worker thread if ``large`` (the request
    turned out to work on a large object) or the request holds a seat."""
    if not large or _INLINE.get():
        yield
        return
    token = _SEATED.set(True)
    try:
        yield
    finally:
        _SEATED.reset(token)


async def yield_turn() -> None:
    """Let every other ready request run a step before going on: between the chunks of a
    long loop that runs inline (a watch's initial events, a large page of a selector list)."""
    await asyncio.sleep(0)  # a turn, not a wait: no clock is involved


def too_many_requests() -> Response:
    """Upstream's 429: plain text, as Go's http.Error writes it, with Retry-After."""
    return Response(
        TOO_MANY_REQUESTS + "\n",
        status_code=429,
        media_type="text/plain; charset=utf-8",
        headers={"Retry-After": RETRY_AFTER_SECONDS, "X-Content-Type-Options": "nosniff"},
    )


@dataclass(frozen=True)
class RequestClass:
    """What the gate needs to know about a request."""

    mutating: bool  # a verb other than get, list, watch
    long_running: bool = False  # a watch: not counted in flight, never seated
    expensive: bool = False  # needs a seat
    exempt: bool = False  # system:masters / the loopback client: never refused, never queued
    in_process: bool = False  # a component in this process: its work is never offloaded


class Fairness:
    """The gate every resource request passes (see the module's docstring)."""

    def __init__(
        self,
        *,
        max_readonly: int = 400,
        max_mutating: int = 200,
        seats: int = 1,
        # Upstream's default priority levels queue up to 50 per queue in 8 of 64 queues a
        # flow hashes to: one client may have 400 waiting before it is refused.
        queue_length: int = 400,
    ) -> None:
        self.max_readonly = max_readonly
        self.max_mutating = max_mutating
        self.seats = seats
        self.queue_length = queue_length
        self.readonly = 0
        self.mutating = 0
        self.seated = 0
        self._waiting: deque[asyncio.Future[None]] = deque()

    async def serve(
        self, kind: RequestClass, handler: Callable[[], Awaitable[Response]]
    ) -> Response:
        token = _INLINE.set(kind.in_process)
        try:
            return await self._serve(kind, handler)
        finally:
            _INLINE.reset(token)

    async def _serve(
        self, kind: RequestClass, handler: Callable[[], Awaitable[Response]]
    ) -> Response:
        if kind.long_running:
            return await handler()
        # A limit of 0 is no limit, as --max-requests-inflight=0.
        if kind.mutating:
            if 0 < self.max_mutating <= self.mutating and not kind.exempt:
                return too_many_requests()
            self.mutating += 1
        else:
            if 0 < self.max_readonly <= self.readonly and not kind.exempt:
                return too_many_requests()
            self.readonly += 1
        try:
            if not kind.expensive or kind.exempt:
                return await handler()
            return await self._seated(handler)
        finally:
            if kind.mutating:
                self.mutating -= 1
            else:
                self.readonly -= 1

    async def _seated(self, handler: Callable[[], Awaitable[Response]]) -> Response:
        if self.seated >= self.seats or self._waiting:
            if len(self._waiting) >= self.queue_length:
                return too_many_requests()
            turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiting.append(turn)
            try:
                await turn  # the seat is handed over by the request that leaves it
            except BaseException:
                if turn in self._waiting:
                    self._waiting.remove(turn)
                elif not turn.cancelled():
                    self._release()  # handed a seat just as the client went away
                raise
        else:
            self.seated += 1
        token = _SEATED.set(True)
        try:
            return await handler()
        finally:
            _SEATED.reset(token)
            self._release()

    def _release(self) -> None:
        """Hand the seat to the first waiter still waiting, or free it."""
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():
                turn.set_result(None)
                return
        self.seated -= 1
