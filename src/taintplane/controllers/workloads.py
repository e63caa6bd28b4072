"""What the ReplicaSet and Deployment controllers share (upstream's ``controller_utils.go``,
``controller_ref_manager.go`` and ``pkg/api/v1/pod``): pod states, controller references,
adoption and release, and the expectations that keep a controller from acting twice on a
change its informer has not shown it yet."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from taintplane.api.decoding import parse_timestamp
from taintplane.api.podconditions import find_condition, is_pod_ready
from taintplane.api.scheme import ResourceType
from taintplane.api.selectors import LabelSelector
from taintplane.client import ApiError, Client
from taintplane.clock import Clock

__all__ = [
    "NAMESPACE_INDEX",
    "OWNER_INDEX",
    "Expectations",
    "claim",
    "controller_ref",
    "deep_copy",
    "is_pod_active",
    "is_pod_available",
    "is_pod_ready",
    "is_pod_terminating",
    "namespace_index",
    "new_controller_ref",
    "owner_index",
    "pod_ready_since",
]

#: Informer index of objects by their controller's UID (orphans under ``orphan/<namespace>``).
OWNER_INDEX = "controller"
#: Informer index of objects by namespace (client-go's ``NamespaceIndex``).
NAMESPACE_INDEX = "namespace"
#: How long unmet expectations hold a controller back (upstream's ``ExpectationsTimeout``).
EXPECTATIONS_TIMEOUT = 5 * 60.0


def controller_ref(obj: dict[str, Any]) -> dict[str, Any] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def owner_index(obj: dict[str, Any]) -> list[str]:
    ref = controller_ref(obj)
    if ref is not None:
        return [str(ref.get("uid", ""))]
    return [f"orphan/{(obj.get('metadata') or {}).get('namespace', '')}"]


def namespace_index(obj: dict[str, Any]) -> list[str]:
    return [str((obj.get("metadata") or {}).get("namespace") or "")]


def new_controller_ref(owner: dict[str, Any]) -> dict[str, Any]:
    """``metav1.NewControllerRef``: the owner as the one controller, blocking its deletion."""
    meta = owner["metadata"]
    return {
        "apiVersion": owner.get("apiVersion", "apps/v1"),
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


# ---- pods ---------------------------------------------------------------------------------


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def is_pod_active(pod: dict[str, Any]) -> bool:
    """Neither finished nor being deleted (``controller.IsPodActive``)."""
    return _phase(pod) not in ("Succeeded", "Failed") and not pod["metadata"].get(
        "deletionTimestamp"
    )


def is_pod_terminating(pod: dict[str, Any]) -> bool:
    """Being deleted but not yet finished (what ``terminatingReplicas`` counts)."""
    return _phase(pod) not in ("Succeeded", "Failed") and bool(
        pod["metadata"].get("deletionTimestamp")
    )


def _ready_condition(pod: dict[str, Any]) -> dict[str, Any] | None:
    return find_condition(pod, "Ready")


def pod_ready_since(pod: dict[str, Any]) -> datetime | None:
    condition = _ready_condition(pod)
    if condition is None or condition.get("status") != "True":
        return None
    return parse_timestamp(condition.get("lastTransitionTime"))


def is_pod_available(pod: dict[str, Any], min_ready_seconds: int, now: datetime) -> bool:
    """Ready for strictly more than ``minReadySeconds`` (``podutil.IsPodAvailable``)."""
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    since = pod_ready_since(pod)
    return since is not None and (now - since).total_seconds() > min_ready_seconds


# ---- expectations -------------------------------------------------------------------------


@dataclass
class _Expected:
    adds: int
    deletes: set[str] = field(default_factory=set)
    at: float = 0.0


class Expectations:
    """Creations and deletions a controller made and has not yet seen in its informer
    (``UIDTrackingControllerExpectations``, keyed by pod ``namespace/name``)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._by_key: dict[str, _Expected] = {}

    def satisfied(self, key: str) -> bool:
        found = self._by_key.get(key)
        if found is None:
            return True
        if found.adds <= 0 and not found.deletes:
            return True
        return self.clock.monotonic() - found.at > EXPECTATIONS_TIMEOUT

    def expect(self, key: str, adds: int = 0, deletes: Iterable[str] = ()) -> None:
        self._by_key[key] = _Expected(adds, set(deletes), self.clock.monotonic())

    def creation_observed(self, key: str) -> None:
        found = self._by_key.get(key)
        if found is not None:
            found.adds -= 1

    def deletion_observed(self, key: str, pod_key: str) -> None:
        found = self._by_key.get(key)
        if found is not None:
            found.deletes.discard(pod_key)

    def forget(self, key: str) -> None:
        self._by_key.pop(key, None)


# ---- adoption and release -----------------------------------------------------------------


async def claim(
    client: Client,
    rt: ResourceType,
    owner: dict[str, Any],
    selector: LabelSelector,
    candidates: Iterable[dict[str, Any]],
    *,
    can_adopt: bool,
) -> list[dict[str, Any]]:
    """``ClaimObject`` over candidates: keep owned matches, release owned non-matches, adopt
    matching orphans. Adoption and release are patches pinned to the resourceVersion seen, so
    a concurrent change makes them fail instead of clobbering it; a gone object is skipped."""
    uid = owner["metadata"]["uid"]
    claimed: list[dict[str, Any]] = []
    for obj in candidates:
        labels = obj["metadata"].get("labels") or {}
        ref = controller_ref(obj)
        if ref is not None:
            if ref.get("uid") != uid:
                continue
            if selector.matches(labels):
                claimed.append(obj)
            elif not owner["metadata"].get("deletionTimestamp"):
                await _set_owners(client, rt, obj, [r for r in _refs(obj) if r.get("uid") != uid])
            continue
        if not can_adopt or obj["metadata"].get("deletionTimestamp"):
            continue
        if not selector.matches(labels):
            continue
        adopted = await _set_owners(client, rt, obj, [*_refs(obj), new_controller_ref(owner)])
        if adopted is not None:
            claimed.append(adopted)
    return claimed


def _refs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return list(obj["metadata"].get("ownerReferences") or [])


async def _set_owners(
    client: Client, rt: ResourceType, obj: dict[str, Any], refs: list[dict[str, Any]]
) -> dict[str, Any] | None:
    meta = obj["metadata"]
    patch = {
        "metadata": {"ownerReferences": refs or None, "resourceVersion": meta["resourceVersion"]}
    }
    try:
        return await client.patch(rt, meta["name"], patch, namespace=meta["namespace"])
    except ApiError as error:
        if error.code in (404, 422):  # gone, or no longer the object we saw
            return None
        raise


def deep_copy(obj: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON object (what informers and the API hand out) through orjson: the
    same dicts, lists and values as ``copy.deepcopy``, about ten times faster (a ReplicaSet:
    ~10 µs against ~100 µs, several times a pod in a burst); anything JSON cannot carry falls
    back to ``copy.deepcopy``."""
    try:
        copied: dict[str, Any] = orjson.loads(orjson.dumps(obj))
    except (TypeError, orjson.JSONEncodeError):
        return copy.deepcopy(obj)
    return copied
