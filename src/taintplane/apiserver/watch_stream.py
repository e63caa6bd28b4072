"""A watch response's body: the registry's events as JSON lines, with bookmarks, Tables,
the ERROR event of a failed watch and the end of a timed watch."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from taintplane.api.scheme import ResourceType
from taintplane.apiserver import codec
from taintplane.apiserver.fairness import yield_turn
from taintplane.apiserver.registry import WatchProgress
from taintplane.apiserver.status import APIError
from taintplane.apiserver.tables import table_for
from taintplane.clock import Clock

__all__ = ["PRE_TIMEOUT", "watch_lines"]

#: How long before a watch's deadline its last bookmark goes (cacheWatcher: "right before
#: the watcher timeout - for now we simply set it 2s before the deadline"), so a client that
#: reconnects resumes from a revision as recent as possible.
PRE_TIMEOUT = 2.0
#: Events queued between two turns for other requests.
_TURN_EVERY = 100


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
    repeat_bookmarks: bool = True,
) -> AsyncIterator[bytes]:
    """The body of a watch response, one JSON event per line: the registry's events (as
    Tables when asked), BOOKMARKs every ``bookmark_interval`` seconds when asked, an ERROR
    event when the watch fails, and the end after ``timeoutSeconds`` on ``request_clock``
    (the timeout bounds the HTTP request, so it runs on the wall clock even when ``clock``,
    the simulated world's, is virtual).

    Without ``repeat_bookmarks`` (an in-process component's informer) a bookmark that would
    repeat the last one, nothing sent in between, is left out: it would move the informer's
    resourceVersion nowhere. A steady cluster under virtual time changes nothing for hours,
    and its informers' heartbeats were each a line encoded, sent and decoded a minute."""
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    async def pump() -> None:
        try:
            sent = 0
            async for item in events:
                await queue.put(("event", item))
                sent += 1
                if sent % _TURN_EVERY == 0:
                    # The initial events of a large kind come in one burst, without a wait:
                    # other requests get their turn in between.
                    await yield_turn()
        except APIError as error:
            await queue.put(("error", error.status))
        await queue.put(("end", None))

    async def queue_bookmark() -> None:
        # A bookmark's revision is fixed when it is queued: every event up to it is already
        # ahead of it in the queue.
        await queue.put(("bookmark", str(progress.bookmark())))

    async def end_at(deadline: float) -> None:
        await request_clock.sleep(deadline - request_clock.monotonic())
        await queue.put(("end", None))

    async def bookmarks(frequency: float, deadline: float | None) -> None:
        """Upstream's cacheWatcher.nextBookmarkTime, jitter and its one-second buckets
        aside: the next bookmark is ``frequency`` after the last one, or 2 s before the
        watch's deadline if that comes first; none once that instant has passed (a watch of
        timeoutSeconds < 2 gets none). The heartbeat counts the cluster's clock, the deadline
        the request's (the same clock unless the cluster runs on virtual time)."""
        while True:
            if deadline is None:
                # No end to come before (a component's informer): only the heartbeat, one
                # sleep of the cluster's clock (under virtual time, one of thousands a day).
                await clock.sleep(frequency)
                await queue_bookmark()
                continue
            left = deadline - PRE_TIMEOUT - request_clock.monotonic()
            if left < 0:
                return
            if left <= frequency:
                # min(now + frequency, deadline - 2 s) is the deadline's: the last one.
                await request_clock.sleep(left)
                await queue_bookmark()
                return
            # The heartbeat is nearer, by the request clock's count; on virtual time the
            # two clocks run apart, so whichever comes first.
            due = await _first_of((clock, frequency), (request_clock, left))
            await queue_bookmark()
            if due == "deadline":
                return  # the one just before the end; the watch ends 2 s later

    tasks = [asyncio.create_task(pump())]
    # Upstream (endpoints/handlers/watch.go) ends a watch of negative timeoutSeconds at once;
    # 0 or none is its --min-request-timeout default, random in 1800-3600 s, which taintplane
    # leaves out: such a watch stays open until the client leaves.
    deadline = None
    if timeout is not None and timeout != 0:
        deadline = request_clock.monotonic() + timeout
        tasks.append(asyncio.create_task(end_at(deadline)))
    if bookmark_interval is not None:
        tasks.append(asyncio.create_task(bookmarks(bookmark_interval, deadline)))
    first_table = True
    #: The revision of the last bookmark sent, while nothing has been sent since.
    last_bookmark: str | None = None
    try:
        while True:
            kind, payload = await queue.get()
            if kind == "end":
                return
            if kind == "error":
                yield codec.encode({"type": "ERROR", "object": payload}) + b"\n"
                return
            if kind == "bookmark":
                if not repeat_bookmarks:
                    if payload == last_bookmark:
                        continue
                    last_bookmark = payload
                bookmark = {
                    "kind": resource.kind,
                    "apiVersion": resource.api_version,
                    "metadata": {"resourceVersion": payload},
                }
                yield codec.encode({"type": "BOOKMARK", "object": bookmark}) + b"\n"
                continue
            last_bookmark = None
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


async def _first_of(heartbeat: tuple[Clock, float], pre_timeout: tuple[Clock, float]) -> str:
    """Wait until the heartbeat or the pre-timeout instant, each ``(clock, seconds)``, and
    say which came first; the pre-timeout wins a tie (it is the last bookmark)."""
    waits = {
        asyncio.ensure_future(heartbeat[0].sleep(heartbeat[1])): "heartbeat",
        asyncio.ensure_future(pre_timeout[0].sleep(pre_timeout[1])): "deadline",
    }
    try:
        done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waits:
            waiter.cancel()
    return "deadline" if any(waits[w] == "deadline" for w in done) else "heartbeat"
