"""One informer per resource, shared by every component of a process.

Controllers in a controller manager watch the same pods and nodes; sharing the informers
keeps one cache and one watch per resource however many controllers read it.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from taintplane.api.scheme import ResourceType
from taintplane.client.client import Client, resource
from taintplane.client.informer import Informer, Transform
from taintplane.clock import Clock

__all__ = ["SharedInformers", "compact", "drop_managed_fields", "intern_strings", "pod_node_name"]


def pod_node_name(pod: dict[str, Any]) -> list[str]:
    """Index function: the node a pod is bound to (none while unscheduled)."""
    node = (pod.get("spec") or {}).get("nodeName")
    return [node] if node else []


def drop_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """The transform kube-controller-manager and kube-scheduler give their informer
    factories: cached objects without ``metadata.managedFields``, which no controller reads
    and which are a large part of every object (an update sent without them keeps the
    stored ones)."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    return obj


def intern_strings(node: dict[str, Any] | list[Any]) -> None:
    """Replace every string value under ``node`` by its interned copy, in place. A decoded
    object has a string of its own for every value, yet most values repeat from object to
    object (images, node names, condition types and statuses, timestamps of one second, the
    default tolerations): a third of a cached running pod, ~3 KB of ~9 KB. Costs ~5 µs a pod."""
    intern = sys.intern
    if isinstance(node, dict):
        for key, value in node.items():
            kind = type(value)
            if kind is str:
                node[key] = intern(value)  # replacing a value keeps the iteration valid
            elif kind is dict or kind is list:
                intern_strings(value)
    else:
        for at, value in enumerate(node):
            kind = type(value)
            if kind is str:
                node[at] = intern(value)
            elif kind is dict or kind is list:
                intern_strings(value)


def compact(obj: dict[str, Any]) -> dict[str, Any]:
    """The shared informers' transform: without managedFields (as upstream's factories), and
    with the strings it shares with other objects held once."""
    drop_managed_fields(obj)
    intern_strings(obj)
    return obj


class SharedInformers:
    def __init__(
        self,
        client: Client,
        *,
        transform: Transform | None = compact,
        node_name: str = "",
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        #: The informers' clock (their back-off after a failed list or watch).
        self.clock = clock
        self._transform = transform
        # A kubelet running as its node's identity may list and watch only its own Node and
        # the pods bound to it (the Node authorizer): its informers select just those.
        self._selectors = (
            {
                ("", "v1", "pods"): f"spec.nodeName={node_name}",
                ("", "v1", "nodes"): f"metadata.name={node_name}",
            }
            if node_name
            else {}
        )
        self._informers: dict[tuple[str, str, str], Informer] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._started: set[tuple[str, str, str]] = set()
        self._running = False

    def informer(self, group: str, version: str, plural: str) -> Informer:
        key = (group, version, plural)
        found = self._informers.get(key)
        if found is None:
            found = Informer(
                self.client,
                resource(group, version, plural),
                transform=self._transform,
                field_selector=self._selectors.get(key, ""),
                clock=self.clock,
            )
            self._informers[key] = found
            if self._running:
                self.start()  # asked for late: start it rather than leave its cache empty
        return found

    def of(self, rt: ResourceType) -> Informer:
        return self.informer(rt.group, rt.version, rt.plural)

    @property
    def pods(self) -> Informer:
        informer = self.informer("", "v1", "pods")
        if not informer.has_index("node"):
            informer.add_index("node", pod_node_name)
        return informer

    @property
    def nodes(self) -> Informer:
        return self.informer("", "v1", "nodes")

    def start(self) -> None:
        """Start every informer asked for so far; later ones start when asked for."""
        self._running = True
        for key, informer in self._informers.items():
            if key not in self._started:
                self._started.add(key)
                name = f"informer:{informer.resource.group}/{informer.resource.plural}"
                self._tasks.append(asyncio.create_task(informer.run(), name=name))

    async def wait_synced(self) -> None:
        await asyncio.gather(*(i.synced.wait() for i in self._informers.values()))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        self._running = False
