"""Writes to ``pods/status``: what podStatusStrategy keeps of the old pod (PrepareForUpdate)
and ValidatePodStatusUpdate's checks of the new status, with upstream's paths and messages.

The generic status rules (spec and system metadata from the stored pod, owner references
kept) are the base strategy's; this module adds the pod's own."""

from __future__ import annotations

import ipaddress
from typing import Any

from taintplane.api import names
from taintplane.api.field import FieldError, Path

__all__ = [
    "prepare_pod_status_update",
    "validate_pod_annotation_updates",
    "validate_pod_status_update",
]

MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
APPARMOR_PREFIX = "container.apparmor.security.beta.kubernetes.io/"

#: validatePodConditions leaves the system condition types alone; others are qualified names.
SYSTEM_CONDITIONS = ("PodScheduled", "Ready", "Initialized")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def prepare_pod_status_update(new: dict[str, Any], old: dict[str, Any]) -> None:
    """podStatusStrategy.PrepareForUpdate beyond the spec: an empty qosClass is backfilled
    (old kubelets dropped it), and an observedGeneration a client leaves out (0) is the old
    one, for the status and per condition type (preserveOldObservedGeneration)."""
    status = new.get("status")
    if not isinstance(status, dict):
        return
    old_status = _dict(old.get("status"))
    if not status.get("qosClass") and old_status.get("qosClass"):
        status["qosClass"] = old_status["qosClass"]
    if not status.get("observedGeneration") and old_status.get("observedGeneration"):
        status["observedGeneration"] = old_status["observedGeneration"]
    generations = {
        c.get("type"): c.get("observedGeneration")
        for c in _list(old_status.get("conditions"))
        if isinstance(c, dict) and c.get("observedGeneration")
    }
    for condition in _list(status.get("conditions")):
        if isinstance(condition, dict) and not condition.get("observedGeneration"):
            generation = generations.get(condition.get("type"))
            if generation:
                condition["observedGeneration"] = generation


def validate_pod_status_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """ValidatePodStatusUpdate (the metadata rules are the caller's)."""
    status, old_status = _dict(new.get("status")), _dict(old.get("status"))
    spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
    # Upstream passes the metadata path here: the condition errors read metadata.conditions.
    errors = validate_pod_annotation_updates(new, old)
    errors += _conditions(status.get("conditions"), Path.root("metadata", "conditions"))
    at = Path.root("status")
    nominated = status.get("nominatedNodeName") or ""
    if nominated and nominated != (old_status.get("nominatedNodeName") or ""):
        errors += [
            FieldError.invalid(at.child("nominatedNodeName"), nominated, problem)
            for problem in names.is_dns1123_subdomain(str(nominated))
        ]
    qos, old_qos = status.get("qosClass") or "", old_status.get("qosClass") or ""
    if qos != old_qos:
        errors.append(FieldError.invalid(at.child("qosClass"), qos, "field is immutable"))
    policy = old_spec.get("restartPolicy") or ""
    restartable = {
        c.get("name")
        for c in _list(old_spec.get("initContainers"))
        if isinstance(c, dict) and c.get("restartPolicy") == "Always"
    }
    for key, kind_policy, skip in (
        ("containerStatuses", policy, set()),
        ("initContainerStatuses", policy, restartable),
        # The kubelet never restarts ephemeral containers: an implicit Never.
        ("ephemeralContainerStatuses", "Never", set()),
    ):
        errors += _state_transitions(
            status.get(key), old_status.get(key), at.child(key), kind_policy, skip
        )
    errors += _claim_statuses(
        status.get("resourceClaimStatuses"),
        spec.get("resourceClaims"),
        at.child("resourceClaimStatuses"),
    )
    errors += _ips(status.get("podIPs"), old_status.get("podIPs"), at.child("podIPs"))
    host_ips = _list(status.get("hostIPs"))
    if host_ips:
        first = _dict(host_ips[0]).get("ip")
        if first != (status.get("hostIP") or ""):
            errors.append(
                FieldError.invalid(
                    at.child("hostIPs").index(0).child("ip"), first, "must be equal to `hostIP`"
                )
            )
        errors += _ips(
            host_ips, old_status.get("hostIPs"), at.child("hostIPs"), duplicates_first=True
        )
    for i, container in enumerate(_list(status.get("ephemeralContainerStatuses"))):
        if _dict(container).get("allocatedResourcesStatus"):
            errors.append(
                FieldError.forbidden(
                    at.child("ephemeralContainerStatuses")
                    .index(i)
                    .child("allocatedResourcesStatus"),
                    "must not be specified in container status",
                )
            )
    return errors


