"""Authentication, impersonation and authorization in front of every request (kube-apiserver's
WithAuthentication, WithImpersonation and WithAuthorization filters).

A bearer token from the token file authenticates its user, who also gets
``system:authenticated``; a request without one is ``system:anonymous`` in
``system:unauthenticated`` (``--anonymous-auth`` defaults to true), whom RBAC allows only
``/version`` and the health checks; an unknown token is 401 (anonymous is not tried, as
upstream's union authenticator fails on error). Authorization is ``--authorization-mode=Node,RBAC``
(``chain.py``). In-process components are trusted: their
requests carry :data:`LOOPBACK` in the ASGI scope, which no network request can set.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from taintplane.admission.chain import UserInfo
from taintplane.api.names import is_dns1123_subdomain
from taintplane.api.scheme import Scheme
from taintplane.apiserver import codec
from taintplane.apiserver.auth import policy
from taintplane.apiserver.auth.attributes import Request as Attributes
from taintplane.apiserver.auth.attributes import forbidden, request_attributes
from taintplane.apiserver.auth.chain import Authorizers
from taintplane.apiserver.auth.escalation import escalation_checked
from taintplane.apiserver.auth.node import NodeAuthorizer
from taintplane.apiserver.auth.rbac import RBAC
from taintplane.apiserver.registry import Registry
from taintplane.apiserver.status import APIError

__all__ = [
    "ANONYMOUS",
    "CURRENT_REQUEST",
    "CURRENT_USER",
    "LOOPBACK",
    "SCOPE_USER",
    "Guard",
    "unauthorized",
]

AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = UserInfo("system:anonymous", (UNAUTHENTICATED,))
_SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", re.ASCII)
#: kube-apiserver's loopback client identity.
LOOPBACK = UserInfo("system:apiserver", ("system:authenticated", "system:masters"))
#: ASGI scope key the in-process transport's wrapper sets (never set by the HTTP server).
SCOPE_USER = "taintplane.user"
#: The user of the request being served (read by the admission hook).
CURRENT_USER: contextvars.ContextVar[UserInfo | None] = contextvars.ContextVar(
    "taintplane_user", default=None
)
#: What the request being served asks, in authorization terms (upstream's RequestInfo and
#: user on the request context; read by the RBAC escalation check).
CURRENT_REQUEST: contextvars.ContextVar[Attributes | None] = contextvars.ContextVar(
    "taintplane_request", default=None
)

Route = Callable[[Request], Awaitable[Response]]


def unauthorized() -> APIError:
    return APIError.make(401, "Unauthorized", "Unauthorized")


class Guard:
    def __init__(self, tokens: dict[str, UserInfo], registry: Registry, scheme: Scheme) -> None:
        self.tokens = tokens
        self.rbac = RBAC(registry, scheme)
        #: --authorization-mode=Node,RBAC
        self.authorizer = Authorizers(self.rbac, NodeAuthorizer(registry, scheme))
        # RBAC writes are checked for privilege escalation after mutating admission, as
        # upstream's policy-based RBAC storage does.
        registry.admit = escalation_checked(registry.admit, self.rbac, CURRENT_REQUEST.get)

    async def bootstrap(self, registry: Registry, scheme: Scheme) -> None:
        """Create the bootstrap ClusterRoles, ClusterRoleBindings and the kube-system /
        kube-public Roles and RoleBindings that do not exist yet (an edited one is kept, as
        upstream keeps roles without the autoupdate annotation)."""
        for kind, objects in (
            ("ClusterRole", policy.cluster_roles()),
            ("ClusterRoleBinding", policy.cluster_role_bindings()),
            ("Role", policy.roles()),
            ("RoleBinding", policy.role_bindings()),
        ):
            resource = scheme.by_kind("rbac.authorization.k8s.io/v1", kind)
            assert resource is not None
            for obj in objects:
                namespace = str(obj["metadata"].get("namespace") or "")
                try:
                    await registry.create(resource, namespace, obj)
                except APIError as error:
                    if error.code != 409:
                        raise
        await _unbind_nodes_group(registry, scheme)

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
        if AUTHENTICATED in user.groups or UNAUTHENTICATED in user.groups:
            return user
        return UserInfo(user.name, (*user.groups, AUTHENTICATED), user.uid)

    async def impersonate(self, request: Request, user: UserInfo) -> UserInfo:
        """``Impersonate-User`` / ``Impersonate-Group`` (kubectl ``--as`` / ``--as-group``):
        allowed with the ``impersonate`` verb on ``users`` / ``groups``, or on the
        ``serviceaccounts`` object a ``system:serviceaccount:NS:NAME`` user names (whose
        groups are then its service-account groups unless groups are given)."""
        name = request.headers.get("impersonate-user", "")
        requested = request.headers.getlist("impersonate-group")
        if not name:
            if requested:
                raise APIError.make(
                    500,
                    "InternalError",
                    "Internal error occurred: requested [{Group} {}] without impersonating a user",
                )
            return user
        groups = list(requested)
        account = _service_account(name)
        if account is None:
            asked = [Attributes(user, "impersonate", True, "", "v1", "users", name=name)]
        else:
            namespace, account_name = account
            asked = [
                Attributes(
                    user,
                    "impersonate",
                    True,
                    "",
                    "v1",
                    "serviceaccounts",
                    namespace=namespace,
                    name=account_name,
                )
            ]
            groups = groups or ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]
        asked += [
            Attributes(user, "impersonate", True, "", "v1", "groups", name=group)
            for group in requested
        ]
        for attributes in asked:
            decision = await self.authorizer.authorize(attributes)
            if not decision.allowed:
                raise forbidden(attributes, decision.reason)
        if name == ANONYMOUS.name:
            extra = () if UNAUTHENTICATED in groups else (UNAUTHENTICATED,)
        elif AUTHENTICATED in groups or UNAUTHENTICATED in groups:
            extra = ()
        else:
            extra = (AUTHENTICATED,)
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
                    decision = await self.authorizer.authorize(attributes)
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
        decision = await self.authorizer.authorize(attributes)
        if not decision.allowed:
            raise forbidden(attributes, decision.reason)
        token = CURRENT_USER.set(user)
        asked = CURRENT_REQUEST.set(attributes)
        try:
            return await route(request)
        finally:
            CURRENT_REQUEST.reset(asked)
            CURRENT_USER.reset(token)


#: What taintplane bound ``system:node`` to before it had a Node authorizer.
_OLD_NODE_SUBJECTS = [
    {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:nodes"}
]


async def _unbind_nodes_group(registry: Registry, scheme: Scheme) -> None:
    """A data directory from before the Node authorizer has ``system:node`` bound to every
    node (taintplane's own former deviation): that binding gave a node every pod and node, so
    it goes, unless an administrator changed it (no ``autoupdate``, or other subjects)."""
    bindings = scheme.by_kind("rbac.authorization.k8s.io/v1", "ClusterRoleBinding")
    assert bindings is not None
    try:
        binding = await registry.get(bindings, "", "system:node")
    except APIError:
        return
    annotations = binding["metadata"].get("annotations") or {}
    if (
        binding.get("subjects") != _OLD_NODE_SUBJECTS
        or annotations.get("rbac.authorization.kubernetes.io/autoupdate") != "true"
    ):
        return
    del binding["subjects"]
    await registry.update(bindings, "", "system:node", binding)


def _service_account(username: str) -> tuple[str, str] | None:
    """serviceaccount.SplitUsername: ``system:serviceaccount:NS:NAME`` with a valid namespace
    (DNS-1123 label) and name (DNS-1123 subdomain), as (NS, NAME)."""
    if not username.startswith(_SERVICE_ACCOUNT_PREFIX):
        return None
    parts = username[len(_SERVICE_ACCOUNT_PREFIX) :].split(":")
    if len(parts) != 2:
        return None
    namespace, name = parts
    if len(namespace) > 63 or not _DNS1123_LABEL.fullmatch(namespace):
        return None
    if is_dns1123_subdomain(name):
        return None
    return namespace, name
