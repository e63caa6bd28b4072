"""A DaemonSet's history: one ControllerRevision per template it has run (upstream's
``constructHistory``, ``controlledHistories``, ``dedupCurHistories``, ``snapshot``,
``cleanupHistory`` and ``getPatch`` in ``pkg/controller/daemon/update.go``).

A revision's ``data`` is the strategic merge patch ``{"spec":{"template":{…,"$patch":
"replace"}}}`` that puts its template back; ``kubectl rollout undo`` sends exactly that patch,
and ``kubectl rollout history`` reads the revisions the DaemonSet controls. The current
revision is the one whose data is the DaemonSet's own template. Returning to an older
template does not make a new revision: the old one is renumbered as the newest, and its
``controller-revision-hash`` label (the hash its pods carry) stays, so those pods are not
replaced. Old revisions beyond ``revisionHistoryLimit`` go, oldest first, unless a pod still
carries their hash.

The revision is named ``<daemonset>-<hash>``, the hash being ``controller.ComputeHash`` of the
template and ``status.collisionCount``: when that name is taken by a revision with other
data, the DaemonSet's collision count goes up and the next sync tries a new name.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from taintplane.api.selectors import label_selector_from_dict
from taintplane.client import ApiError, resource
from taintplane.controllers import daemonset_util as util
from taintplane.controllers import workloads
from taintplane.controllers.deploymentutil import compute_hash

if TYPE_CHECKING:
    from taintplane.controllers.daemonset import DaemonSetController

__all__ = ["REVISIONS", "DaemonSetHistory", "revision_data", "revision_hash"]

log = logging.getLogger(__name__)

REVISIONS = resource("apps", "v1", "controllerrevisions")
DAEMONSETS = resource("apps", "v1", "daemonsets")
PODS = resource("", "v1", "pods")
DEFAULT_REVISION_HISTORY_LIMIT = 10


def _sorted(value: Any) -> Any:
    # Go marshals the patch from a map[string]interface{}: keys sorted at every level. Keeping
    # that order makes the stored data the bytes kubectl compares against.
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


def revision_data(ds: dict[str, Any]) -> dict[str, Any]:
    """``getPatch``: the patch that restores the DaemonSet's template."""
    template = dict((ds.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": _sorted(template)}}


def revision_hash(revision: dict[str, Any]) -> str:
    labels = (revision.get("metadata") or {}).get("labels") or {}
    return str(labels.get(util.REVISION_HASH_LABEL) or "")


def _number(revision: dict[str, Any]) -> int:
    return int(revision.get("revision") or 0)


def _collision_count(ds: dict[str, Any]) -> int | None:
    count = (ds.get("status") or {}).get("collisionCount")
    return None if count is None else int(count)


class DaemonSetHistory:
    def __init__(self, controller: DaemonSetController) -> None:
        self.c = controller

    async def construct(self, ds: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """``constructHistory``: the current revision (made, or renumbered as the newest) and
        the old ones."""
        client, namespace = self.c.client, ds["metadata"]["namespace"]
        current: list[dict[str, Any]] = []
        old: list[dict[str, Any]] = []
        data = revision_data(ds)
        for revision in await self.controlled(ds):
            labels = revision["metadata"].get("labels") or {}
            if util.REVISION_HASH_LABEL not in labels:
                # Revisions written before the label existed: their name stands in for it.
                revision = {**revision, "metadata": dict(revision["metadata"])}
                name = revision["metadata"]["name"]
                revision["metadata"]["labels"] = {**labels, util.REVISION_HASH_LABEL: name}
                revision = await client.update(REVISIONS, revision)
            (current if revision.get("data") == data else old).append(revision)
        newest = max((_number(r) for r in old), default=0) + 1
        if not current:
            return await self._snapshot(ds, data, newest), old
        cur = await self._dedup(ds, current)
        if _number(cur) < newest:
            await client.update(REVISIONS, {**cur, "revision": newest})
            log.info(
                "%s/%s: revision %d is current again", namespace, cur["metadata"]["name"], newest
            )
        return cur, old

    async def controlled(self, ds: dict[str, Any]) -> list[dict[str, Any]]:
        """``controlledHistories``: the revisions this DaemonSet controls, after adopting
        matching orphans and releasing owned revisions its selector no longer matches."""
        meta = ds["metadata"]
        informer = self.c.histories
        candidates = [
            *informer.by_index(workloads.OWNER_INDEX, str(meta["uid"])),
            *informer.by_index(workloads.OWNER_INDEX, f"orphan/{meta['namespace']}"),
        ]
        selector = label_selector_from_dict((ds.get("spec") or {}).get("selector"))
        orphans = [
            r
            for r in candidates
            if workloads.controller_ref(r) is None
            and selector.matches(r["metadata"].get("labels") or {})
        ]
        can_adopt = bool(orphans) and await self._still_current(ds)
        return await workloads.claim(
            self.c.client, REVISIONS, ds, selector, candidates, can_adopt=can_adopt
        )

    async def _still_current(self, ds: dict[str, Any]) -> bool:
        """Adopt only for the DaemonSet as we saw it, not being deleted (upstream re-reads it
        from the server before the first adoption)."""
        meta = ds["metadata"]
        fresh = await self.c.get_daemonset(meta["namespace"], meta["name"])
        return (
            fresh is not None
            and fresh["metadata"].get("uid") == meta["uid"]
            and not fresh["metadata"].get("deletionTimestamp")
        )

    async def _dedup(self, ds: dict[str, Any], current: list[dict[str, Any]]) -> dict[str, Any]:
        """``dedupCurHistories``: keep the newest of several revisions with the current data;
        pods get its hash and the others are deleted."""
        if len(current) == 1:
            return current[0]
        keep = current[0]
        for revision in current:
            if _number(revision) >= _number(keep):
                keep = revision
        hash_ = revision_hash(keep)
        namespace = ds["metadata"]["namespace"]
        # As upstream, every pod of the DaemonSet with another hash is relabelled, not only
        # the pods of the duplicates.
        for pod in self.c.owned_pods(ds):
            if (pod["metadata"].get("labels") or {}).get(util.REVISION_HASH_LABEL) != hash_:
                patch = {"metadata": {"labels": {util.REVISION_HASH_LABEL: hash_}}}
                await self.c.client.patch(PODS, pod["metadata"]["name"], patch, namespace=namespace)
        for revision in current:
            if revision["metadata"]["name"] != keep["metadata"]["name"]:
                await self.c.client.delete(REVISIONS, revision["metadata"]["name"], namespace)
        return keep

    async def _snapshot(
        self, ds: dict[str, Any], data: dict[str, Any], number: int
    ) -> dict[str, Any]:
        """``snapshot``: write the current revision; a name taken by other data is a hash
        collision, answered by counting it in the DaemonSet's status."""
        meta = ds["metadata"]
        template = (ds.get("spec") or {}).get("template") or {}
        hash_ = compute_hash(template, _collision_count(ds))
        name = f"{meta['name']}-{hash_}"
        labels = dict((template.get("metadata") or {}).get("labels") or {})
        labels[util.REVISION_HASH_LABEL] = hash_
        revision_meta: dict[str, Any] = {
            "name": name,
            "namespace": meta["namespace"],
            "labels": labels,
            "ownerReferences": [workloads.new_controller_ref(ds)],
        }
        if meta.get("annotations"):
            revision_meta["annotations"] = dict(meta["annotations"])  # kubectl's change-cause
        revision = {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": revision_meta,
            "data": data,
            "revision": number,
        }
        try:
            return await self.c.client.create(REVISIONS, revision, namespace=meta["namespace"])
        except ApiError as error:
            if error.code != 409:
                raise
            taken = error
        existing = await self.c.client.get(REVISIONS, name, meta["namespace"])
        if existing.get("data") == data:
            return existing  # ours, from a sync whose create the cache has not shown yet
        fresh = await self.c.get_daemonset(meta["namespace"], meta["name"])
        if fresh is None:
            raise taken
        if _collision_count(fresh) != _collision_count(ds):
            raise RuntimeError(
                f"found a stale collision count ({_collision_count(ds)}, expected "
                f"{_collision_count(fresh)}) of DaemonSet {meta['name']!r} while processing; "
                "will retry until it is updated"
            )
        status = dict(fresh.get("status") or {})
        status["collisionCount"] = (_collision_count(fresh) or 0) + 1
        await self.c.client.update(DAEMONSETS, {**fresh, "status": status}, subresource="status")
        log.info(
            "%s/%s: hash collision on %s, collisionCount is now %d",
            meta["namespace"],
            meta["name"],
            name,
            status["collisionCount"],
        )
        raise taken

    async def cleanup(self, ds: dict[str, Any], old: list[dict[str, Any]]) -> None:
        """``cleanupHistory``: delete the oldest revisions beyond ``revisionHistoryLimit``
        whose hash no pod of the DaemonSet carries any more."""
        limit = (ds.get("spec") or {}).get("revisionHistoryLimit")
        keep = DEFAULT_REVISION_HISTORY_LIMIT if limit is None else int(limit)
        excess = len(old) - keep
        if excess <= 0:
            return
        live = {
            (pod["metadata"].get("labels") or {}).get(util.REVISION_HASH_LABEL)
            for pod in self.c.owned_pods(ds)
        }
        namespace = ds["metadata"]["namespace"]
        for revision in sorted(old, key=_number):
            if excess <= 0:
                break
            if revision_hash(revision) in live:
                continue
            await self.c.client.delete(REVISIONS, revision["metadata"]["name"], namespace)
            excess -= 1
