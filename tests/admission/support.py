"""A fake cluster for calling admission plugins directly."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from taintplane.admission import Attributes, Chain, Plugin
from taintplane.api.scheme import SCHEME, ResourceType

PODS = SCHEME.lookup("", "v1", "pods")
assert PODS is not None


class FakeLookup:
    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = list(objects)

    async def list(self, api_version: str, kind: str) -> Sequence[dict[str, Any]]:
        return [o for o in self.objects if (o["apiVersion"], o["kind"]) == (api_version, kind)]

    async def get(
        self, api_version: str, kind: str, name: str, namespace: str = ""
    ) -> dict[str, Any] | None:
        return next(
            (
                o
                for o in await self.list(api_version, kind)
                if o["metadata"]["name"] == name and o["metadata"].get("namespace", "") == namespace
            ),
            None,
        )


def namespace(annotations: dict[str, Any] | None = None, name: str = "ns") -> dict[str, Any]:
    """A Namespace; list values are JSON-encoded as the toleration annotations are."""
    encoded = {
        k: v if isinstance(v, str) else json.dumps(v) for k, v in (annotations or {}).items()
    }
    metadata: dict[str, Any] = {"name": name}
    if encoded:
        metadata["annotations"] = encoded
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


def pod(name: str = "p", namespace: str = "ns", **spec: Any) -> dict[str, Any]:
    spec.setdefault("containers", [{"name": "c", "image": "i"}])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def attributes(
    obj: dict[str, Any],
    operation: str = "CREATE",
    *,
    old: dict[str, Any] | None = None,
    subresource: str = "",
    resource: ResourceType = PODS,
) -> Attributes:
    ns = obj["metadata"].get("namespace", "")
    return Attributes(operation, resource, ns, obj, old, subresource)


def run(plugin: Plugin, attrs: Attributes) -> None:
    """Both phases, as the chain runs them."""
    asyncio.run(Chain([plugin]).admit(attrs))
