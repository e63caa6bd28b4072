"""Claims and the pods that use them (``k8s.io/dynamic-resource-allocation/resourceclaim``).

Upstream's error texts are kept verbatim: the scheduler shows them in ``FailedScheduling``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "FINALIZER",
    "POD_CLAIM_NAME_ANNOTATION",
    "RESERVED_FOR_MAX_SIZE",
    "ClaimNameError",
    "DeviceID",
    "allocated_devices",
    "can_be_reserved",
    "claim_name",
    "is_for_pod",
    "is_reserved_for_pod",
    "kobj",
]

#: ``resourceapi.Finalizer``: set on a claim while it is allocated.
FINALIZER = "resource.kubernetes.io/delete-protection"
#: Set on claims generated from a template: the pod's ``spec.resourceClaims[].name``.
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
RESERVED_FOR_MAX_SIZE = 256

#: (driver, pool, device)
DeviceID = tuple[str, str, str]


class ClaimNameError(Exception):
    pass


def kobj(obj: Mapping[str, Any]) -> str:
    """``klog.KObj``: ``namespace/name`` (just ``name`` for cluster objects)."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))


def claim_name(pod: Mapping[str, Any], pod_claim: Mapping[str, Any]) -> tuple[str | None, bool]:
    """``resourceclaim.Name``: the claim's name (``None`` if intentionally not created) and
    whether the claim must be checked to be the pod's own (generated from a template)."""
    meta = pod.get("metadata") or {}
    if pod_claim.get("resourceClaimName"):
        return str(pod_claim["resourceClaimName"]), False
    if pod_claim.get("resourceClaimTemplateName"):
        for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
            if status.get("name") == pod_claim.get("name"):
                name = status.get("resourceClaimName")
                return (str(name) if name else None), True
        raise ClaimNameError(
            f'pod "{meta.get("namespace")}/{meta.get("name")}": ResourceClaim not created yet'
        )
    raise ClaimNameError(
        f'pod "{meta.get("namespace")}/{meta.get("name")}", spec.resourceClaim '
        f'"{pod_claim.get("name")}": none of the supported fields are set'
    )


def is_for_pod(pod: Mapping[str, Any], claim: Mapping[str, Any]) -> str:
    """``resourceclaim.IsForPod``: an error text, empty when the pod controls the claim."""
    pod_meta, claim_meta = pod.get("metadata") or {}, claim.get("metadata") or {}
    controlled = any(
        ref.get("controller") and ref.get("uid") == pod_meta.get("uid")
        for ref in claim_meta.get("ownerReferences") or []
    )
    if claim_meta.get("namespace") != pod_meta.get("namespace") or not controlled:
        return (
            f"ResourceClaim {claim_meta.get('namespace')}/{claim_meta.get('name')} was not "
            f"created for pod {pod_meta.get('namespace')}/{pod_meta.get('name')} "
            "(pod is not owner)"
        )
    return ""


def reserved_for(claim: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list((claim.get("status") or {}).get("reservedFor") or [])


def is_reserved_for_pod(pod: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    uid = (pod.get("metadata") or {}).get("uid")
    return any(ref.get("uid") == uid for ref in reserved_for(claim))


def can_be_reserved(claim: Mapping[str, Any]) -> bool:
    return len(reserved_for(claim)) < RESERVED_FOR_MAX_SIZE


def allocation_of(claim: Mapping[str, Any]) -> dict[str, Any] | None:
    allocation = (claim.get("status") or {}).get("allocation")
    return allocation if isinstance(allocation, dict) else None


def devices_of(allocation: Mapping[str, Any]) -> list[DeviceID]:
    results = (allocation.get("devices") or {}).get("results") or []
    return [
        (str(r.get("driver", "")), str(r.get("pool", "")), str(r.get("device", "")))
        for r in results
        if not r.get("adminAccess")
    ]


def allocated_devices(claims: Iterable[Mapping[str, Any]]) -> set[DeviceID]:
    """Devices in use by allocated claims (admin access does not take a device)."""
    used: set[DeviceID] = set()
    for claim in claims:
        allocation = allocation_of(claim)
        if allocation is not None:
            used.update(devices_of(allocation))
    return used
