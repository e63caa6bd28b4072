"""OpenAPI v3: the discovery index and one document per group-version.

kubectl needs it for ``apply``/``create``/``replace`` (a PATCH operation per kind carrying
``x-kubernetes-group-version-kind`` and the ``fieldValidation`` parameter, KUBECTL_CONTRACT
§8) and ``explain`` (schemas with descriptions). Schemas come from
``openapi_schemas.json``, generated from the Kubernetes 1.35 Python client by
``scripts/gen_openapi_schemas.py``.
"""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from importlib import resources
from typing import Any

from taintplane.api.scheme import ResourceType, Scheme

__all__ = ["OpenAPI"]

PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)
META = "io.k8s.apimachinery.pkg.apis.meta.v1"
_EXTRA_SCHEMAS = {
    f"{META}.Patch": {
        "type": "object",
        "description": (
            "Patch is provided to give a concrete name and type to the Kubernetes PATCH "
            "request body."
        ),
    },
}


def _param(name: str, kind: str = "string", where: str = "query") -> dict[str, Any]:
    return {"name": name, "in": where, "schema": {"type": kind, "uniqueItems": True}}


def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


class OpenAPI:
    def __init__(self, scheme: Scheme) -> None:
        self.scheme = scheme
        self._documents: dict[str, bytes] = {}

    @cached_property
    def _source(self) -> dict[str, Any]:
        text = resources.files("taintplane.apiserver").joinpath("openapi_schemas.json").read_text()
        data: dict[str, Any] = json.loads(text)
        data["schemas"].update(_EXTRA_SCHEMAS)
        return data

    def index(self) -> dict[str, Any]:
        paths = {}
        for group, version in sorted(self.scheme.group_versions()):
            key = _gv_path(group, version)
            digest = hashlib.sha512(self.document(group, version)).hexdigest().upper()
            paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
        return {"paths": paths}

    def document(self, group: str, version: str) -> bytes:
        key = _gv_path(group, version)
        if key not in self._documents:
            self._documents[key] = json.dumps(self._build(group, version), sort_keys=True).encode()
        return self._documents[key]

    def has(self, path: str) -> tuple[str, str] | None:
        for group, version in self.scheme.group_versions():
            if _gv_path(group, version) == path:
                return group, version
        return None

    # ---- building ---------------------------------------------------------------------------

    def _schema_name(self, rt: ResourceType, kind: str) -> str:
        name: str = self._source["kinds"][f"{rt.group}/{rt.version}/{kind}"]
        return name

    def _build(self, group: str, version: str) -> dict[str, Any]:
        paths: dict[str, Any] = {}
        roots = [f"{META}.Status", f"{META}.DeleteOptions", f"{META}.Patch"]
        for rt in self.scheme.resources(group, version):
            roots.append(self._schema_name(rt, rt.kind))
            if "list" in rt.verbs:
                roots.append(self._schema_name(rt, rt.list_kind))
            paths.update(self._paths(rt))
        schemas = self._closure(roots)
        return {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": "v1.35.0+taintplane"},
            "paths": paths,
            "components": {"schemas": schemas},
        }

    def _closure(self, roots: list[str]) -> dict[str, Any]:
        every = self._source["schemas"]
        found: dict[str, Any] = {}
        pending = list(roots)
        while pending:
            name = pending.pop()
            if name in found or name not in every:
                continue
            found[name] = every[name]
            text = json.dumps(every[name])
            for part in text.split('"#/components/schemas/')[1:]:
                pending.append(part.split('"', 1)[0])
        return found

    def _paths(self, rt: ResourceType) -> dict[str, Any]:
        base = "/api/v1" if not rt.group else f"/apis/{rt.group}/{rt.version}"
        scope = (
            f"{base}/namespaces/{{namespace}}/{rt.plural}"
            if rt.namespaced
            else f"{base}/{rt.plural}"
        )
        if "list" not in rt.verbs:  # bindings: only POST to the collection
            create_only = _Operations(rt, self._schema_name(rt, rt.kind), "")
            return {scope: create_only.create_only()}
        ops = _Operations(rt, self._schema_name(rt, rt.kind), self._schema_name(rt, rt.list_kind))
        paths = {scope: ops.collection(), f"{scope}/{{name}}": ops.item()}
        if rt.has_subresource("status"):
            paths[f"{scope}/{{name}}/status"] = ops.status()
        return paths


