"""How a client reaches an API server: over HTTP, or in-process through the same ASGI app.

Components talk to the cluster only through the API. In ``taintplane up`` they share the
process with the API server, and the in-process transport calls its ASGI application
directly: the same routing, admission, validation and storage, without sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol
from urllib.parse import urlencode

import httpx

__all__ = ["HTTPTransport", "InProcessTransport", "RawRequest", "RawResponse", "Transport"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[
    [Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]
]


@dataclass(frozen=True)
class RawResponse:
    status: int
    body: bytes
    content_type: str


@dataclass(frozen=True)
class RawRequest:
    """One request of a batch (``batch``), as ``request`` takes it."""

    method: str
    path: str
    params: Mapping[str, str] | None = None
    body: bytes | None = None
    content_type: str = "application/json"


async def each_alone(transport: Transport, requests: Sequence[RawRequest]) -> list[RawResponse]:
    """A batch as concurrent single requests: what a transport without a batch path of its
    own does (the same answers, without the shared store transaction)."""
    return list(
        await asyncio.gather(
            *(
                transport.request(
                    r.method, r.path, params=r.params, body=r.body, content_type=r.content_type
                )
                for r in requests
            )
        )
    )


class Transport(Protocol):
    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str = "application/json",
    ) -> RawResponse: ...

    def stream(
        self, path: str, params: Mapping[str, str]
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[bytes]]:
        """A streaming GET (watch): yields the body line by line."""
        ...

    async def close(self) -> None: ...


class HTTPTransport:
    def __init__(
        self, base_url: str, *, token: str | None = None, verify: bool | ssl.SSLContext = True
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        # Components keep many requests in flight (bindings, events): keep that many
        # connections open instead of reconnecting beyond httpx's default of 20.
        self._client = httpx.AsyncClient(
            base_url=base_url,
            headers=headers,
            verify=verify,
            timeout=httpx.Timeout(60, read=None),
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=64),
        )

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str = "application/json",
    ) -> RawResponse:
        response = await self._client.request(
            method, path, params=params, content=body, headers={"Content-Type": content_type}
        )
        return RawResponse(
            response.status_code, response.content, response.headers.get("content-type", "")
        )

    async def batch(self, requests: Sequence[RawRequest]) -> list[RawResponse]:
        """Over HTTP a batch is its requests, sent concurrently (the API has no batch
        endpoint: the shared store transaction is the in-process transport's)."""
        return await each_alone(self, requests)

    @contextlib.asynccontextmanager
    async def stream(
        self, path: str, params: Mapping[str, str]
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        async with self._client.stream("GET", path, params=params) as response:

            async def lines() -> AsyncIterator[bytes]:
                async for line in response.aiter_lines():
                    if line:
                        yield line.encode()

            yield lines()

    async def close(self) -> None:
        await self._client.aclose()


@lru_cache(maxsize=1024)
def _encoded(items: tuple[tuple[str, str], ...]) -> bytes:
    return urlencode(items).encode()


def _query_string(params: Mapping[str, str]) -> bytes:
    """``urlencode(params).encode()``, encoded once per distinct set of parameters:
    components send the same few (their ``fieldManager``) with every request."""
    try:
        return _encoded(tuple(params.items()))
    except TypeError:  # a value that is no string (unhashable): encoded as it comes
        return urlencode(params).encode()


class InProcessTransport:
    """Calls an ASGI application in this process, as an HTTP server would."""

    def __init__(self, app: ASGIApp, *, user_agent: str = "taintplane") -> None:
        self._app = app
        self._user_agent = user_agent.encode()

    def _scope(
        self, method: str, path: str, params: Mapping[str, str] | None, content_type: str
    ) -> Scope:
        return {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "root_path": "",
            "query_string": _query_string(params) if params else b"",
            "headers": [
                (b"content-type", content_type.encode()),
                (b"user-agent", self._user_agent),
                (b"accept", b"application/json"),
            ],
            "client": ("127.0.0.1", 0),
            "server": ("127.0.0.1", 0),
        }

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str = "application/json",
    ) -> RawResponse:
        sent = False
        status = 500
        chunks: list[bytes] = []
        response_type = ""

        async def receive() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body or b"", "more_body": False}
            await asyncio.Event().wait()  # a plain request never reads twice
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            nonlocal status, response_type
            if message["type"] == "http.response.start":
                status = int(message["status"])
                for name, value in message.get("headers", []):
                    if name.lower() == b"content-type":
                        response_type = value.decode()
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self._app(self._scope(method, path, params, content_type), receive, send)
        return RawResponse(status, b"".join(chunks), response_type)

    async def batch(self, requests: Sequence[RawRequest]) -> list[RawResponse]:
        """The requests as one batch (``Client.batch``): the API server runs each through
        its whole request path and commits their writes in one store transaction, with one
        watch fan-out. The answers, in order."""
        answers: list[RawResponse] = []

        async def receive() -> Message:
            await asyncio.Event().wait()  # a batch is never read from
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            answers.extend(RawResponse(*answer) for answer in message["responses"])

        scope = {
            "type": "taintplane.batch",
            "requests": [
                (
                    self._scope(r.method, r.path, r.params, r.content_type),
                    r.body or b"",
                )
                for r in requests
            ],
        }
        await self._app(scope, receive, send)
        if len(answers) != len(requests):
            # An application without a batch path (not the API server's): one by one.
            return await each_alone(self, requests)
        return answers

    @contextlib.asynccontextmanager
    async def stream(
        self, path: str, params: Mapping[str, str]
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        disconnected = asyncio.Event()
        first = True

        async def receive() -> Message:
            nonlocal first
            if first:
                first = False
                return {"type": "http.request", "body": b"", "more_body": False}
            await disconnected.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            if message["type"] == "http.response.body":
                data = message.get("body", b"")
                if data:
                    await queue.put(data)
                if not message.get("more_body", False):
                    await queue.put(None)

        async def run() -> None:
            try:
                await self._app(self._scope("GET", path, params, "application/json"), receive, send)
            finally:
                await queue.put(None)

        task = asyncio.create_task(run())

        async def lines() -> AsyncIterator[bytes]:
            pending = b""
            while True:
                data = await queue.get()
                if data is None:
                    if pending.strip():
                        yield pending
                    return
                pending += data
                *complete, pending = pending.split(b"\n")
                for line in complete:
                    if line.strip():
                        yield line

        try:
            yield lines()
        finally:
            disconnected.set()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def close(self) -> None:
        return None
