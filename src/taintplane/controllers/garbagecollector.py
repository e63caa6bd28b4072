"""The garbage collector: dependents follow their owners (``metadata.ownerReferences``).

As upstream's (pkg/controller/garbagecollector), for every kind the API server serves that can
be listed, watched and deleted (found by discovery; events excepted, as upstream's ignored
resources), through a graph of owners and dependents (:mod:`gcgraph`):

- A dependent whose owners are all absent — verified by a live GET, by uid, so a new owner of
  the same name does not count — is deleted, with the propagation its own finalizers ask for
  (Background by default, so a ReplicaSet's pods follow it). A dependent with at least one
  valid owner only loses its dangling references.
- Orphan (``--cascade=orphan``): the owner waits with the ``orphan`` finalizer while its
  dependents lose their reference to it; then the finalizer goes and so does the owner.
- Foreground (``--cascade=foreground``): the owner waits with ``foregroundDeletion`` while its
  dependents are deleted — in the foreground only those that have dependents themselves — and
  loses the finalizer once no dependent that blocks owner deletion is left (at once when it
  has none). A dependent with another valid owner is kept and loses its reference to the
  owner being deleted.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from taintplane.api.scheme import SCHEME, ResourceType
from taintplane.client import ApiError, Client, Informer
from taintplane.client.queue_metrics import QueueMetrics
from taintplane.client.shared import SharedInformers
from taintplane.client.workqueue import WorkQueue
from taintplane.clock import Clock
from taintplane.controllers.gcgraph import FOREGROUND, ORPHAN, Graph, Identity, Node
from taintplane.controllers.inline_queue import handled_at_once

__all__ = ["IGNORED_RESOURCES", "GarbageCollector"]

log = logging.getLogger(__name__)

#: Upstream's DefaultIgnoredResources: (group, resource) the collector does not watch.
IGNORED_RESOURCES = frozenset({("", "events"), ("events.k8s.io", "events")})
DELETABLE_VERBS = frozenset({"delete", "list", "watch"})
#: Upstream's rate limiter for items requeued until observed: 5 ms doubling to 1000 s.
_REQUEUE_BASE, _REQUEUE_MAX = 0.005, 1000.0
_CONFLICT_RETRIES = 5


def _uid(obj: dict[str, Any]) -> str:
    return str(obj["metadata"].get("uid", ""))


class _NamespacedOwnerOfClusterScopedObject(Exception):
    """A cluster-scoped object naming a namespaced owner: an error no retry resolves."""


class GarbageCollector:
    def __init__(self, client: Client, clock: Clock, informers: SharedInformers) -> None:
        self.client = client
        self.clock = clock
        self.informers = informers
        # Keyed by uid, as upstream's queues by node.
        self.attempt_to_delete = WorkQueue(clock, name="garbage_collector_attempt_to_delete")
        self.attempt_to_orphan = WorkQueue(clock, name="garbage_collector_attempt_to_orphan")
        self.graph = Graph(
            lambda node: self.attempt_to_delete.add(node.identity.uid),
            lambda node: self.attempt_to_orphan.add(node.identity.uid),
        )
        # Upstream's GraphBuilder queues every informer event (and every virtual delete) for
        # its worker; our graph takes them in the callback, so only the metrics are kept.
        self.graph_changes = QueueMetrics(clock, "garbage_collector_graph_changes")
        self.monitors: dict[str, Informer] = {}
        self._unobserved_requeues: dict[str, int] = {}

    async def run(self) -> None:
        for rt in await self._deletable_resources():
            self._monitor(rt)
        for informer in self.monitors.values():
            await informer.synced.wait()
        await asyncio.gather(
            self.attempt_to_delete.run(self._attempt_to_delete_worker),
            self.attempt_to_orphan.run(self._attempt_to_orphan_worker),
        )

    # ---- discovery and monitors --------------------------------------------------------------

    async def _deletable_resources(self) -> list[ResourceType]:
        """Upstream's GetDeletableResources: the server's preferred version of every resource
        with list, watch and delete."""
        group_versions: list[tuple[str, str]] = [("", "v1")]
        groups = await self.client.get_path("/apis")
        for group in groups.get("groups") or []:
            preferred = (group.get("preferredVersion") or {}).get("version")
            versions = [v["version"] for v in group.get("versions") or []]
            versions.sort(key=lambda v: v != preferred)
            group_versions += [(group["name"], v) for v in versions]
        found: dict[tuple[str, str], ResourceType] = {}
        for group, version in group_versions:
            path = f"/apis/{group}/{version}" if group else "/api/v1"
            listed = await self.client.get_path(path)
            for api_resource in listed.get("resources") or []:
                plural = str(api_resource["name"])
                if (
                    "/" in plural
                    or (group, plural) in IGNORED_RESOURCES
                    or (group, plural) in found
                ):
                    continue
                rt = SCHEME.lookup(group, version, plural)
                if rt is not None and set(api_resource.get("verbs") or ()) >= DELETABLE_VERBS:
                    found[(group, plural)] = rt
        return list(found.values())

    def _monitor(self, rt: ResourceType) -> None:
        informer = self.informers.of(rt)
        api_version, kind = rt.api_version, rt.kind

        def added(obj: dict[str, Any]) -> None:
            with handled_at_once(self.graph_changes, _uid(obj)):
                self.graph.observe(api_version, kind, None, obj)

        def updated(old: dict[str, Any], new: dict[str, Any]) -> None:
            with handled_at_once(self.graph_changes, _uid(new)):
                self.graph.observe(api_version, kind, old, new)

        def deleted(obj: dict[str, Any]) -> None:
            with handled_at_once(self.graph_changes, _uid(obj)):
                self.graph.forget(obj)

        informer.add_handlers(added, updated, deleted)
        self.monitors[f"{rt.group}/{rt.plural}"] = informer

    # ---- work --------------------------------------------------------------------------------

    async def _attempt_to_orphan_worker(self, uid: str) -> None:
        node = self.graph.nodes.get(uid)
        if node is not None:
            await self._orphan_dependents(node)

    async def _attempt_to_delete_worker(self, uid: str) -> None:
        node = self.graph.nodes.get(uid)
        if node is None:
            self._unobserved_requeues.pop(uid, None)
            return
        await self._attempt_to_delete(node)
        if self.graph.nodes.get(uid) is node and not node.observed:
            # A virtual node whose object exists: check again until an informer sees it.
            count = self._unobserved_requeues.get(uid, 0)
            self._unobserved_requeues[uid] = count + 1
            self.attempt_to_delete.add_after(uid, min(_REQUEUE_BASE * 2**count, _REQUEUE_MAX))
        else:
            self._unobserved_requeues.pop(uid, None)

    def _virtual_delete(self, node: Node) -> None:
        with handled_at_once(self.graph_changes, node.identity.uid):
            self.graph.virtual_delete(node)

    async def _attempt_to_delete(self, node: Node) -> None:
        """Upstream's attemptToDeleteItem."""
        if node.being_deleted and not node.deleting_dependents:
            return  # on its way out; its dependents are looked at once it is gone
        latest = await self._get(node.identity, node.identity.namespace)
        if latest is None:
            self._virtual_delete(node)
            return
        if node.deleting_dependents:
            await self._process_deleting_dependents(node, latest)
            return
        references = list(latest["metadata"].get("ownerReferences") or [])
        if not references:
            return
        try:
            solid, dangling, waiting = await self._classify(node, references)
        except _NamespacedOwnerOfClusterScopedObject:
            log.info("%s is cluster-scoped but names a namespaced owner", node.identity)
            return
        if solid:
            if dangling or waiting:
                # A reference to an owner waiting for its dependents goes too, or that owner
                # would wait forever.
                await self._remove_references(node, latest, {r["uid"] for r in dangling + waiting})
            return
        if waiting and node.dependents:
            if any(dependent.deleting_dependents for dependent in node.dependents):
                # Owner and dependent both wait for their dependents: unblock this object's
                # references so that a cycle cannot hold them all.
                await self._unblock_references(node, latest)
            await self._delete(node, latest, "Foreground")
            return
        finalizers = latest["metadata"].get("finalizers") or []
        if ORPHAN in finalizers:
            policy = "Orphan"
        elif FOREGROUND in finalizers:
            policy = "Foreground"
        else:
            policy = "Background"
        await self._delete(node, latest, policy)

    async def _process_deleting_dependents(self, node: Node, latest: dict[str, Any]) -> None:
        # The graph counts the blocking dependents, and those not yet being deleted: O(1) per
        # dependent gone once all are being deleted, where upstream walks every dependent. A
        # dependent being deleted is not enqueued again (an attempt on it returns at once).
        if not self.graph.blocking(node):
            await self._remove_finalizer(node, latest, FOREGROUND)
            return
        for dependent in self.graph.blocking_live(node):
            if not dependent.deleting_dependents:
                self.attempt_to_delete.add(dependent.identity.uid)

    async def _orphan_dependents(self, owner: Node) -> None:
        """Upstream's attemptToOrphanWorker: every dependent loses its reference to the owner,
        then the owner loses its ``orphan`` finalizer."""
        for dependent in list(owner.dependents or ()):
            latest = await self._get(dependent.identity, dependent.identity.namespace)
            if latest is not None:
                await self._remove_references(dependent, latest, {owner.identity.uid})
        latest = await self._get(owner.identity, owner.identity.namespace)
        if latest is not None:
            await self._remove_finalizer(owner, latest, ORPHAN)

    async def _classify(
        self, node: Node, references: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        """Upstream's classifyReferences: solid (the owner exists and is not waiting for its
        dependents), dangling (absent), waiting for dependents' deletion."""
        solid: list[dict[str, Any]] = []
        dangling: list[dict[str, Any]] = []
        waiting: list[dict[str, Any]] = []
        for reference in references:
            owner = await self._live_owner(node, reference)
            if owner is None:
                dangling.append(reference)
            elif owner["metadata"].get("deletionTimestamp") and FOREGROUND in (
                owner["metadata"].get("finalizers") or []
            ):
                waiting.append(reference)
            else:
                solid.append(reference)
        return solid, dangling, waiting

    async def _live_owner(self, node: Node, reference: dict[str, Any]) -> dict[str, Any] | None:
        """Upstream's isDangling: the owner as the API server has it, None if it is absent
        (no object of that name, or one with another uid)."""
        api_version, kind = str(reference.get("apiVersion", "")), str(reference.get("kind", ""))
        owner = Identity(str(reference["uid"]), api_version, kind, str(reference.get("name")), "")
        if self.graph.known_absent(owner) or self.graph.known_absent(
            owner._replace(namespace=node.identity.namespace)
        ):
            return None
        rt = SCHEME.by_kind(api_version, kind)
        if rt is None:
            # Upstream retries a kind its REST mapper does not know; never collect on a guess.
            raise ApiError({"code": 500, "message": f"no resource for {api_version} {kind}"})
        if rt.namespaced and not node.identity.namespace:
            raise _NamespacedOwnerOfClusterScopedObject(str(node.identity))
        if rt.namespaced:
            owner = owner._replace(namespace=node.identity.namespace)
        live = await self._get(owner, owner.namespace)
        if live is None:
            self.graph.mark_absent(owner)
        return live

    # ---- API calls ---------------------------------------------------------------------------

    async def _get(self, identity: Identity, namespace: str) -> dict[str, Any] | None:
        """The object by its coordinates; None when absent or of another uid."""
        rt = SCHEME.by_kind(identity.api_version, identity.kind)
        if rt is None:
            raise ApiError({"code": 500, "message": f"no resource for {identity.kind}"})
        try:
            found = await self.client.get(rt, identity.name, namespace if rt.namespaced else "")
        except ApiError as error:
            if error.code == 404:
                return None
            raise
        return found if found["metadata"].get("uid") == identity.uid else None

    async def _delete(self, node: Node, latest: dict[str, Any], policy: str) -> None:
        rt = _resource(node)
        meta = latest["metadata"]
        try:
            await self.client.delete(
                rt,
                meta["name"],
                meta.get("namespace", ""),
                propagation=policy,
                uid=node.identity.uid,
            )
        except ApiError as error:
            if error.code == 404:
                self._virtual_delete(node)
            elif error.code != 409:
                raise

    async def _patch_metadata(
        self, node: Node, latest: dict[str, Any], change: Callable[[dict[str, Any]], Any]
    ) -> None:
        """A merge patch of ``metadata`` (``change(meta)``; None: nothing to change) at the
        object's resourceVersion; on a conflict, again with the object read afresh, as
        upstream's retry.RetryOnConflict (its five steps)."""
        rt = _resource(node)
        for attempt in range(_CONFLICT_RETRIES):
            meta = latest["metadata"]
            fields = change(meta)
            if fields is None:
                return
            patch = {"metadata": {**fields, "resourceVersion": meta.get("resourceVersion")}}
            try:
                await self.client.patch(
                    rt, meta["name"], patch, namespace=meta.get("namespace", "")
                )
                return
            except ApiError as error:
                if error.code == 404:
                    return
                if error.code != 409 or attempt == _CONFLICT_RETRIES - 1:
                    raise
            fresh = await self._get(node.identity, node.identity.namespace)
            if fresh is None:
                return
            latest = fresh

    async def _remove_references(
        self, node: Node, latest: dict[str, Any], owner_uids: set[str]
    ) -> None:
        def change(meta: dict[str, Any]) -> Any:
            references = meta.get("ownerReferences") or []
            kept = [r for r in references if r.get("uid") not in owner_uids]
            return None if len(kept) == len(references) else {"ownerReferences": kept or None}

        await self._patch_metadata(node, latest, change)

    async def _unblock_references(self, node: Node, latest: dict[str, Any]) -> None:
        def change(meta: dict[str, Any]) -> Any:
            references = meta.get("ownerReferences") or []
            unblocked = [r | {"blockOwnerDeletion": False} for r in references]
            return None if unblocked == references else {"ownerReferences": unblocked}

        await self._patch_metadata(node, latest, change)

    async def _remove_finalizer(self, node: Node, latest: dict[str, Any], finalizer: str) -> None:
        def change(meta: dict[str, Any]) -> Any:
            finalizers = meta.get("finalizers") or []
            kept = [f for f in finalizers if f != finalizer]
            return None if len(kept) == len(finalizers) else {"finalizers": kept or None}

        await self._patch_metadata(node, latest, change)


def _resource(node: Node) -> ResourceType:
    rt = SCHEME.by_kind(node.identity.api_version, node.identity.kind)
    if rt is None:
        raise ApiError({"code": 500, "message": f"no resource for {node.identity.kind}"})
    return rt
