"""The dashboard's reads as the person at the browser: under ``--auth`` each page reads the API
through the same ASGI app as any HTTP request, with the request's own ``Authorization`` header,
so authentication and RBAC decide what the page may show — never the in-process components'
loopback identity."""

from __future__ import annotations

from collections.abc import Mapping

from starlette.types import ASGIApp, Scope

from taintplane.client import Client
from taintplane.client.transport import InProcessTransport

__all__ = ["user_client"]


class _AsUser(InProcessTransport):
    """An in-process transport that sends ``authorization`` with every request."""

    def __init__(self, app: ASGIApp, credentials: list[tuple[bytes, bytes]]) -> None:
        super().__init__(app, user_agent="taintplane-dashboard")
        self._credentials = credentials

    def _scope(
        self, method: str, path: str, params: Mapping[str, str] | None, content_type: str
    ) -> Scope:
        scope = super()._scope(method, path, params, content_type)
        scope["headers"] = [*scope["headers"], *self._credentials]
        return scope


def user_client(scope: Scope, app: ASGIApp) -> Client:
    """A client that reads ``app`` with the credentials ``scope``'s request carried: its
    ``Authorization`` and ``Impersonate-*`` headers (none: anonymous, as the API would treat
    that request)."""
    credentials = [
        (name.lower(), value)
        for name, value in scope.get("headers", [])
        if name.lower() == b"authorization" or name.lower().startswith(b"impersonate-")
    ]
    return Client(_AsUser(app, credentials))
