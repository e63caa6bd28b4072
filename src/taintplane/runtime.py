"""How a long-running taintplane process sets up the interpreter: the event loop and the
garbage collector. ``up``, ``serve``, the split components and the benchmarks share it, so a
benchmark measures the configuration users run."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import uvloop

__all__ = ["run", "settle_heap", "settled_heap"]

_T = TypeVar("_T")


def settle_heap() -> None:
    """Call once start-up objects exist. They live for the whole run: keep them out of every
    collection, and collect the young generation less often (request handling allocates many
    short-lived dicts; the default threshold of 700 makes collections a visible latency tail
    and, at thousands of writes per second, several percent of the CPU)."""
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)


@contextlib.contextmanager
def settled_heap() -> Iterator[None]:
    """:func:`settle_heap` for one long piece of work in a process that goes on afterwards
    (a what-if run, which tests invoke in their own process): the objects frozen and the
    thresholds are given back when it ends."""
    thresholds = gc.get_threshold()
    settle_heap()
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def run(main: Coroutine[Any, Any, _T], *, virtual_time: bool = False) -> _T:
    """``asyncio.run`` on uvloop (each request cheaper), except under virtual time, which needs
    asyncio's own loop (the clock watches the loop's ready queue to know it is quiet)."""
    # Expensive requests compute in a worker thread (apiserver/fairness.py); the event loop,
    # whenever it wakes, waits for the interpreter until that thread's slice ends: 1 ms
    # instead of the default 5 keeps each step of a cheap request quick (canary GET p50
    # under hostile load 22 -> 14 ms).
    sys.setswitchinterval(0.001)
    if virtual_time:
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)
