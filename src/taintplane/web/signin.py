"""A way into the dashboard under ``--auth`` for a browser, which cannot send a bearer token.

``/dashboard/signin`` takes a token in a form and keeps it in a cookie scoped to the
dashboard's path (``HttpOnly``: no script reads it; ``SameSite=Strict``: no other site's page
sends it; ``Secure`` over TLS). On every other dashboard request the cookie becomes the
``Authorization: Bearer`` header it stands for, *before* the server's authentication and
authorization run, so the token is checked and RBAC applied exactly as for kubectl; the page's
own reads of the API carry it too (:mod:`taintplane.web.as_user`). A 401 or 403 for a dashboard
page is shown as a page that says so and links here, instead of the API's JSON Status.
``/dashboard/signout`` forgets the cookie.
"""

from __future__ import annotations

import json
from html import escape
from urllib.parse import parse_qs, quote, unquote, urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from taintplane.web.page import html_page

__all__ = ["COOKIE", "SignIn"]

PREFIX = "/dashboard"
COOKIE = "taintplane-dashboard-token"
#: A form body larger than this is not a token.
MAX_FORM = 16 * 1024

_FORM = (
    "<p>The cluster runs with authentication. Paste a bearer token from your tokens file "
    "(the one <code>--auth</code> names); what the dashboard then shows is what RBAC lets "
    "that user read. Or run <code>kubectl proxy</code> and open "
    "<code>http://127.0.0.1:8001/dashboard/</code>.</p>"
    f'<form method="post" action="{PREFIX}/signin"><label for="token">Bearer token</label>'
    '<input id="token" name="token" type="password" autocomplete="off" required>'
    ' <button type="submit">Sign in</button></form>'
)


def _header(scope: Scope, name: bytes) -> bytes | None:
    return next((v for k, v in scope.get("headers", []) if k.lower() == name), None)


def _cookie_token(scope: Scope) -> str | None:
    raw = _header(scope, b"cookie")
    if raw is None:
        return None
    for part in raw.decode("latin-1").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE and value:
            return unquote(value)
    return None


def _same_origin(scope: Scope) -> bool:
    """A form posted from another site's page is refused (login CSRF): a browser sends
    ``Origin`` with every POST; it must name this server."""
    origin = _header(scope, b"origin")
    host = _header(scope, b"host")
    if origin is None or host is None:
        return origin is None
    return urlsplit(origin.decode("latin-1")).netloc == host.decode("latin-1")


def _cookie(scope: Scope, value: str, max_age: int | None = None) -> bytes:
    parts = [f"{COOKIE}={value}", f"Path={PREFIX}", "HttpOnly", "SameSite=Strict"]
    if scope.get("scheme") == "https":
        parts.append("Secure")
    if max_age is not None:
        parts.append(f"Max-Age={max_age}")
    return "; ".join(parts).encode()


async def _send(
    send: Send, status: int, body: str, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    data = body.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/html; charset=utf-8"),
                (b"content-length", str(len(data)).encode()),
                (b"cache-control", b"no-store"),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


async def _read_form(receive: Receive) -> dict[str, list[str]] | None:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if len(body) > MAX_FORM:
            return None
        if not message.get("more_body", False):
            break
    return parse_qs(body.decode("utf-8", "replace"))


class SignIn:
    """Wraps the authenticated app (``inner``) that serves the dashboard."""

    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path == PREFIX or path.startswith(PREFIX + "/")):
            await self.inner(scope, receive, send)
            return
        if path == PREFIX + "/signin":
            await self._signin(scope, receive, send)
            return
        if path == PREFIX + "/signout":
            gone = [(b"set-cookie", _cookie(scope, "", max_age=0))]
            await _send(send, 200, html_page("Signed out", _FORM), gone)
            return
        token = _cookie_token(scope)
        if token is not None and _header(scope, b"authorization") is None:
            bearer = (b"authorization", f"Bearer {token}".encode("latin-1", "replace"))
            scope = {**scope, "headers": [*scope.get("headers", []), bearer]}
        await self.inner(scope, receive, _html_refusals(send))

    async def _signin(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        if method in ("GET", "HEAD"):
            await _send(send, 200, html_page("Sign in", _FORM))
            return
        if method != "POST":
            await _send(send, 405, html_page("Not allowed", "<p>Sign in with the form.</p>"))
            return
        if not _same_origin(scope):
            await _send(send, 403, html_page("Not allowed", "<p>Cross-site sign-in.</p>"))
            return
        form = await _read_form(receive)
        token = ((form or {}).get("token") or [""])[0].strip()
        if not token or any(c.isspace() or not c.isprintable() for c in token):
            body = '<p class="denied">That is not a bearer token.</p>' + _FORM
            await _send(send, 400, html_page("Sign in", body))
            return
        headers = [
            (b"set-cookie", _cookie(scope, quote(token, safe=""))),
            (b"location", f"{PREFIX}/".encode()),
        ]
        await _send(send, 303, "", headers)


def _html_refusals(send: Send) -> Send:
    """``send``, with a 401/403 JSON Status turned into a page that says why and links to the
    sign-in form (the Status message kept word for word)."""
    refused: dict[str, object] = {}
    chunks: list[bytes] = []

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            types = [v for k, v in message.get("headers", []) if k.lower() == b"content-type"]
            if message["status"] in (401, 403) and types and b"json" in types[0]:
                refused["status"] = message["status"]
                return
        elif message["type"] == "http.response.body" and refused:
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            try:
                text = str(json.loads(b"".join(chunks)).get("message", ""))
            except (ValueError, AttributeError):
                text = ""
            status = int(str(refused["status"]))
            title = "Sign in needed" if status == 401 else "Not allowed"
            body = f'<p class="denied">{escape(text)}</p>' + _FORM
            await _send(send, status, html_page(title, body))
            return
        await send(message)

    return sending
