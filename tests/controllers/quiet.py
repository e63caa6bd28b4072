"""Make ``VirtualClock.advance`` wait for reads in worker threads too.

The SQLite store's quiescence check covers its writer only; reads run through
``asyncio.to_thread`` (the default executor), so ``advance`` could return while a request
waited on one and a controller was left half-way through a sync. This tracks the default
executor's futures and registers a check that waits for them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any

from taintplane.clock import VirtualClock

__all__ = ["track_thread_reads"]


class _TrackingExecutor(concurrent.futures.ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(max_workers=4, thread_name_prefix="test-reads")
        self.inflight: set[concurrent.futures.Future[Any]] = set()

    def submit(
        self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[Any]:
        future = super().submit(fn, *args, **kwargs)
        self.inflight.add(future)
        future.add_done_callback(self.inflight.discard)
        return future


def track_thread_reads(clock: VirtualClock) -> None:
    executor = _TrackingExecutor()
    asyncio.get_running_loop().set_default_executor(executor)

    async def drained() -> bool:
        pending = [asyncio.wrap_future(f) for f in list(executor.inflight)]
        if not pending:
            return False
        await asyncio.gather(*pending, return_exceptions=True)
        return True

    clock.add_quiescence_check(drained)
