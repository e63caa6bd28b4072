"""Which pods are bound to which node, and what each names: the part of upstream's node
authorizer graph (plugin/pkg/auth/authorizer/node/graph.go) that a lookup by object cannot
answer cheaply ("is this Secret named by a pod on node n1?").

Kept from a list of every pod and a watch after it, started by the first node request that
needs it (a cluster without node identities never pays for it), so a question costs a
dictionary lookup instead of a list of the namespace's pods (5 000 pods: 197 ms). Before
answering, it catches up with every change the store has published, so a pod bound a moment
ago already counts: the store publishes a write's change before acknowledging it, and the
watch has seen everything published once its queue is empty. A watch that ends (compaction,
the store closing) leaves the question to the caller; the next one builds the index again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from taintplane.apiserver.registry import Registry
from taintplane.apiserver.registry_reads import WatchProgress

__all__ = ["NodeGraph", "References"]

log = logging.getLogger(__name__)

MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"

#: What a pod names, by resource (``secrets``: {names}, ...).
References = Mapping[str, frozenset[str]]
Visit = Callable[[Mapping[str, Any]], Iterator[str]]
Key = tuple[str, str]

_PAGE = 500
_NOTHING: References = {}
_CONTAINERS = ("containers", "initContainers", "ephemeralContainers")


def _names_any(pod: Mapping[str, Any]) -> bool:
    """Whether the pod may name another object at all (most name none: a quick look spares
    them the full visit)."""
    spec = pod.get("spec") or {}
    if not isinstance(spec, dict):
        return False
    if any(spec.get(k) for k in ("volumes", "imagePullSecrets", "serviceAccountName")):
        return True
    if spec.get("resourceClaims") or (pod.get("status") or {}).get("extendedResourceClaimStatus"):
        return True
    for key in _CONTAINERS:
        for container in spec.get(key) or ():
            if isinstance(container, dict) and (container.get("env") or container.get("envFrom")):
                return True
    return False


class NodeGraph:
    def __init__(self, registry: Registry, references: Mapping[str, Visit]) -> None:
        self.registry = registry
        pods = registry.scheme.by_kind("v1", "Pod")
        assert pods is not None
        self._pods_type = pods
        self._visits = references
        self._on: dict[str, dict[Key, References]] = {}
        self._node_of: dict[Key, str] = {}
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._progress = WatchProgress()
        self._idle = asyncio.Event()

    async def pods_on(self, node: str, namespace: str) -> list[References] | None:
        """What the pods bound to ``node`` in ``namespace`` name (mirror pods name nothing),
        or None when the index cannot be had (its watch failed: the caller looks itself)."""
        if not await self._caught_up():
            return None
        return [refs for (ns, _), refs in (self._on.get(node) or {}).items() if ns == namespace]

    # ---- keeping it --------------------------------------------------------------------------

    async def _caught_up(self) -> bool:
        if self._task is None or self._task.done():
            self._ready.clear()
            self._task = asyncio.create_task(self._follow(), name="node-authorizer-graph")
        while True:
            await self._ready.wait()
            if self._task.done():
                return False
            if self._idle_now():
                return True
            self._idle.clear()
            await self._idle.wait()

    def _idle_now(self) -> bool:
        """Every change the store published has been applied: the watch's queue is empty and
        it is not replaying (the hub fills queues as it publishes, before acknowledging)."""
        source = self._progress.source
        return source is not None and source.bookmark_revision() is not None

    def _check_idle(self) -> None:
        if self._idle_now():
            self._idle.set()

    async def _follow(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            self._on.clear()
            self._node_of.clear()
            # In pages of one snapshot, so that other requests are served in between.
            page = await self.registry.list(self._pods_type, "", limit=_PAGE)
            for pod in page.items:
                self._apply(pod, deleted=False)
            while page.continue_token:
                page = await self.registry.list(
                    self._pods_type, "", limit=_PAGE, continue_token=page.continue_token
                )
                for pod in page.items:
                    self._apply(pod, deleted=False)
            self._progress = WatchProgress()
            watch = self.registry.watch(
                self._pods_type,
                "",
                resource_version=page.resource_version,
                progress=self._progress,
                send_initial_events=False,
            )
            self._ready.set()
            # Looked at once the watch waits for its first change (or replays the gap since
            # the list), and after each change: a replay's end is seen only once it waits.
            loop.call_soon(self._check_idle)
            async for item in watch:
                if item.type != "BOOKMARK":
                    self._apply(item.object, deleted=item.type == "DELETED")
                loop.call_soon(self._check_idle)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.warning("node authorizer: the pod watch ended (%s); it restarts when asked", error)
        finally:
            self._ready.set()  # waiters see the task done
            self._idle.set()

    def _apply(self, pod: Mapping[str, Any], *, deleted: bool) -> None:
        metadata = pod.get("metadata") or {}
        key = (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))
        old = self._node_of.pop(key, None)
        if old is not None:
            bound = self._on.get(old)
            if bound is not None:
                bound.pop(key, None)
                if not bound:
                    del self._on[old]
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if deleted or not node:
            return
        if MIRROR_POD_ANNOTATION in (metadata.get("annotations") or {}) or not _names_any(pod):
            # A mirror pod: a node must never grant itself other objects through a pod it made.
            refs: References = _NOTHING
        else:
            named = {kind: frozenset(visit(pod)) for kind, visit in self._visits.items()}
            refs = {kind: names for kind, names in named.items() if names}
        self._node_of[key] = node
        self._on.setdefault(node, {})[key] = refs
