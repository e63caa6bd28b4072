"""The resource claim controller (kube-controller-manager's ``resourceclaim-controller``).

* For a pod's ``spec.resourceClaims[]`` entry with ``resourceClaimTemplateName``, it creates
  a ResourceClaim from the template — ``generateName: <pod>-<podClaimName>-`` (so the server
  appends five random characters), the annotation
  ``resource.kubernetes.io/pod-claim-name: <podClaimName>``, the pod as controlling owner —
  and records its name in ``pod.status.resourceClaimStatuses``. A claim it made before (found
  by owner and annotation) is reused, so a lost status write never makes a second claim.
* It keeps ``status.reservedFor`` honest: a pod that is gone (or replaced by one with another
  UID) or done (Succeeded, Failed, or deleted before it was scheduled) is removed. A claim no
  pod uses any more is deallocated (``status.allocation`` cleared), its
  ``resource.kubernetes.io/delete-protection`` finalizer removed, and — if it was made for a
  pod that is gone or done — deleted.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any

from taintplane.client import ApiError, Client, object_key, resource
from taintplane.client.shared import SharedInformers
from taintplane.client.workqueue import WorkQueue
from taintplane.clock import Clock
from taintplane.dra.claims import FINALIZER, POD_CLAIM_NAME_ANNOTATION, allocation_of

__all__ = ["ResourceClaimController", "generate_name", "is_pod_done"]

log = logging.getLogger(__name__)

PODS = resource("", "v1", "pods")
CLAIMS = resource("resource.k8s.io", "v1", "resourceclaims")
TEMPLATES = resource("resource.k8s.io", "v1", "resourceclaimtemplates")
_MAX_BASE_LEN = 57  # 63 minus the 5 random characters and a dash or so, as upstream
_POD_PREFIX, _CLAIM_PREFIX = "pod:", "claim:"
_DELETED_PODS_KEPT = 500  # maxUIDCacheEntries


def generate_name(pod_name: str, pod_claim_name: str) -> str:
    """Upstream's ``generateName``: ``<pod>-<claim>-``; when longer than 57, both names cut in
    proportion to their length and joined by a dash, with no dash after (as upstream's)."""
    name = f"{pod_name}-{pod_claim_name}-"
    if len(name) > _MAX_BASE_LEN:
        keep = (
            len(pod_name) * _MAX_BASE_LEN // len(name),
            len(pod_claim_name) * _MAX_BASE_LEN // len(name),
        )
        name = f"{pod_name[: keep[0]]}-{pod_claim_name[: keep[1]]}"
    return name


def is_pod_done(pod: dict[str, Any]) -> bool:
    """``isPodDone``: finished, or deleted before it was ever scheduled."""
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        return True
    return bool(pod["metadata"].get("deletionTimestamp")) and not (pod.get("spec") or {}).get(
        "nodeName"
    )


def _owner_pod(claim: dict[str, Any]) -> dict[str, Any] | None:
    for ref in claim["metadata"].get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "Pod" and ref.get("apiVersion") == "v1":
            return dict(ref)
    return None


class ResourceClaimController:
    def __init__(self, client: Client, clock: Clock, informers: SharedInformers) -> None:
        self.client = client
        self.clock = clock
        self.pods = informers.pods
        self.claims = informers.of(CLAIMS)
        self.templates = informers.of(TEMPLATES)
        # processNextWorkItem's HandleError: "<key> failed with: <err>".
        self.queue = WorkQueue(clock, name="resource_claim", failure="{key} failed with: {error}")
        #: uids of pods the informer saw deleted, newest last (upstream's deletedObjects LRU)
        self._deleted_pods: OrderedDict[str, None] = OrderedDict()
        self.pods.add_handlers(
            self._pod_changed, lambda old, new: self._pod_changed(new), self._pod_deleted
        )
        self.claims.add_handlers(
            self._claim_changed, lambda old, new: self._claim_changed(new), self._claim_changed
        )
        self.templates.add_handlers(self._template_added)

    # ---- events ----------------------------------------------------------------------------

    def _pod_changed(self, pod: dict[str, Any]) -> None:
        if not (pod.get("spec") or {}).get("resourceClaims"):
            return
        self.queue.add(_POD_PREFIX + object_key(pod))
        namespace = pod["metadata"].get("namespace", "")
        uid = pod["metadata"].get("uid")
        # Claims reserved for it may need the reservation removed.
        for claim in self.claims.cache.values():
            if claim["metadata"].get("namespace") == namespace and any(
                ref.get("uid") == uid
                for ref in (claim.get("status") or {}).get("reservedFor") or []
            ):
                self.queue.add(_CLAIM_PREFIX + object_key(claim))
        for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
            if status.get("resourceClaimName"):
                self.queue.add(f"{_CLAIM_PREFIX}{namespace}/{status['resourceClaimName']}")

    def _pod_deleted(self, pod: dict[str, Any]) -> None:
        uid = pod["metadata"].get("uid")
        if uid:
            self._deleted_pods[str(uid)] = None
            self._deleted_pods.move_to_end(str(uid))
            while len(self._deleted_pods) > _DELETED_PODS_KEPT:
                self._deleted_pods.popitem(last=False)
        self._pod_changed(pod)

    def _claim_changed(self, claim: dict[str, Any]) -> None:
        self.queue.add(_CLAIM_PREFIX + object_key(claim))

    def _template_added(self, template: dict[str, Any]) -> None:
        namespace = template["metadata"].get("namespace")
        name = template["metadata"].get("name")
        for pod in list(self.pods.cache.values()):
            if pod["metadata"].get("namespace") == namespace and any(
                c.get("resourceClaimTemplateName") == name
                for c in (pod.get("spec") or {}).get("resourceClaims") or []
            ):
                self.queue.add(_POD_PREFIX + object_key(pod))

    async def run(self) -> None:
        await self.queue.run(self._sync)

    async def _sync(self, key: str) -> None:
        if key.startswith(_POD_PREFIX):
            await self._sync_pod(key.removeprefix(_POD_PREFIX))
        else:
            await self._sync_claim(key.removeprefix(_CLAIM_PREFIX))

    # ---- pods: claims from templates -----------------------------------------------------

    async def _sync_pod(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return  # gone, or being deleted: upstream's syncPod leaves it alone
        meta = pod["metadata"]
        statuses = list((pod.get("status") or {}).get("resourceClaimStatuses") or [])
        known = {s.get("name") for s in statuses}
        added = False
        for pod_claim in (pod.get("spec") or {}).get("resourceClaims") or []:
            template_name = pod_claim.get("resourceClaimTemplateName")
            if not template_name or pod_claim.get("name") in known:
                continue
            claim = self._existing_claim(pod, str(pod_claim.get("name")))
            if claim is None:
                claim = await self._create_claim(pod, str(pod_claim.get("name")), template_name)
            statuses.append(
                {"name": pod_claim.get("name"), "resourceClaimName": claim["metadata"]["name"]}
            )
            added = True
        if added:
            await self.client.patch(
                PODS,
                meta["name"],
                {"status": {"resourceClaimStatuses": statuses}},
                namespace=meta.get("namespace", ""),
                patch_type="merge",
                subresource="status",
            )

    def _existing_claim(self, pod: dict[str, Any], pod_claim_name: str) -> dict[str, Any] | None:
        uid = pod["metadata"].get("uid")
        for claim in self.claims.cache.values():
            owner = _owner_pod(claim)
            annotations = claim["metadata"].get("annotations") or {}
            if (
                owner is not None
                and owner.get("uid") == uid
                and annotations.get(POD_CLAIM_NAME_ANNOTATION) == pod_claim_name
            ):
                return claim
        return None

    async def _create_claim(
        self, pod: dict[str, Any], pod_claim_name: str, template_name: str
    ) -> dict[str, Any]:
        meta = pod["metadata"]
        namespace = meta.get("namespace", "")
        template = self.templates.get(f"{namespace}/{template_name}")
        if template is None:
            raise LookupError(
                f'resource claim template "{template_name}": resourceclaimtemplate.resource'
                f'.k8s.io "{template_name}" not found'
            )
        template_meta = (template.get("spec") or {}).get("metadata") or {}
        claim = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {
                "generateName": generate_name(meta["name"], pod_claim_name),
                "namespace": namespace,
                "labels": dict(template_meta.get("labels") or {}),
                "annotations": {
                    **(template_meta.get("annotations") or {}),
                    POD_CLAIM_NAME_ANNOTATION: pod_claim_name,
                },
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": meta["name"],
                        "uid": meta.get("uid"),
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": (template.get("spec") or {}).get("spec") or {},
        }
        created = await self.client.create(CLAIMS, claim, namespace=namespace)
        log.info("resourceclaim: created %s/%s", namespace, created["metadata"]["name"])
        return created

    # ---- claims: reservations, deallocation, deletion --------------------------------------

    async def _pod_in_use(self, namespace: str, ref: dict[str, Any]) -> bool:
        """Whether a ``reservedFor`` entry still holds: a pod seen deleted does not; one not
        (yet) in the informer's cache is looked up in the API server (dropping a reservation
        the scheduler has just made for a pod this controller has not seen would be bad);
        one in the cache holds unless replaced (another uid) or done."""
        if ref.get("resource") != "pods" or ref.get("apiGroup"):
            return True  # not ours to judge
        if str(ref.get("uid")) in self._deleted_pods:
            return False
        name = str(ref.get("name", ""))
        pod = self.pods.get(f"{namespace}/{name}")
        if pod is None:
            try:
                found = await self.client.get(PODS, name, namespace)
            except ApiError as error:
                if error.code != 404:
                    raise
                return False
            return bool(found["metadata"].get("uid") == ref.get("uid"))
        return pod["metadata"].get("uid") == ref.get("uid") and not is_pod_done(pod)

    async def _sync_claim(self, key: str) -> None:
        """Upstream's ``syncClaim``: drop reservations of pods that are gone or done; on that
        transition to unused, deallocate and remove the finalizer (never otherwise: a claim
        the scheduler is writing has its finalizer before its allocation and reservation);
        remove it also from a claim being deleted; delete a pod's unused claim when the pod
        will not run."""
        claim = self.claims.get(key)
        if claim is None:
            return
        meta = claim["metadata"]
        namespace = meta.get("namespace", "")
        status = claim.get("status") or {}
        reserved = list(status.get("reservedFor") or [])
        valid = [ref for ref in reserved if await self._pod_in_use(namespace, ref)]
        if len(valid) < len(reserved):
            # An update, not a patch: it must fail if anything changed in the meantime.
            updated = {**claim, "status": dict(status)}
            if valid:
                updated["status"]["reservedFor"] = valid
            else:
                updated["status"].pop("reservedFor", None)
                if FINALIZER in (meta.get("finalizers") or []):
                    updated["status"].pop("allocation", None)
            claim = await self.client.update(CLAIMS, updated, subresource="status")
            meta = claim["metadata"]
            if FINALIZER in (meta.get("finalizers") or []) and allocation_of(claim) is None:
                claim = await self._drop_finalizer(claim)
        elif (
            FINALIZER in (meta.get("finalizers") or [])
            and meta.get("deletionTimestamp")
            and not valid
        ):
            if allocation_of(claim) is not None:
                deallocated = {**claim, "status": dict(status)}
                deallocated["status"].pop("allocation", None)
                claim = await self.client.update(CLAIMS, deallocated, subresource="status")
            claim = await self._drop_finalizer(claim)
        if valid:
            return
        owner = _owner_pod(claim)
        if owner is None:
            return
        pod = self.pods.get(f"{namespace}/{owner.get('name')}")
        # A pod not (yet) known is left to the garbage collector, as upstream does.
        if pod is not None and (pod["metadata"].get("uid") != owner.get("uid") or is_pod_done(pod)):
            try:
                await self.client.delete(CLAIMS, meta["name"], namespace, uid=meta.get("uid"))
            except ApiError as error:
                if error.code not in (404, 409):
                    raise

    async def _drop_finalizer(self, claim: dict[str, Any]) -> dict[str, Any]:
        meta = claim["metadata"]
        finalizers = [f for f in meta.get("finalizers") or [] if f != FINALIZER]
        updated: dict[str, Any] = await self.client.update(
            CLAIMS, {**claim, "metadata": {**meta, "finalizers": finalizers}}
        )
        return updated
