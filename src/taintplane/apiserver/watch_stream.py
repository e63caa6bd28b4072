"""A watch response's body: the registry's events as JSON lines, with bookmarks, Tables,
the ERROR event of a failed watch and the end of a timed watch."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from taintplane.api.scheme import ResourceType
from taintplane.apiserver import codec
from taintplane.apiserver.registry import WatchProgress
from taintplane.apiserver.status import APIError
from taintplane.apiserver.tables import table_for
from taintplane.clock import Clock

__all__ = ["watch_lines"]


async def watch_lines(
    resource: ResourceType,
    events: AsyncIterator[Any],
    progress: WatchProgress,
    clock: Clock,
    *,
    request_clock: Clock,
    table: bool,
    bookmark_interval: float | None,
    timeout: int | None,
    include: str,
) -> AsyncIterator[bytes]:
    """The body of a watch response, one JSON event per line: the registry's events (as
    Tables when asked), BOOKMARKs every ``bookmark_interval`` seconds when asked, an ERROR
    event when the watch fails, and the end after ``timeoutSeconds`` on ``request_clock``
    (the timeout bounds the HTTP request, so it runs on the wall clock even when ``clock``,
    the simulated world's, is virtual)."""
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for item in events:
                await queue.put(("event", item))
        except APIError as error:
            await queue.put(("error", error.status))
        await queue.put(("end", None))

    async def ticker(kind: str, seconds: float, on: Clock) -> None:
        while True:
            await on.sleep(seconds)
            # A bookmark's revision is fixed when it is queued: every event up to it is
            # already ahead of it in the queue.
            await queue.put((kind, str(progress.bookmark())))

    tasks = [asyncio.create_task(pump())]
    # Upstream (endpoints/handlers/watch.go) ends a watch of negative timeoutSeconds at once;
    # 0 or none is its --min-request-timeout default, random in 1800-3600 s, which taintplane
    # leaves out: such a watch stays open until the client leaves.
    if timeout is not None and timeout != 0:
        tasks.append(asyncio.create_task(ticker("end", timeout, request_clock)))
    if bookmark_interval is not None:
        tasks.append(asyncio.create_task(ticker("bookmark", bookmark_interval, clock)))
    first_table = True
    try:
        while True:
            kind, payload = await queue.get()
            if kind == "end":
                return
            if kind == "error":
                yield codec.encode({"type": "ERROR", "object": payload}) + b"\n"
                return
            if kind == "bookmark":
                bookmark = {
                    "kind": resource.kind,
                    "apiVersion": resource.api_version,
                    "metadata": {"resourceVersion": payload},
                }
                yield codec.encode({"type": "BOOKMARK", "object": bookmark}) + b"\n"
                continue
            if table and payload.type != "BOOKMARK":
                obj = payload.object
                table_obj = table_for(
                    resource,
                    [obj],
                    clock.now(),
                    include_object=include,
                    with_definitions=first_table,
                    list_meta={"resourceVersion": obj["metadata"]["resourceVersion"]},
                )
                first_table = False
                yield codec.encode({"type": payload.type, "object": table_obj}) + b"\n"
                continue
            yield (b'{"type":"' + payload.type.encode() + b'","object":' + payload.encoded + b"}\n")
    finally:
        for task in tasks:
            task.cancel()
        # The pump must stop iterating before the generator can be closed.
        await asyncio.gather(*tasks, return_exceptions=True)
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()
