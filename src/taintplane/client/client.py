"""A small client for the taintplane (Kubernetes) API over any transport.

Objects are plain dicts; resource types come from the scheme. Failures raise :class:`ApiError`
carrying the server's ``Status``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from taintplane.api.scheme import SCHEME, ResourceType
from taintplane.client.transport import RawRequest, RawResponse, Transport, each_alone

__all__ = ["COMPONENT_FIELD_MANAGERS", "PATCH_TYPES", "ApiError", "Client", "Op", "WatchEvent"]

PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}

WatchEvent = tuple[str, dict[str, Any]]


class ApiError(Exception):
    """A request the server refused; ``status`` is its ``metav1.Status``."""

    def __init__(self, status: Mapping[str, Any]) -> None:
        super().__init__(str(status.get("message", "")))
        self.status = dict(status)

    @property
    def code(self) -> int:
        return int(self.status.get("code") or 0)

    @property
    def reason(self) -> str:
        return str(self.status.get("reason") or "")


def resource(group: str, version: str, plural: str) -> ResourceType:
    found = SCHEME.lookup(group, version, plural)
    if found is None:
        raise KeyError(f"{plural}.{group}/{version} is not served")
    return found


def _path(rt: ResourceType, namespace: str = "", name: str = "", subresource: str = "") -> str:
    base = "/api/v1" if not rt.group else f"/apis/{rt.group}/{rt.version}"
    if rt.namespaced and namespace:
        base += f"/namespaces/{namespace}"
    path = f"{base}/{rt.plural}"
    if name:
        path += f"/{name}"
    if subresource:
        path += f"/{subresource}"
    return path


#: The field manager each component writes as: upstream's component names (the first word of
#: their user agents, which is what kube-apiserver records when no fieldManager is given).
COMPONENT_FIELD_MANAGERS = {
    "scheduler": "kube-scheduler",
    "controller-manager": "kube-controller-manager",
    "agents": "kubelet",
}


@dataclass(frozen=True)
class Op:
    """One request of a batch (:meth:`Client.batch`), made by the constructors below with
    the arguments of the :class:`Client` method of the same name."""

    method: str
    path: str
    body: Any = None
    content_type: str = "application/json"
    #: Whether the client's field manager goes with it (writes that record managed fields).
    managed: bool = False

    @staticmethod
    def get(rt: ResourceType, name: str, namespace: str = "") -> Op:
        return Op("GET", _path(rt, namespace, name))

    @staticmethod
    def create(rt: ResourceType, obj: Mapping[str, Any], namespace: str = "") -> Op:
        return Op("POST", _path(rt, namespace), obj, managed=True)

    @staticmethod
    def update(rt: ResourceType, obj: Mapping[str, Any], *, subresource: str = "") -> Op:
        meta = obj["metadata"]
        path = _path(rt, meta.get("namespace", ""), meta["name"], subresource)
        return Op("PUT", path, obj, managed=True)

    @staticmethod
    def patch(
        rt: ResourceType,
        name: str,
        patch: Any,
        *,
        namespace: str = "",
        patch_type: str = "merge",
        subresource: str = "",
    ) -> Op:
        path = _path(rt, namespace, name, subresource)
        return Op("PATCH", path, patch, PATCH_TYPES[patch_type], managed=True)

    @staticmethod
    def delete(
        rt: ResourceType,
        name: str,
        namespace: str = "",
        *,
        grace_period: int | None = None,
        propagation: str | None = None,
        uid: str | None = None,
    ) -> Op:
        body: dict[str, Any] = {}
        if grace_period is not None:
            body["gracePeriodSeconds"] = grace_period
        if propagation is not None:
            body["propagationPolicy"] = propagation
        if uid is not None:
            body["preconditions"] = {"uid": uid}
        return Op("DELETE", _path(rt, namespace, name), body)


def _answer(response: RawResponse) -> Any:
    """The decoded body of a response, or the ``ApiError`` it is."""
    data = orjson.loads(response.body) if response.body else None
    if response.status >= 400:
        if isinstance(data, dict) and data.get("kind") == "Status":
            return ApiError(data)
        return ApiError(
            {"code": response.status, "message": response.body.decode(errors="replace")}
        )
    return data


class Client:
    def __init__(self, transport: Transport, *, field_manager: str = "taintplane") -> None:
        self.transport = transport
        self.field_manager = field_manager

    def with_field_manager(self, field_manager: str) -> Client:
        """A client on the same transport whose writes are recorded under ``field_manager``
        (each component its own, as upstream's: kubelet, kube-scheduler, ...)."""
        return Client(self.transport, field_manager=field_manager)

    async def _call(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Any:
        raw = None if body is None else orjson.dumps(body)
        response = await self.transport.request(
            method, path, params=params, body=raw, content_type=content_type
        )
        answer = _answer(response)
        if isinstance(answer, ApiError):
            raise answer
        return answer

    async def batch(self, ops: Sequence[Op]) -> list[Any]:
        """Several requests at once: each one's decoded answer, or the :class:`ApiError` it
        failed with (one failing fails no other), in order.

        In-process, the API server runs each request through its whole path — authorization,
        admission, validation, field management, each exactly as alone — and commits their
        writes in one store transaction with one watch fan-out (DESIGN.md: components that
        write in bursts). Their watch events come in the order of the batch's writes, each
        object's in the order of its own requests' rounds. Two requests on one object in one
        batch race as two concurrent requests would; a component that needs them in order
        (a status write, then a deletion) sends two batches. Over HTTP, or through a rate
        limited transport, the requests go one by one, concurrently, with the same answers.
        """
        requests = [
            RawRequest(
                op.method,
                op.path,
                params={"fieldManager": self.field_manager} if op.managed else None,
                body=None if op.body is None else orjson.dumps(op.body),
                content_type=op.content_type,
            )
            for op in ops
        ]
        if not requests:
            return []
        batch = getattr(self.transport, "batch", None)
        responses = await (batch(requests) if batch else each_alone(self.transport, requests))
        return [_answer(response) for response in responses]

    async def version(self) -> dict[str, Any]:
        """The server's ``/version`` (also a cheap check that it answers)."""
        result: dict[str, Any] = await self._call("GET", "/version")
        return result

    async def get_path(self, path: str) -> Any:
        """GET a path outside the resource tree (e.g. a taintplane admin endpoint)."""
        return await self._call("GET", path)

    async def get(self, rt: ResourceType, name: str, namespace: str = "") -> dict[str, Any]:
        result: dict[str, Any] = await self._call("GET", _path(rt, namespace, name))
        return result

    async def list(
        self,
        rt: ResourceType,
        namespace: str = "",
        *,
        label_selector: str = "",
        field_selector: str = "",
    ) -> tuple[list[dict[str, Any]], str]:
        params = {
            k: v
            for k, v in (("labelSelector", label_selector), ("fieldSelector", field_selector))
            if v
        }
        data = await self._call("GET", _path(rt, namespace), params=params)
        return list(data["items"]), str(data["metadata"].get("resourceVersion", ""))

    async def create(
        self, rt: ResourceType, obj: Mapping[str, Any], namespace: str = ""
    ) -> dict[str, Any]:
        result: dict[str, Any] = await self._call(
            "POST", _path(rt, namespace), body=obj, params={"fieldManager": self.field_manager}
        )
        return result

    async def update(
        self, rt: ResourceType, obj: Mapping[str, Any], *, subresource: str = ""
    ) -> dict[str, Any]:
        meta = obj["metadata"]
        result: dict[str, Any] = await self._call(
            "PUT",
            _path(rt, meta.get("namespace", ""), meta["name"], subresource),
            body=obj,
            params={"fieldManager": self.field_manager},
        )
        return result

    async def patch(
        self,
        rt: ResourceType,
        name: str,
        patch: Any,
        *,
        namespace: str = "",
        patch_type: str = "merge",
        subresource: str = "",
    ) -> dict[str, Any]:
        result: dict[str, Any] = await self._call(
            "PATCH",
            _path(rt, namespace, name, subresource),
            body=patch,
            content_type=PATCH_TYPES[patch_type],
            params={"fieldManager": self.field_manager},
        )
        return result

    async def delete(
        self,
        rt: ResourceType,
        name: str,
        namespace: str = "",
        *,
        grace_period: int | None = None,
        propagation: str | None = None,
        uid: str | None = None,
    ) -> Any:
        op = Op.delete(
            rt, name, namespace, grace_period=grace_period, propagation=propagation, uid=uid
        )
        return await self._call(op.method, op.path, body=op.body)

    async def post_subresource(
        self, rt: ResourceType, name: str, namespace: str, subresource: str, body: Mapping[str, Any]
    ) -> Any:
        return await self._call("POST", _path(rt, namespace, name, subresource), body=body)

    async def watch(
        self,
        rt: ResourceType,
        namespace: str = "",
        *,
        resource_version: str = "",
        allow_bookmarks: bool = True,
        field_selector: str = "",
    ) -> AsyncIterator[WatchEvent]:
        params = {"watch": "true", "resourceVersion": resource_version}
        if allow_bookmarks:
            params["allowWatchBookmarks"] = "true"
        if field_selector:
            params["fieldSelector"] = field_selector
        async with self.transport.stream(_path(rt, namespace), params) as lines:
            async for line in lines:
                event = orjson.loads(line)
                yield str(event["type"]), event["object"]