def _schema_ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _path_param(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": {"type": "string", "uniqueItems": True},
    }


class _Operations:
    """The operations of one resource, named and tagged as kube-apiserver names them."""

    WRITE = (_param("dryRun"), _param("fieldManager"), _param("fieldValidation"))

    def __init__(self, rt: ResourceType, kind_schema: str, list_schema: str) -> None:
        self.rt = rt
        self.ref = _schema_ref(kind_schema)
        self.list_ref = _schema_ref(list_schema)
        group = rt.group.split(".")[0].capitalize() if rt.group else "Core"
        self.prefix = group + rt.version.capitalize() + ("Namespaced" if rt.namespaced else "")
        self.scope_params = [_path_param("namespace")] if rt.namespaced else []

    def op(
        self,
        action: str,
        verb: str,
        params: Any,
        response: dict[str, Any],
        body: dict[str, Any] | None = None,
        codes: tuple[str, ...] = ("200",),
        suffix: str = "",
    ) -> dict[str, Any]:
        rt = self.rt
        content = {"application/json": {"schema": response}}
        operation: dict[str, Any] = {
            "operationId": f"{verb}{self.prefix}{rt.kind}{suffix}",
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": {
                "group": rt.group,
                "kind": rt.kind,
                "version": rt.version,
            },
            "parameters": list(params),
            "responses": {code: {"description": "OK", "content": content} for code in codes},
        }
        if body is not None:
            operation["requestBody"] = {"content": body, "required": True}
        return operation

    def _writes(self, suffix: str = "") -> dict[str, Any]:
        json_body = {"application/json": {"schema": self.ref}}
        patch_body = {t: {"schema": _schema_ref(f"{META}.Patch")} for t in PATCH_TYPES}
        patch_params = (*self.WRITE, _param("force", "boolean"))
        return {
            "put": self.op(
                "put", "replace", self.WRITE, self.ref, json_body, ("200", "201"), suffix
            ),
            "patch": self.op(
                "patch", "patch", patch_params, self.ref, patch_body, ("200", "201"), suffix
            ),
        }

    def item(self) -> dict[str, Any]:
        delete_body = {"application/json": {"schema": _schema_ref(f"{META}.DeleteOptions")}}
        delete_params = (_param("dryRun"), _param("gracePeriodSeconds", "integer"))
        return {
            "get": self.op("get", "read", (), self.ref),
            **self._writes(),
            "delete": self.op(
                "delete", "delete", delete_params, _schema_ref(f"{META}.Status"), delete_body
            ),
            "parameters": [_path_param("name"), *self.scope_params, _param("pretty")],
        }

    def collection(self) -> dict[str, Any]:
        list_params = (
            _param("labelSelector"),
            _param("fieldSelector"),
            _param("limit", "integer"),
            _param("continue"),
            _param("resourceVersion"),
            _param("watch", "boolean"),
        )
        json_body = {"application/json": {"schema": self.ref}}
        return {
            "get": self.op("list", "list", list_params, self.list_ref),
            "post": self.op(
                "post", "create", self.WRITE, self.ref, json_body, ("200", "201", "202")
            ),
            "parameters": [*self.scope_params, _param("pretty")],
        }

    def create_only(self) -> dict[str, Any]:
        json_body = {"application/json": {"schema": self.ref}}
        return {
            "post": self.op(
                "post", "create", self.WRITE, self.ref, json_body, ("200", "201", "202")
            ),
            "parameters": [*self.scope_params, _param("pretty")],
        }

    def status(self) -> dict[str, Any]:
        return {
            "get": self.op("get", "read", (), self.ref, suffix="Status"),
            **self._writes("Status"),
            "parameters": [_path_param("name"), *self.scope_params, _param("pretty")],
        }
