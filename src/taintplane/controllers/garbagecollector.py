"""The garbage collector: dependents follow their owners (``metadata.ownerReferences``).

As upstream's, for the kinds this cluster's controllers own (Pods, ReplicaSets,
ControllerRevisions, Leases, owned by Deployments, ReplicaSets, DaemonSets and Nodes):

- Background (the default of ``kubectl delete``): the owner is gone at once; a dependent all of
  whose owners are gone — checked with a live GET, by uid, so a new owner of the same name
  does not count — is deleted (in the background too, so a ReplicaSet's pods follow it).
- Orphan (``--cascade=orphan``): the owner waits with the ``orphan`` finalizer while its
  dependents lose their reference to it; then the finalizer goes and so does the owner.
- Foreground (``--cascade=foreground``): the owner waits with ``foregroundDeletion`` while its
  dependents are deleted (foreground as well); once none that block owner deletion is left,
  the finalizer goes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from taintplane.api.scheme import SCHEME, ResourceType
from taintplane.client import ApiError, Client, Informer, object_key, resource
from taintplane.client.shared import SharedInformers
from taintplane.client.workqueue import WorkQueue
from taintplane.clock import Clock

__all__ = ["GarbageCollector"]

log = logging.getLogger(__name__)

DEPENDENTS = (
    resource("", "v1", "pods"),
    resource("apps", "v1", "replicasets"),
    resource("apps", "v1", "controllerrevisions"),
    resource("coordination.k8s.io", "v1", "leases"),
)
OWNERS = (
    resource("apps", "v1", "deployments"),
    resource("apps", "v1", "replicasets"),
    resource("apps", "v1", "daemonsets"),
    resource("", "v1", "nodes"),
)


def _owner_refs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in (obj.get("metadata") or {}).get("ownerReferences") or [] if r.get("uid")]


class GarbageCollector:
    def __init__(self, client: Client, clock: Clock, informers: SharedInformers) -> None:
        self.client = client
        self.clock = clock
        self.dependents: dict[str, Informer] = {}
        self.owners: dict[str, Informer] = {}
        for rt in DEPENDENTS:
            informer = informers.of(rt)
            informer.add_index("owner-uid", lambda o: [r["uid"] for r in _owner_refs(o)])
            informer.add_handlers(
                self._seen_handler(rt),
                self._updated_handler(rt),
                self._dependent_gone,
            )
            self.dependents[rt.kind] = informer
        for rt in OWNERS:
            informer = informers.of(rt)
            informer.add_handlers(
                self._owner_changed, lambda old, new: self._owner_changed(new), self._owner_gone
            )
            self.owners[rt.kind] = informer
        # Items: "dependent:<Kind>:<key>" to check for dangling owners, "owner:<Kind>:<key>"
        # for an owner waiting on its dependents (orphan / foreground).
        self.queue = WorkQueue(clock, name="garbage-collector")

    def _seen_handler(self, rt: ResourceType) -> Callable[[dict[str, Any]], None]:
        return lambda obj: self._dependent_seen(rt, obj)

    def _updated_handler(
        self, rt: ResourceType
    ) -> Callable[[dict[str, Any], dict[str, Any]], None]:
        return lambda old, new: self._dependent_seen(rt, new)

    async def run(self) -> None:
        await self.queue.run(self._sync)

    # ---- events --------------------------------------------------------------------------

    def _dependent_seen(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        if _owner_refs(obj):
            self.queue.add(f"dependent:{rt.kind}:{object_key(obj)}")

    def _dependent_gone(self, obj: dict[str, Any]) -> None:
        for ref in _owner_refs(obj):
            owner = self._cached_owner(ref, (obj.get("metadata") or {}).get("namespace", ""))
            if owner is not None and owner["metadata"].get("deletionTimestamp"):
                self.queue.add(f"owner:{ref.get('kind')}:{object_key(owner)}")

    def _owner_changed(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        finalizers = meta.get("finalizers") or []
        if meta.get("deletionTimestamp") and (
            "orphan" in finalizers or "foregroundDeletion" in finalizers
        ):
            self.queue.add(f"owner:{obj.get('kind')}:{object_key(obj)}")

    def _owner_gone(self, obj: dict[str, Any]) -> None:
        uid = (obj.get("metadata") or {}).get("uid")
        for kind, informer in self.dependents.items():
            for dependent in informer.by_index("owner-uid", str(uid)):
                self.queue.add(f"dependent:{kind}:{object_key(dependent)}")

    # ---- lookups ---------------------------------------------------------------------------

    def _cached_owner(self, ref: dict[str, Any], namespace: str) -> dict[str, Any] | None:
        informer = self.owners.get(str(ref.get("kind")))
        if informer is None:
            return None
        key = f"{namespace}/{ref.get('name')}" if informer.resource.namespaced else ref.get("name")
        found = informer.get(str(key))
        if found is None or found["metadata"].get("uid") != ref.get("uid"):
            return None
        return found

    async def _owner_exists(self, ref: dict[str, Any], namespace: str) -> bool:
        """Whether the referenced owner (that uid) exists: the cache first, then the API."""
        if self._cached_owner(ref, namespace) is not None:
            return True
        api_version, kind = str(ref.get("apiVersion", "")), str(ref.get("kind", ""))
        rt = SCHEME.by_kind(api_version, kind)
        if rt is None:
            return True  # a kind we cannot look up: never collect on a guess
        try:
            owner = await self.client.get(
                rt, str(ref.get("name")), namespace if rt.namespaced else ""
            )
        except ApiError as error:
            if error.code == 404:
                return False
            raise
        return bool(owner["metadata"].get("uid") == ref.get("uid"))

    # ---- work -------------------------------------------------------------------------------

    async def _sync(self, item: str) -> None:
        role, kind, key = item.split(":", 2)
        if role == "dependent":
            await self._collect_if_dangling(kind, key)
        else:
            await self._process_waiting_owner(kind, key)

    async def _collect_if_dangling(self, kind: str, key: str) -> None:
        informer = self.dependents[kind]
        obj = informer.get(key)
        if obj is None:
            return
        meta = obj["metadata"]
        namespace = meta.get("namespace", "")
        refs = _owner_refs(obj)
        if not refs:
            return
        for ref in refs:
            if await self._owner_exists(ref, namespace):
                return  # upstream removes only the dangling references then; we keep them
        try:
            await self.client.delete(
                informer.resource,
                meta["name"],
                namespace,
                propagation="Background",
                uid=str(meta.get("uid")),
            )
        except ApiError as error:
            if error.code not in (404, 409):
                raise

    async def _process_waiting_owner(self, kind: str, key: str) -> None:
        informer = self.owners[kind]
        owner = informer.get(key)
        if owner is None:
            return
        meta = owner["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        uid = str(meta.get("uid"))
        dependents = [
            (dependent_kind, dependent)
            for dependent_kind, dependent_informer in self.dependents.items()
            for dependent in dependent_informer.by_index("owner-uid", uid)
        ]
        if "orphan" in finalizers:
            for dependent_kind, dependent in dependents:
                await self._drop_reference(dependent_kind, dependent, uid)
            await self._remove_finalizer(informer.resource, owner, "orphan")
        elif "foregroundDeletion" in finalizers:
            blocking = []
            for dependent_kind, dependent in dependents:
                ref = next(r for r in _owner_refs(dependent) if r["uid"] == uid)
                if ref.get("blockOwnerDeletion"):
                    blocking.append(dependent)
                if not dependent["metadata"].get("deletionTimestamp"):
                    dmeta = dependent["metadata"]
                    try:
                        await self.client.delete(
                            self.dependents[dependent_kind].resource,
                            dmeta["name"],
                            dmeta.get("namespace", ""),
                            propagation="Foreground",
                            uid=str(dmeta.get("uid")),
                        )
                    except ApiError as error:
                        if error.code not in (404, 409):
                            raise
            if not blocking:
                await self._remove_finalizer(informer.resource, owner, "foregroundDeletion")

    async def _drop_reference(self, kind: str, dependent: dict[str, Any], uid: str) -> None:
        meta = dependent["metadata"]
        kept = [r for r in meta.get("ownerReferences") or [] if r.get("uid") != uid]
        patch = {
            "metadata": {
                "ownerReferences": kept or None,
                "resourceVersion": meta.get("resourceVersion"),
            }
        }
        try:
            await self.client.patch(
                self.dependents[kind].resource,
                meta["name"],
                patch,
                namespace=meta.get("namespace", ""),
            )
        except ApiError as error:
            if error.code != 404:
                raise  # a conflict is retried with the fresh object

    async def _remove_finalizer(
        self, rt: ResourceType, owner: dict[str, Any], finalizer: str
    ) -> None:
        meta = owner["metadata"]
        kept = [f for f in meta.get("finalizers") or [] if f != finalizer]
        patch = {
            "metadata": {"finalizers": kept or None, "resourceVersion": meta.get("resourceVersion")}
        }
        try:
            await self.client.patch(rt, meta["name"], patch, namespace=meta.get("namespace", ""))
        except ApiError as error:
            if error.code != 404:
                raise
