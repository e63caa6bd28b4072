"""How many pods a PodDisruptionBudget expects, as upstream's disruption controller counts them
(``getExpectedPodCount`` / ``getExpectedScale`` and its controller finders).

- ``minAvailable`` as a number: the matching pods are the expected pods.
- ``maxUnavailable``, or ``minAvailable`` as a percentage: the sum of the scales of the pods'
  controllers — a Deployment's replicas for pods of its ReplicaSets, a ReplicaSet's own
  replicas, or the ``scale`` subresource of whatever else controls them. Pods without a
  controller are left out and reported (``UnmanagedPods``); a controller that cannot be found
  or has no scale makes the sync fail, and the controller falls back to allowing nothing.
- Neither: nothing expected, nothing desired (so nothing may be disrupted).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from taintplane.api.intstr import scaled_value
from taintplane.api.scheme import SCHEME

__all__ = ["Expected", "SyncError", "expected_pods", "selector_string"]

Lookup = Callable[[str, str, str], dict[str, Any] | None]
"""(plural, namespace, name) → the object from an informer's cache, or None."""


class SyncError(Exception):
    """The budget's status cannot be computed (upstream fails safe: nothing allowed)."""


@dataclass
class Expected:
    count: int
    desired: int
    unmanaged: list[str] = field(default_factory=list)


def expected_pods(
    pdb: dict[str, Any], pods: list[dict[str, Any]], lookup: Lookup, *, count: int | None = None
) -> Expected:
    """``count``, when given, is how many pods match (then ``pods`` may hold only one pod per
    controller and one unmanaged pod: all the scale-based count looks at)."""
    spec = pdb.get("spec") or {}
    if spec.get("maxUnavailable") is not None:
        count, unmanaged = _expected_scale(pods, lookup)
        unavailable = scaled_value(spec["maxUnavailable"], count, round_up=True)
        return Expected(count, max(0, count - unavailable), unmanaged)
    minimum = spec.get("minAvailable")
    if isinstance(minimum, int) and not isinstance(minimum, bool):
        return Expected(len(pods) if count is None else count, minimum)
    if isinstance(minimum, str):
        count, unmanaged = _expected_scale(pods, lookup)
        return Expected(count, scaled_value(minimum, count, round_up=True), unmanaged)
    return Expected(0, 0)


def _controller_of(obj: dict[str, Any]) -> dict[str, Any] | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def _expected_scale(pods: list[dict[str, Any]], lookup: Lookup) -> tuple[int, list[str]]:
    scales: dict[str, int] = {}
    unmanaged: list[str] = []
    for pod in pods:
        ref = _controller_of(pod)
        if ref is None:
            unmanaged.append(pod["metadata"]["name"])
            continue
        if ref.get("uid") in scales:
            continue
        namespace = pod["metadata"].get("namespace", "")
        found = None
        for finder in (_deployment_of_replicaset, _replicaset, _scale_of):
            found = finder(ref, namespace, lookup)
            if found is not None:
                break
        if found is None:
            raise SyncError(f'found no controllers for pod "{pod["metadata"]["name"]}"')
        uid, replicas = found
        scales[uid] = replicas
    return sum(scales.values()), unmanaged


def _group(ref: dict[str, Any]) -> str:
    api_version = str(ref.get("apiVersion") or "")
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def _replicas(obj: dict[str, Any]) -> int:
    replicas = (obj.get("spec") or {}).get("replicas")
    return 1 if replicas is None else int(replicas)


def _owned_replicaset(ref: dict[str, Any], namespace: str, lookup: Lookup) -> dict[str, Any] | None:
    if ref.get("kind") != "ReplicaSet" or _group(ref) not in ("apps", "extensions"):
        return None
    rs = lookup("replicasets", namespace, str(ref.get("name")))
    if rs is None or rs["metadata"].get("uid") != ref.get("uid"):
        return None
    return rs


def _deployment_of_replicaset(
    ref: dict[str, Any], namespace: str, lookup: Lookup
) -> tuple[str, int] | None:
    rs = _owned_replicaset(ref, namespace, lookup)
    owner = None if rs is None else _controller_of(rs)
    if owner is None or owner.get("kind") != "Deployment":
        return None
    if _group(owner) not in ("apps", "extensions"):
        return None
    deployment = lookup("deployments", namespace, str(owner.get("name")))
    if deployment is None or deployment["metadata"].get("uid") != owner.get("uid"):
        return None
    return str(deployment["metadata"]["uid"]), _replicas(deployment)


def _replicaset(ref: dict[str, Any], namespace: str, lookup: Lookup) -> tuple[str, int] | None:
    rs = _owned_replicaset(ref, namespace, lookup)
    if rs is None:
        return None
    owner = _controller_of(rs)
    if owner is not None and owner.get("kind") == "Deployment":
        return None  # its Deployment's scale counts
    return str(rs["metadata"]["uid"]), _replicas(rs)


def _scale_of(ref: dict[str, Any], namespace: str, lookup: Lookup) -> tuple[str, int] | None:
    """Upstream's getScaleController: any kind with a ``scale`` subresource."""
    api_version = str(ref.get("apiVersion") or "")
    kind = str(ref.get("kind") or "")
    served = SCHEME.by_kind(api_version, kind)
    if served is None:
        raise SyncError(f'no matches for kind "{kind}" in version "{api_version}"')
    if not served.has_subresource("scale"):
        raise SyncError(f"{served.group_resource} does not implement the scale subresource")
    obj = lookup(served.plural, namespace, str(ref.get("name")))
    if obj is None or obj["metadata"].get("uid") != ref.get("uid"):
        return None
    return str(obj["metadata"]["uid"]), _replicas(obj)


def selector_string(selector: dict[str, Any] | None) -> str:
    """A label selector as Go prints ``*metav1.LabelSelector`` with %v (in events)."""
    if selector is None:
        return "nil"
    labels = selector.get("matchLabels") or {}
    matched = "".join(f"{key}: {labels[key]}," for key in sorted(labels))
    requirements = "".join(
        "LabelSelectorRequirement{"
        f"Key:{r.get('key', '')},Operator:{r.get('operator', '')},"
        f"Values:[{' '.join(r.get('values') or [])}],"
        "},"
        for r in selector.get("matchExpressions") or []
    )
    return (
        f"&LabelSelector{{MatchLabels:map[string]string{{{matched}}},"
        f"MatchExpressions:[]LabelSelectorRequirement{{{requirements}}},}}"
    )
