"""Authentication, impersonation and authorization in front of every request (kube-apiserver's
WithAuthentication, WithImpersonation and WithAuthorization filters).

A bearer token from the token file authenticates its user, who also gets
``system:authenticated``; a request without one is ``system:anonymous`` in
``system:unauthenticated`` (``--anonymous-auth`` defaults to true), whom RBAC allows only
``/version`` and the health checks; an unknown token is 401 (anonymous is not tried, as
upstream's union authenticator fails on error). In-process components are trusted: their
requests carry :data:`LOOPBACK` in the ASGI scope, which no network request can set.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from taintplane.admission.chain import UserInfo
from taintplane.api.scheme import Scheme
from taintplane.apiserver import codec
from taintplane.apiserver.auth import policy
from taintplane.apiserver.auth.attributes import Request as Attributes
from taintplane.apiserver.auth.attributes import forbidden, request_attributes
from taintplane.apiserver.auth.rbac import RBAC
from taintplane.apiserver.auth.reviews import REVIEWS, review
from taintplane.apiserver.registry import Registry
from taintplane.apiserver.status import APIError

__all__ = ["ANONYMOUS", "CURRENT_USER", "LOOPBACK", "SCOPE_USER", "Guard", "unauthorized"]

AUTHENTICATED = "system:authenticated"
ANONYMOUS = UserInfo("system:anonymous", ("system:unauthenticated",))
#: kube-apiserver's loopback client identity.
LOOPBACK = UserInfo("system:apiserver", ("system:authenticated", "system:masters"))
#: ASGI scope key the in-process transport's wrapper sets (never set by the HTTP server).
SCOPE_USER = "taintplane.user"
#: The user of the request being served (read by the admission hook).
CURRENT_USER: contextvars.ContextVar[UserInfo | None] = contextvars.ContextVar(
    "taintplane_user", default=None
)

Route = Callable[[Request], Awaitable[Response]]


def unauthorized() -> APIError:
    return APIError.make(401, "Unauthorized", "Unauthorized")


class Guard:
    def __init__(self, tokens: dict[str, UserInfo], registry: Registry, scheme: Scheme) -> None:
        self.tokens = tokens
        self.rbac = RBAC(registry, scheme)

    async def bootstrap(self, registry: Registry, scheme: Scheme) -> None:
        """Create the bootstrap ClusterRoles and ClusterRoleBindings that do not exist yet
        (an edited one is kept, as upstream keeps roles without the autoupdate annotation)."""
        for kind, objects in (
            ("ClusterRole", policy.cluster_roles()),
            ("ClusterRoleBinding", policy.cluster_role_bindings()),
        ):
            resource = scheme.by_kind("rbac.authorization.k8s.io/v1", kind)
            assert resource is not None
            for obj in objects:
                try:
                    await registry.create(resource, "", obj)
                except APIError as error:
                    if error.code != 409:
                        raise

    def authenticate(self, request: Request) -> UserInfo:
        trusted = request.scope.get(SCOPE_USER)
        if isinstance(trusted, UserInfo):
            return trusted
        header = request.headers.get("authorization", "").strip()
        parts = header.split(" ")
        if not header or len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
            return ANONYMOUS
        user = self.tokens.get(parts[1])
        if user is None:
            raise unauthorized()
        if AUTHENTICATED in user.groups or "system:unauthenticated" in user.groups:
            return user
        return UserInfo(user.name, (*user.groups, AUTHENTICATED), user.uid)

    async def impersonate(self, request: Request, user: UserInfo) -> UserInfo:
        """``Impersonate-User`` / ``Impersonate-Group`` (kubectl ``--as`` / ``--as-group``):
        allowed with the ``impersonate`` verb on ``users`` / ``groups``."""
        name = request.headers.get("impersonate-user")
        groups = request.headers.getlist("impersonate-group")
        if name is None:
            if groups:
                raise APIError.make(
                    500,
                    "InternalError",
                    "Internal error occurred: requested [{Group} {}] without impersonating a user",
                )
            return user
        asked = [("users", name)] + [("groups", g) for g in groups]
        for resource, value in asked:
            attributes = Attributes(user, "impersonate", True, "", "v1", resource, name=value)
            decision = await self.rbac.authorize(attributes)
            if not decision.allowed:
                raise forbidden(attributes, decision.reason)
        extra = () if name == ANONYMOUS.name or AUTHENTICATED in groups else (AUTHENTICATED,)
        return UserInfo(name, (*groups, *extra))

    def gate(self, app: ASGIApp, guarded: Callable[[str], bool]) -> ASGIApp:
        """``app`` with the paths ``guarded`` selects authenticated and authorized as
        non-resource requests (the admin endpoints and /metrics in front of the API)."""

        async def gated(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http" and guarded(scope.get("path", "")):
                request = Request(scope, receive)
                try:
                    user = await self.impersonate(request, self.authenticate(request))
                    attributes = Attributes(
                        user, request.method.lower(), False, path=request.scope["path"]
                    )
                    decision = await self.rbac.authorize(attributes)
                    if not decision.allowed:
                        raise forbidden(attributes, decision.reason)
                except APIError as error:
                    body = codec.encode(error.status)
                    response = Response(body, error.code, media_type="application/json")
                    await response(scope, receive, send)
                    return
            await app(scope, receive, send)

        return gated

    async def __call__(self, request: Request, route: Route) -> Response:
        user = await self.impersonate(request, self.authenticate(request))
        path = request.scope["path"]
        attributes = request_attributes(user, request.method, path, request.query_params)
        decision = await self.rbac.authorize(attributes)
        if not decision.allowed:
            raise forbidden(attributes, decision.reason)
        if request.method == "POST" and path.rstrip("/") in REVIEWS:
            return await review(self.rbac, request, user, path.rstrip("/"))
        token = CURRENT_USER.set(user)
        try:
            return await route(request)
        finally:
            CURRENT_USER.reset(token)
