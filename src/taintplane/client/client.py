"""A small client for the taintplane (Kubernetes) API over any transport.

Objects are plain dicts; resource types come from the scheme. Failures raise :class:`ApiError`
carrying the server's ``Status``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import orjson

from taintplane.api.scheme import SCHEME, ResourceType
from taintplane.client.transport import Transport

__all__ = ["COMPONENT_FIELD_MANAGERS", "PATCH_TYPES", "ApiError", "Client", "WatchEvent"]

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
        data = orjson.loads(response.body) if response.body else None
        if response.status >= 400:
            if isinstance(data, dict) and data.get("kind") == "Status":
                raise ApiError(data)
            raise ApiError(
                {"code": response.status, "message": response.body.decode(errors="replace")}
            )
        return data

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
        body: dict[str, Any] = {}
        if grace_period is not None:
            body["gracePeriodSeconds"] = grace_period
        if propagation is not None:
            body["propagationPolicy"] = propagation
        if uid is not None:
            body["preconditions"] = {"uid": uid}
        return await self._call("DELETE", _path(rt, namespace, name), body=body)

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