def validate_pod_annotation_updates(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """ValidatePodSpecificAnnotationUpdates: the mirror pod annotation (which marks a
    kubelet's static pod, and which NodeRestriction trusts) and the deprecated AppArmor
    annotations are neither added, changed nor removed by an update."""
    new_annotations = _dict(_dict(new.get("metadata")).get("annotations"))
    old_annotations = _dict(_dict(old.get("metadata")).get("annotations"))
    path = Path.root("metadata", "annotations")
    errors: list[FieldError] = []
    for key in sorted(old_annotations, key=str):
        if key in new_annotations and new_annotations[key] == old_annotations[key]:
            continue
        if str(key).startswith(APPARMOR_PREFIX):
            errors.append(
                FieldError.forbidden(path.key(key), "may not remove or update AppArmor annotations")
            )
        if key == MIRROR_POD_ANNOTATION:
            errors.append(
                FieldError.forbidden(
                    path.key(key), "may not remove or update mirror pod annotation"
                )
            )
    for key in sorted(new_annotations, key=str):
        if key in old_annotations:
            continue
        if str(key).startswith(APPARMOR_PREFIX):
            errors.append(FieldError.forbidden(path.key(key), "may not add AppArmor annotations"))
        if key == MIRROR_POD_ANNOTATION:
            errors.append(FieldError.forbidden(path.key(key), "may not add mirror pod annotation"))
    return errors


def _conditions(conditions: Any, path: Path) -> list[FieldError]:
    errors: list[FieldError] = []
    for i, condition in enumerate(_list(conditions)):
        kind = str(_dict(condition).get("type") or "")
        if kind in SYSTEM_CONDITIONS:
            continue
        errors += [
            FieldError.invalid(path.index(i).child("Type"), kind, problem)
            for problem in names.is_qualified_name(kind)
        ]
    return errors


def _terminated(status: Any) -> dict[str, Any] | None:
    terminated = _dict(_dict(status).get("state")).get("terminated")
    return terminated if isinstance(terminated, dict) else None


def _state_transitions(
    new: Any, old: Any, path: Path, policy: str, restartable: set[Any]
) -> list[FieldError]:
    """ValidateContainerStateTransition: unless the pod restarts its containers, one that
    terminated (successfully, under OnFailure) does not run again."""
    if policy == "Always":
        return []
    errors: list[FieldError] = []
    for i, old_status in enumerate(_list(old)):
        terminated = _terminated(old_status)
        if terminated is None:
            continue
        if int(terminated.get("exitCode") or 0) != 0 and policy == "OnFailure":
            continue
        name = _dict(old_status).get("name")
        if name in restartable:
            continue
        for new_status in _list(new):
            if _dict(new_status).get("name") == name and _terminated(new_status) is None:
                errors.append(
                    FieldError.forbidden(
                        path.index(i).child("state"),
                        "may not be transitioned to non-terminated state",
                    )
                )
    return errors


def _claim_statuses(statuses: Any, claims: Any, path: Path) -> list[FieldError]:
    """validatePodResourceClaimStatuses: each names an entry of spec.resourceClaims, once."""
    declared = {_dict(c).get("name") for c in _list(claims)}
    seen: set[Any] = set()
    errors: list[FieldError] = []
    for i, status in enumerate(_list(statuses)):
        entry = _dict(status)
        name = entry.get("name")
        at = path.index(i).child("name")
        if name not in declared:
            errors.append(
                FieldError.invalid(
                    at, name, "must match the name of an entry in `spec.resourceClaims`"
                )
            )
        if name in seen:
            errors.append(FieldError.duplicate(at, name))
        seen.add(name)
        claim_name = entry.get("resourceClaimName")
        if isinstance(claim_name, str):
            errors += [
                FieldError.invalid(at, claim_name, problem)
                for problem in names.is_dns1123_subdomain(claim_name)
            ]
    return errors


def _ips(
    entries: Any, old_entries: Any, path: Path, *, duplicates_first: bool = False
) -> list[FieldError]:
    """validatePodIPs / validateHostIPs: each a valid IP (one already stored may stay), at
    most one per IP family, none twice (validateHostIPs reports the duplicates first)."""
    listed = [_dict(e) for e in _list(entries)]
    stored = {_dict(e).get("ip") for e in _list(old_entries)}
    errors: list[FieldError] = []
    families: list[int] = []
    for i, entry in enumerate(listed):
        ip = entry.get("ip")
        try:
            families.append(ipaddress.ip_address(str(ip)).version)
        except ValueError:
            families.append(0)
            if ip not in stored:
                errors.append(
                    FieldError.invalid(
                        path.index(i),
                        ip if isinstance(ip, str) else "",
                        "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                    )
                )
    if len(listed) < 2:
        return errors
    family = []
    if len(listed) > 2 or sorted(families) != [4, 6]:
        family.append(
            FieldError.invalid(
                path, list(_list(entries)), "may specify no more than one IP for each IP family"
            )
        )
    twice = []
    seen: set[Any] = set()
    for i, entry in enumerate(listed):
        if entry.get("ip") in seen:
            twice.append(FieldError.duplicate(path.index(i), entry))
        seen.add(entry.get("ip"))
    return errors + (twice + family if duplicates_first else family + twice)
