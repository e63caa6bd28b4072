"""Status validation of Deployments and ReplicaSets (ValidateDeploymentStatusUpdate,
ValidateReplicaSetStatusUpdate): counts are not negative, none exceeds the replicas, and a
Deployment's collisionCount never goes down. (DaemonSets' is in apps_validation.)"""

from __future__ import annotations

from typing import Any

from taintplane.api.field import FieldError, Path
from taintplane.apiserver.strategies.apps_validation import NONNEGATIVE

__all__ = ["validate_deployment_status_update", "validate_replicaset_status_update"]

_OVER_REPLICAS = "cannot be greater than status.replicas"


def _count(status: dict[str, Any], key: str) -> int:
    value = status.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _counts(
    status: dict[str, Any], nonnegative: tuple[str, ...], bounded: tuple[str, ...]
) -> list[FieldError]:
    path = Path.root("status")
    errors = [
        FieldError.invalid(path.child(key), _count(status, key), NONNEGATIVE)
        for key in nonnegative
        if _count(status, key) < 0
    ]
    for key in bounded:
        if _count(status, key) > _count(status, "replicas"):
            errors.append(FieldError.invalid(path.child(key), _count(status, key), _OVER_REPLICAS))
    if _count(status, "availableReplicas") > _count(status, "readyReplicas"):
        errors.append(
            FieldError.invalid(
                path.child("availableReplicas"),
                _count(status, "availableReplicas"),
                "cannot be greater than readyReplicas",
            )
        )
    return errors


def validate_replicaset_status_update(status: dict[str, Any]) -> list[FieldError]:
    return _counts(
        status,
        (
            "replicas",
            "fullyLabeledReplicas",
            "readyReplicas",
            "availableReplicas",
            "observedGeneration",
            "terminatingReplicas",
        ),
        ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"),
    )


def validate_deployment_status_update(
    status: dict[str, Any], old_status: dict[str, Any]
) -> list[FieldError]:
    errors = _counts(
        status,
        (
            "observedGeneration",
            "replicas",
            "updatedReplicas",
            "readyReplicas",
            "availableReplicas",
            "unavailableReplicas",
            "terminatingReplicas",
            "collisionCount",
        ),
        ("updatedReplicas", "readyReplicas", "availableReplicas"),
    )
    new, old = status.get("collisionCount"), old_status.get("collisionCount")
    if isinstance(old, int) and (not isinstance(new, int) or new < old):
        errors.append(
            FieldError.invalid(
                Path.root("status", "collisionCount"),
                new if isinstance(new, int) else 0,
                "cannot be decremented",
            )
        )
    return errors
