"""The API server as an ASGI application: routing, error handling, start-up."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import replace
from functools import partial
from typing import Any
from urllib.parse import urlencode

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from taintplane.admission.chain import UserInfo
from taintplane.admission.plugins import AdmissionSetup
from taintplane.api.features import FeatureGates
from taintplane.api.scheme import SCHEME, Scheme
from taintplane.api.selectors import SelectorError
from taintplane.apiserver import codec, discovery, fairness
from taintplane.apiserver.admission_hook import create_system_priority_classes, install_admission
from taintplane.apiserver.auth.guard import LOOPBACK, SCOPE_USER, Guard
from taintplane.apiserver.body_limits import limited_receive
from taintplane.apiserver.cached_request import CachedRequest
from taintplane.apiserver.conversion import VIEWS, View
from taintplane.apiserver.fairness import Fairness
from taintplane.apiserver.handlers import ResourceHandlers, json_response
from taintplane.apiserver.health import (
    NAMESPACES_HOOK,
    PRIORITY_CLASSES_HOOK,
    RBAC_HOOK,
    HealthChecks,
)
from taintplane.apiserver.openapi import OpenAPI
from taintplane.apiserver.registry import Registry
from taintplane.apiserver.registry_batch import WriteGroup
from taintplane.apiserver.request_cost import classify
from taintplane.apiserver.requestinfo import RequestInfo, parse_resource_path
from taintplane.apiserver.scopes import SCOPE_IN_PROCESS
from taintplane.apiserver.status import APIError
from taintplane.apiserver.strategies.core import NAMESPACE_NAME_LABEL
from taintplane.clock import Clock
from taintplane.store.interface import Store

__all__ = ["BATCH_SCOPE", "DEFAULT_NAMESPACES", "APIServer"]

log = logging.getLogger(__name__)

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")

#: The ASGI scope type of a batch of requests (only the in-process transport sends one; an
#: HTTP server never does): ``scope["requests"]`` holds (http scope, body) pairs.
BATCH_SCOPE = "taintplane.batch"


class APIServer:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        features: FeatureGates | None = None,
        scheme: Scheme = SCHEME,
        server_address: str = "127.0.0.1:6443",
        bookmark_interval: float = 60.0,
        compaction_interval: float = 300.0,
        default_not_ready_toleration_seconds: int = 300,
        default_unreachable_toleration_seconds: int = 300,
        admission: AdmissionSetup | None = None,
        tokens: dict[str, UserInfo] | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        if features is not None and not features.device_taint_rules:
            # As storage_resource.go: DeviceTaintRules are not served without the gate.
            scheme = scheme.without("resource.k8s.io", "devicetaintrules")
        self.scheme = scheme
        self.server_address = server_address
        self.registry = Registry(store, clock, features, scheme)
        #: The admission configuration in force (``taintplane policy who-can-land`` reads it).
        self.admission_setup = admission or AdmissionSetup()
        self.admission = install_admission(
            self.registry,
            scheme,
            not_ready_seconds=default_not_ready_toleration_seconds,
            unreachable_seconds=default_unreachable_toleration_seconds,
            setup=admission,
        )
        self.handlers = ResourceHandlers(
            self.registry, clock, bookmark_interval=bookmark_interval, tokens=tokens
        )
        self.app = self._asgi
        #: With ``tokens`` (``--auth``): authentication and RBAC on every request.
        self.guard = Guard(tokens, self.registry, scheme) if tokens is not None else None
        self._background: set[asyncio.Task[None]] = set()
        self.openapi = OpenAPI(scheme)
        self.compaction_interval = compaction_interval
        self.health = HealthChecks(store, rbac=self.guard is not None)
        #: Max in flight and seats for expensive requests (fairness.py).
        self.fairness = Fairness()
        quiescence = getattr(clock, "add_quiescence_check", None)
        if quiescence is not None:
            # Virtual time moves on only once expensive requests' work in the thread is done.
            quiescence(fairness.drained)

    # ---- start-up --------------------------------------------------------------------------

    async def bootstrap(self) -> None:
        """Create the default namespaces and the system priority classes. (Namespaces being
        deleted are the namespace controller's: it empties and finalizes them.)"""
        ns_type = self._namespaces()
        for name in DEFAULT_NAMESPACES:
            try:
                await self.registry.create(ns_type, "", {"metadata": {"name": name}})
            except APIError as error:
                if error.code != 409:
                    raise
        await self._label_namespaces()
        self.health.hook_finished(NAMESPACES_HOOK)
        await create_system_priority_classes(self.registry, self.scheme)
        self.health.hook_finished(PRIORITY_CLASSES_HOOK)
        if self.guard is not None:
            await self.guard.bootstrap(self.registry, self.scheme)
            self.health.hook_finished(RBAC_HOOK)
        self._spawn(self._compact_periodically())

    async def _label_namespaces(self) -> None:
        """Namespaces stored before taintplane labelled them (an older data directory) get
        their ``kubernetes.io/metadata.name`` label now, rewritten once at start-up, where
        kube-apiserver's defaulting adds it to every namespace it reads from etcd."""
        ns_type = self._namespaces()
        for namespace in (await self.registry.list(ns_type, "")).items:
            metadata = namespace.get("metadata") or {}
            if (metadata.get("labels") or {}).get(NAMESPACE_NAME_LABEL) == metadata.get("name"):
                continue
            # Writing it back unchanged is enough: the namespace strategy's defaulting labels it.
            await self.registry.guaranteed_update(
                ns_type, "", str(metadata["name"]), lambda ns: ns, manager="kube-apiserver"
            )

    async def _compact_periodically(self) -> None:
        """Every interval, forget history older than the previous tick, as kube-apiserver
        compacts etcd: watches and lists from older revisions then get 410 and relist."""
        previous = await self.store.current_revision()
        while True:
            await self.clock.sleep(self.compaction_interval)
            current = await self.store.current_revision()
            await self.store.compact(previous)
            previous = current

    def _spawn(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _namespaces(self) -> Any:
        ns_type = self.scheme.lookup("", "v1", "namespaces")
        assert ns_type is not None
        return ns_type

    # ---- routing ---------------------------------------------------------------------------

    async def _asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI entry point. Routing is ours (Kubernetes paths are not a route table), so
        requests go straight to :meth:`dispatch` without a framework router in between."""
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] == BATCH_SCOPE:
            await self._batch(scope, send)
            return
        if scope["type"] != "http":
            return
        # A body past the limit is refused as it arrives, never read whole into memory.
        response = await self.dispatch(CachedRequest(scope, limited_receive(receive)))
        await response(scope, receive, send)

    async def _batch(self, scope: Scope, send: Send) -> None:
        """A batch from the in-process transport (``Client.batch``): every request of it
        takes the whole path of a request (``dispatch``: authorization, handlers, admission,
        validation, field management) as the batch's user, and their writes are committed
        as one store transaction (``registry_batch``). The answer is every request's
        status, body and content type, in order."""
        shared = {k: scope[k] for k in (SCOPE_USER, SCOPE_IN_PROCESS) if k in scope}

        async def one(sub: Scope, body: bytes) -> tuple[int, bytes, str]:
            # A request of the batch is its user's: whatever it says of itself is dropped.
            sub = {k: v for k, v in sub.items() if k not in (SCOPE_USER, SCOPE_IN_PROCESS)}
            sub.update(shared)
            answer: dict[str, Any] = {"status": 500, "body": [], "type": ""}

            async def receive() -> dict[str, Any]:
                return {"type": "http.request", "body": body, "more_body": False}

            async def reply(message: Any) -> None:
                if message["type"] == "http.response.start":
                    answer["status"] = int(message["status"])
                    for name, value in message.get("headers", []):
                        if name.lower() == b"content-type":
                            answer["type"] = value.decode()
                elif message["type"] == "http.response.body":
                    answer["body"].append(message.get("body", b""))

            await self._asgi(sub, receive, reply)
            return answer["status"], b"".join(answer["body"]), answer["type"]

        group = WriteGroup(self.registry.store)
        results = await group.run([partial(one, sub, body) for sub, body in scope["requests"]])
        responses = []
        for result in results:
            if isinstance(result, BaseException):
                log.error("internal error in a batch request: %s", result)
                status = APIError.internal(f"{type(result).__name__}: {result}").status
                result = (500, orjson.dumps(status), "application/json")
            responses.append(result)
        await send({"type": BATCH_SCOPE + ".responses", "responses": responses})

    async def loopback_app(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI app for in-process components: trusted as kube-apiserver's loopback
        client (``system:apiserver`` in ``system:masters``), and known to send bodies the
        client serialized from dicts (see :data:`SCOPE_IN_PROCESS`)."""
        await self._asgi({**scope, SCOPE_USER: LOOPBACK, SCOPE_IN_PROCESS: True}, receive, send)

    async def dispatch(self, request: Request) -> Response:
        try:
            if self.guard is not None:
                return await self.guard(request, self._route)
            return await self._route(request)
        except APIError as error:
            return json_response(error.status, error.code)
        except Exception as error:  # a bug: report it as Kubernetes would, never a bare 500
            log.exception("internal error serving %s %s", request.method, request.scope["path"])
            status = APIError.internal(f"{type(error).__name__}: {error}").status
            return json_response(status, 500)

    async def _route(self, request: Request) -> Response:
        path = request.scope["path"].rstrip("/") or "/"
        segments = [s for s in path.split("/") if s]
        accept = request.headers.get("accept", "")
        if segments and segments[0] in ("healthz", "livez", "readyz"):
            health = await self.health.serve(segments, request.query_params)
            if health is None:
                raise APIError.route_not_found()
            return health
        if request.method != "GET" and len(segments) < 3:
            raise APIError.method_not_allowed(
                "the server does not allow this method on the requested resource"
            )
        if segments[:2] == ["openapi", "v3"]:
            if len(segments) == 2:
                return json_response(self.openapi.index())
            found = self.openapi.has("/".join(segments[2:]))
            if found is None:
                raise APIError.route_not_found()
            return Response(self.openapi.document(*found), media_type="application/json")
        if segments[:1] == ["openapi"]:
            raise APIError.route_not_found()
        if path == "/version":
            return json_response(discovery.version_info())
        if path == "/api":
            if "as=APIGroupDiscoveryList" in accept:
                return json_response(
                    discovery.aggregated_core(self.scheme),
                    content_type=discovery.AGGREGATED_CONTENT_TYPE,
                )
            return json_response(discovery.legacy_api_versions(self.server_address))
        if path == "/apis":
            if "as=APIGroupDiscoveryList" in accept:
                return json_response(
                    discovery.aggregated_apis(self.scheme),
                    content_type=discovery.AGGREGATED_CONTENT_TYPE,
                )
            return json_response(discovery.legacy_group_list(self.scheme))
        if segments[:2] == ["api", "v1"]:
            if len(segments) == 2:
                return json_response(discovery.resource_list(self.scheme, "", "v1"))
            return await self._resource(request, "", "v1", segments[2:])
        if segments and segments[0] == "apis" and len(segments) >= 2:
            group = segments[1]
            if group not in self.scheme.groups():
                raise APIError.route_not_found()
            if len(segments) == 2:
                return json_response(discovery.legacy_group(self.scheme, group))
            version = segments[2]
            if version not in self.scheme.versions(group):
                raise APIError.route_not_found()
            if len(segments) == 3:
                return json_response(discovery.resource_list(self.scheme, group, version))
            return await self._resource(request, group, version, segments[3:])
        raise APIError.route_not_found()

    async def _resource(
        self, request: Request, group: str, version: str, segments: list[str]
    ) -> Response:
        info = parse_resource_path(self.scheme, group, version, segments)
        view = VIEWS.get((group, version, info.resource.plural))

        async def serve() -> Response:
            if view is not None:
                return await self._converted(request, info, view)
            return await self.handlers.handle(request, info)

        return await self.fairness.serve(classify(request, info), serve)

    async def _converted(self, request: Request, info: RequestInfo, view: View) -> Response:
        """A request for a kind served from another version's storage: convert the body in,
        handle it as a request for the stored resource, convert the answer out."""
        stored = self.scheme.lookup(*view.storage)
        assert stored is not None
        request = _with_stored_field_labels(request, view)
        content_type = codec.media_type(request.headers.get("content-type"))
        if request.method in ("POST", "PUT", "PATCH"):
            raw = await request.body()
            kind = (
                "application/yaml"
                if content_type.endswith("yaml")
                else (
                    "application/json"
                    if content_type.endswith("json") or not content_type
                    else content_type
                )
            )
            body = codec.decode_body(raw, kind)
            request.state.body = view.patch_to_storage(body, content_type, stored.api_version)
        response = await self.handlers.handle(request, replace(info, resource=stored))
        if isinstance(response, StreamingResponse):
            response.body_iterator = _convert_lines(response.body_iterator, view)
            return response
        if response.media_type != "application/json":
            return response
        converted = view.from_storage(orjson.loads(bytes(response.body)))
        return json_response(converted, response.status_code)

    async def close(self) -> None:
        self.health.shutting_down()
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)


async def _convert_lines(lines: AsyncIterable[Any], view: View) -> AsyncIterator[bytes]:
    async for line in lines:
        event = orjson.loads(line)
        event["object"] = view.from_storage(event.get("object"))
        yield orjson.dumps(event) + b"\n"


def _with_stored_field_labels(request: Request, view: View) -> Request:
    """The request with its field selector in the stored version's labels (a 400 for a label
    the served version does not have, as the apiserver's FieldSelector.Transform)."""
    text = request.query_params.get("fieldSelector")
    if not text:
        return request
    try:
        converted = view.field_selector_to_storage(text)
    except SelectorError as error:
        raise APIError.bad_request(error.message) from error
    params = [
        (k, converted if k == "fieldSelector" else v) for k, v in request.query_params.multi_items()
    ]
    scope = {**request.scope, "query_string": urlencode(params).encode()}
    return Request(scope, request.receive)
