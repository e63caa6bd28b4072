"""A census of the API requests the in-process components send: how many of each kind.

Every component of an in-process cluster reaches the API server through its loopback ASGI
app; the census wraps the server's entry point (each request of a ``Client.batch`` passes it
too) and counts requests by verb (kube-apiserver's: ``create``, ``update``, ``patch``,
``get``, ``list``, ``watch``, ``delete``), resource, subresource, the ``fieldManager`` sent and
the component that sent it, found on the caller's stack (the first frame of a controller,
a kubelet or the scheduler module; client-side helpers are skipped so an Event is counted as
its recorder's component). An Event create also carries its ``reason``, and a status answered
with an error its code, so that a 409 shows apart from the write that landed.

Used by ``deployment_scale.py --census`` to compare writes per pod with upstream's.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from types import FrameType
from typing import Any
from urllib.parse import parse_qs

import orjson

__all__ = ["Census", "Kind"]

Scope = MutableMapping[str, Any]
ASGI = Callable[[Scope, Any, Any], Awaitable[None]]

_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
#: Module prefixes named as a component, most specific first.
_COMPONENTS = ("taintplane.controllers.", "taintplane.agents.", "taintplane.scheduler")


@dataclass(frozen=True, order=True)
class Kind:
    verb: str
    resource: str
    subresource: str
    field_manager: str
    component: str
    #: An Event's reason, or the error code of a refused request ("" otherwise).
    detail: str


def _resource(path: str) -> tuple[str, str, bool]:
    """(resource, subresource, named) of an API path (``/api/v1/...``, ``/apis/g/v/...``)."""
    parts = [p for p in path.split("/") if p]
    if not parts:
        return "", "", False
    rest = parts[2:] if parts[0] == "api" else parts[3:]
    group = "" if parts[0] == "api" else parts[1]
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]
    if not rest:
        return "namespaces" if parts[-2:-1] == ["namespaces"] else "", "", True
    plural = f"{rest[0]}.{group}" if group else rest[0]
    return plural, rest[2] if len(rest) > 2 else "", len(rest) > 1


def _component(frame: FrameType | None) -> str:
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        for prefix in _COMPONENTS:
            if module.startswith(prefix):
                return module.removeprefix("taintplane.")
        frame = frame.f_back
    return "?"


class Census:
    """Counts the requests through an ASGI app; :meth:`wrap` the app, read :attr:`counts`."""

    def __init__(self) -> None:
        self.counts: Counter[Kind] = Counter()
        #: The resourceVersion of each object's last write answered (by path).
        self._versions: dict[str, str] = {}

    def wrap(self, app: ASGI) -> ASGI:
        async def counted(scope: Scope, receive: Any, send: Any) -> None:
            if scope.get("type") != "http":
                await app(scope, receive, send)
                return
            component = _component(sys._getframe(1))
            if scope["method"] == "GET" and b"watch=true" in scope.get("query_string", b""):
                # Counted as it opens: a watch may outlast the census.
                self._count(scope, component, 200, b"")
                await app(scope, receive, send)
                return
            status = 0
            answer: list[bytes] = []

            async def watched(message: Any) -> None:
                nonlocal status
                if message.get("type") == "http.response.start":
                    status = int(message["status"])
                elif message.get("type") == "http.response.body":
                    answer.append(message.get("body", b""))
                await send(message)

            body = b""

            async def reading() -> Any:
                nonlocal body
                message = await receive()
                body += message.get("body", b"")
                return message

            await app(scope, reading, watched)
            self._count(scope, component, status, body, b"".join(answer))

        return counted

    def _count(
        self, scope: Scope, component: str, status: int, body: bytes, answer: bytes = b""
    ) -> None:
        method = scope["method"]
        resource, subresource, named = _resource(scope["path"])
        query = parse_qs(scope.get("query_string", b"").decode())
        if method == "GET":
            verb = "watch" if query.get("watch") == ["true"] else ("get" if named else "list")
        else:
            verb = _VERBS.get(method, method.lower())
        detail = ""
        if status >= 400:
            detail = str(status)
        elif verb == "create" and resource.startswith("events"):
            try:
                detail = str(orjson.loads(body).get("reason", ""))
            except orjson.JSONDecodeError:
                detail = "?"
        elif verb in ("update", "patch"):
            detail = self._unchanged(scope["path"], subresource, answer)
        elif verb == "create" and not subresource and answer:
            self._created(scope["path"], answer)
        manager = (query.get("fieldManager") or [""])[0]
        self.counts[Kind(verb, resource, subresource, manager, component, detail)] += 1

    def _unchanged(self, path: str, subresource: str, answer: bytes) -> str:
        """ "unchanged" for a write whose answer has the resourceVersion the object's last
        answer had: the server stored nothing (a write that changed nothing)."""
        if subresource:
            path = path.rsplit("/", 1)[0]
        try:
            version = str(orjson.loads(answer)["metadata"]["resourceVersion"])
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return ""
        before = self._versions.get(path)
        self._versions[path] = version
        return "unchanged" if before == version else ""

    def _created(self, path: str, answer: bytes) -> None:
        try:
            meta = orjson.loads(answer)["metadata"]
            self._versions[f"{path}/{meta['name']}"] = str(meta["resourceVersion"])
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return

    def table(self, per: int) -> list[dict[str, Any]]:
        """One row per kind, most frequent first, with its count per ``per`` (a pod)."""
        rows = []
        for kind, count in sorted(self.counts.items(), key=lambda item: (-item[1], item[0])):
            rows.append(
                {
                    "verb": kind.verb,
                    "resource": kind.resource,
                    "subresource": kind.subresource,
                    "fieldManager": kind.field_manager,
                    "component": kind.component,
                    "detail": kind.detail,
                    "count": count,
                    "per_pod": round(count / per, 3),
                }
            )
        return rows

    @staticmethod
    def format(rows: list[dict[str, Any]]) -> str:
        """The table as aligned text (per pod, count, verb, resource/subresource, who)."""
        lines = [f"{'per pod':>8} {'count':>7}  request  (fieldManager, component) detail"]
        for row in rows:
            target = row["resource"] + (f"/{row['subresource']}" if row["subresource"] else "")
            lines.append(
                f"{row['per_pod']:>8.3f} {row['count']:>7}  {row['verb']} {target}  "
                f"({row['fieldManager'] or '-'}, {row['component']}) {row['detail']}"
            )
        total = sum(row["count"] for row in rows)
        lines.append(f"{sum(r['per_pod'] for r in rows):>8.3f} {total:>7}  all requests")
        return "\n".join(lines)
