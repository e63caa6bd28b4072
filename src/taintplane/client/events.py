"""Recording core/v1 Events as Kubernetes components do (``record.EventRecorder``)."""

from __future__ import annotations

import logging
import time
from typing import Any

from taintplane.api.decoding import format_time
from taintplane.client.client import ApiError, Client, resource
from taintplane.clock import Clock

__all__ = ["EventRecorder", "object_reference"]

log = logging.getLogger(__name__)

EVENTS = resource("", "v1", "events")


def object_reference(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    ref = {
        "kind": obj.get("kind", ""),
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "apiVersion": obj.get("apiVersion", ""),
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    return {k: v for k, v in ref.items() if v}


class EventRecorder:
    """Writes one Event per call, named ``<object>.<hex nanoseconds>`` like client-go."""

    def __init__(self, client: Client, clock: Clock, component: str, host: str = "") -> None:
        self.client = client
        self.clock = clock
        self.source = {"component": component, **({"host": host} if host else {})}
        self._sequence = time.monotonic_ns()  # uniqueness only, not time

    async def event(
        self,
        obj: dict[str, Any],
        type_: str,
        reason: str,
        message: str,
        *,
        reference: dict[str, Any] | None = None,
    ) -> None:
        ref = reference if reference is not None else object_reference(obj)
        # Cluster-scoped objects' events go to "default", as client-go does.
        namespace = ref.get("namespace") or "default"
        now = self.clock.now()
        self._sequence += 1
        stamp = int(now.timestamp() * 1e9) + self._sequence % 1_000_000
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{ref.get('name', '')}.{stamp:x}", "namespace": namespace},
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "source": self.source,
            "firstTimestamp": format_time(now),
            "lastTimestamp": format_time(now),
            "count": 1,
            "type": type_,
            "reportingComponent": self.source["component"],
            "reportingInstance": self.source.get("host", ""),
        }
        try:
            await self.client.create(EVENTS, event, namespace=namespace)
        except ApiError as error:
            log.debug("event %s for %s not recorded: %s", reason, ref.get("name"), error)
