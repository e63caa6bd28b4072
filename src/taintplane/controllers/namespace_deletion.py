"""Emptying a namespace being deleted, through the API (upstream's
``pkg/controller/namespace/deletion``: namespaced_resources_deleter.go and
status_condition_utils.go).

Every namespaced kind discovery lists with the ``delete`` verb is deleted as a collection
(Background propagation; normal graceful deletion, so pods get their grace period and
finalizers are honoured), then listed again: what remains is reported in the namespace's
status conditions and, while pods may still be terminating or finalizers finishing, as an
estimate of the seconds left. Once nothing remains the ``kubernetes`` spec finalizer is
removed through ``namespaces/NAME/finalize``; the API server deletes the namespace when no
finalizer (spec or metadata) is left.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from taintplane.api.decoding import format_time, parse_timestamp
from taintplane.api.scheme import SCHEME, ResourceType
from taintplane.client import ApiError, Client, resource
from taintplane.clock import Clock

__all__ = [
    "CONDITION_TYPES",
    "FINALIZER_ESTIMATE_SECONDS",
    "NamespacedResourcesDeleter",
    "ResourcesRemaining",
]

log = logging.getLogger(__name__)

NAMESPACES = resource("", "v1", "namespaces")
PODS = resource("", "v1", "pods")
#: The spec finalizer this controller owns (``v1.FinalizerKubernetes``).
FINALIZER = "kubernetes"
#: The wait assumed for finalizers on content already being deleted.
FINALIZER_ESTIMATE_SECONDS = 15

#: The conditions the deleter maintains, in upstream's order, with the reason and message
#: each reads when all is well (status False).
CONDITION_TYPES = (
    "NamespaceDeletionDiscoveryFailure",
    "NamespaceDeletionGroupVersionParsingFailure",
    "NamespaceDeletionContentFailure",
    "NamespaceContentRemaining",
    "NamespaceFinalizersRemaining",
)
_OK = {
    "NamespaceDeletionDiscoveryFailure": (
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    "NamespaceDeletionGroupVersionParsingFailure": (
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    "NamespaceDeletionContentFailure": (
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    "NamespaceContentRemaining": ("ContentRemoved", "All content successfully removed"),
    "NamespaceFinalizersRemaining": (
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
    ),
}


class ResourcesRemaining(Exception):
    """Content is still going away: look again in about ``estimate`` seconds."""

    def __init__(self, estimate: int) -> None:
        super().__init__(
            f"some content remains in the namespace, estimate {estimate} seconds before it is "
            "removed"
        )
        self.estimate = estimate


class DeletionFailed(Exception):
    """Errors deleting content (upstream's aggregate error); the sync is retried."""


@dataclass
class _Remaining:
    """What one kind left behind after its deletion."""

    estimate: int = 0
    count: int = 0
    finalizers: Counter[str] = field(default_factory=Counter)


@dataclass
class _Discovered:
    resources: list[ResourceType]
    discovery_error: str = ""
    group_version_error: str = ""


class NamespacedResourcesDeleter:
    def __init__(self, client: Client, clock: Clock) -> None:
        self.client = client
        self.clock = clock

    async def delete(self, name: str) -> None:
        """One pass over a namespace being deleted (upstream's ``Delete``); raises
        ``ResourcesRemaining`` when content is still going away, another error to retry."""
        try:
            namespace = await self.client.get(NAMESPACES, name)
        except ApiError as error:
            if error.code == 404:
                return
            raise
        if not namespace["metadata"].get("deletionTimestamp"):
            return
        if (namespace.get("status") or {}).get("phase") != "Terminating":
            namespace = await self._update_status(namespace, {"phase": "Terminating"})
        if not (namespace.get("spec") or {}).get("finalizers"):
            return  # finalized: the API server deletes it once its metadata.finalizers go
        estimate = await self._delete_all_content(namespace)
        if estimate > 0:
            raise ResourcesRemaining(estimate)
        await self._finalize(namespace)

    # ---- the namespace -----------------------------------------------------------------

    async def _update_status(
        self, namespace: dict[str, Any], status: dict[str, Any]
    ) -> dict[str, Any]:
        body = {**namespace, "status": {**(namespace.get("status") or {}), **status}}
        return await self.client.update(NAMESPACES, body, subresource="status")

    async def _finalize(self, namespace: dict[str, Any]) -> None:
        """Remove this controller's spec finalizer (finalize subresource), on the latest
        namespace after a conflict, as retryOnConflictError."""
        while True:
            remaining = sorted(
                {f for f in namespace["spec"].get("finalizers") or [] if f != FINALIZER}
            )
            body = {**namespace, "spec": {**namespace["spec"], "finalizers": remaining}}
            try:
                await self.client.update(NAMESPACES, body, subresource="finalize")
                return
            except ApiError as error:
                if error.code == 404:
                    return
                if error.code != 409:
                    raise
            latest = await self.client.get(NAMESPACES, namespace["metadata"]["name"])
            if latest["metadata"].get("uid") != namespace["metadata"].get("uid"):
                raise RuntimeError("namespace uid has changed across retries")
            namespace = latest

    # ---- the content ---------------------------------------------------------------------

    async def _delete_all_content(self, namespace: dict[str, Any]) -> int:
        name = namespace["metadata"]["name"]
        deleted_at = parse_timestamp(namespace["metadata"]["deletionTimestamp"])
        assert deleted_at is not None  # delete() looks only at namespaces being deleted
        discovered = await self._discover()
        errors: list[str] = []
        content_errors: list[str] = []
        for problem in (discovered.discovery_error, discovered.group_version_error):
            if problem:
                errors.append(problem)
        estimate = 0
        remaining: dict[ResourceType, int] = {}
        finalizers: Counter[str] = Counter()
        for rt in discovered.resources:
            try:
                left = await self._delete_kind(rt, name, deleted_at)
            except _KindFailed as failure:
                left = failure.remaining
                errors.append(failure.message)
                content_errors.append(failure.message)
            estimate = max(estimate, left.estimate)
            if left.count:
                remaining[rt] = left.count
                finalizers.update(left.finalizers)
        status = dict(namespace.get("status") or {})
        conditions = [dict(c) for c in status.get("conditions") or []]
        failing = _failing_conditions(discovered, content_errors, remaining, finalizers)
        if _merge_conditions(conditions, failing, format_time(self.clock.now())):
            namespace = {**namespace, "status": {**status, "conditions": conditions}}
            try:
                await self.client.update(NAMESPACES, namespace, subresource="status")
            except ApiError as error:
                log.warning("couldn't update status condition for namespace %q: %s", name, error)
        if errors:
            raise DeletionFailed(", ".join(errors))
        return estimate

    async def _delete_kind(
        self, rt: ResourceType, namespace: str, deleted_at: datetime
    ) -> _Remaining:
        """``deleteAllContentForGroupVersionResource``."""
        estimate = 0
        try:
            if rt == PODS:
                estimate = await self._pods_estimate(namespace, deleted_at)
            if "deletecollection" in rt.verbs:
                await self._delete_collection(rt, namespace)
            else:
                await self._delete_each(rt, namespace)
            items, _ = await self.client.list(rt, namespace)
        except ApiError as error:
            raise _KindFailed(_Remaining(estimate), str(error)) from error
        if not items:
            return _Remaining()
        held: Counter[str] = Counter(
            f for item in items for f in item["metadata"].get("finalizers") or []
        )
        if estimate:
            return _Remaining(estimate, len(items), held)
        if held:
            return _Remaining(FINALIZER_ESTIMATE_SECONDS, len(items), held)
        raise _KindFailed(
            _Remaining(0, len(items)),
            f"unexpected items still remain in namespace: {namespace} for gvr: "
            f"{rt.group}/{rt.version}, Resource={rt.plural}",
        )

    async def _delete_collection(self, rt: ResourceType, namespace: str) -> None:
        # DELETE on the collection (no name); Background, so that the garbage collector does
        # not hold the content with an orphan finalizer.
        try:
            await self.client.delete(rt, "", namespace, propagation="Background")
        except ApiError as error:
            if error.code not in (404, 405):
                raise
            await self._delete_each(rt, namespace)

    async def _delete_each(self, rt: ResourceType, namespace: str) -> None:
        items, _ = await self.client.list(rt, namespace)
        for item in items:
            try:
                await self.client.delete(
                    rt, item["metadata"]["name"], namespace, propagation="Background"
                )
            except ApiError as error:
                if error.code not in (404, 405):
                    raise

    async def _pods_estimate(self, namespace: str, deleted_at: datetime) -> int:
        """The longest grace period of the pods not yet terminal, unless that long has
        already passed since the namespace's deletion (``estimateGracefulTermination``)."""
        pods, _ = await self.client.list(PODS, namespace)
        estimate = 0
        for pod in pods:
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
            if grace is not None:
                estimate = max(estimate, int(grace))
        if (self.clock.now() - deleted_at).total_seconds() >= estimate:
            return 0
        return estimate

    async def _discover(self) -> _Discovered:
        """The namespaced kinds that can be deleted, each at the version the server prefers
        (``ServerPreferredNamespacedResources`` filtered to the ``delete`` verb)."""
        group_versions: list[str] = []
        failures: list[str] = []
        core = await self.client.get_path("/api")
        group_versions += [str(v) for v in core.get("versions") or []]
        groups = await self.client.get_path("/apis")
        for group in groups.get("groups") or []:
            preferred = (group.get("preferredVersion") or {}).get("groupVersion")
            versions = [str(v["groupVersion"]) for v in group.get("versions") or []]
            group_versions += sorted(versions, key=lambda gv: gv != preferred)
        found: dict[tuple[str, str], ResourceType] = {}
        parse_errors: list[str] = []
        for group_version in group_versions:
            path = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
            try:
                listing = await self.client.get_path(path)
            except ApiError as error:
                failures.append(f"{group_version}: {error}")
                continue
            parsed = _parse_group_version(group_version)
            if parsed is None:
                parse_errors.append(f"unexpected GroupVersion string: {group_version}")
                continue
            for entry in listing.get("resources") or []:
                plural = str(entry.get("name") or "")
                if "/" in plural or not entry.get("namespaced"):
                    continue
                if "delete" not in (entry.get("verbs") or []):
                    continue
                rt = SCHEME.lookup(parsed[0], parsed[1], plural)
                if rt is not None and (parsed[0], plural) not in found:
                    found[(parsed[0], plural)] = rt
        discovered = _Discovered(list(found.values()))
        if failures:
            detail = ", ".join(sorted(failures))
            discovered.discovery_error = (
                f"Discovery failed for some groups, {len(failures)} failing: unable to "
                f"retrieve the complete list of server APIs: {detail}"
            )
        if parse_errors:
            discovered.group_version_error = ", ".join(parse_errors)
        return discovered


class _KindFailed(Exception):
    def __init__(self, remaining: _Remaining, message: str) -> None:
        super().__init__(message)
        self.remaining = remaining
        self.message = message


def _parse_group_version(text: str) -> tuple[str, str] | None:
    parts = text.split("/")
    if len(parts) == 1 and parts[0]:
        return "", parts[0]
    if len(parts) == 2 and parts[1]:
        return parts[0], parts[1]
    return None


def _failing_conditions(
    discovered: _Discovered,
    content_errors: list[str],
    remaining: dict[ResourceType, int],
    finalizers: Counter[str],
) -> dict[str, tuple[str, str]]:
    """The conditions that are True this pass, as (reason, message); sorted for stable
    updates, as upstream."""
    failing: dict[str, tuple[str, str]] = {}
    if discovered.discovery_error:
        failing["NamespaceDeletionDiscoveryFailure"] = (
            "DiscoveryFailed",
            discovered.discovery_error,
        )
    if discovered.group_version_error:
        failing["NamespaceDeletionGroupVersionParsingFailure"] = (
            "GroupVersionParsingFailed",
            discovered.group_version_error,
        )
    if content_errors:
        failing["NamespaceDeletionContentFailure"] = (
            "ContentDeletionFailed",
            f"Failed to delete all resource types, {len(content_errors)} remaining: "
            + ", ".join(sorted(content_errors)),
        )
    if remaining:
        kinds = sorted(
            f"{rt.plural}.{rt.group} has {n} resource instances" for rt, n in remaining.items()
        )
        failing["NamespaceContentRemaining"] = (
            "SomeResourcesRemain",
            "Some resources are remaining: " + ", ".join(kinds),
        )
    if finalizers:
        held = sorted(f"{f} in {n} resource instances" for f, n in finalizers.items())
        failing["NamespaceFinalizersRemaining"] = (
            "SomeFinalizersRemain",
            "Some content in the namespace has finalizers remaining: " + ", ".join(held),
        )
    return failing


def _merge_conditions(
    conditions: list[dict[str, Any]], failing: dict[str, tuple[str, str]], now: str
) -> bool:
    """``updateConditions``: every type set, True with its failure or False with the ok
    reason; the transition time moves only when the status does. Whether anything changed."""
    changed = False
    for type_ in CONDITION_TYPES:
        status = "True" if type_ in failing else "False"
        reason, message = failing.get(type_) or _OK[type_]
        old = next((c for c in conditions if c.get("type") == type_), None)
        if old is None:
            conditions.append(
                {
                    "type": type_,
                    "status": status,
                    "lastTransitionTime": now,
                    "reason": reason,
                    "message": message,
                }
            )
            changed = True
        elif (old.get("status"), old.get("reason"), old.get("message")) != (
            status,
            reason,
            message,
        ):
            if old.get("status") != status:
                old["lastTransitionTime"] = now
            old.update(status=status, reason=reason, message=message)
            changed = True
    return changed
