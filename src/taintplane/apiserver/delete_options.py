"""DeleteOptions as kube-apiserver reads them: the propagation policy (or the deprecated
``orphanDependents``), checked as upstream's ValidateDeleteOptions."""

from __future__ import annotations

from typing import Any

from taintplane.api.field import FieldError, Path
from taintplane.apiserver.status import APIError

__all__ = ["PROPAGATION_POLICIES", "propagation_policy"]


PROPAGATION_POLICIES = ("Foreground", "Background", "Orphan")


def _invalid_delete_options(error: FieldError) -> APIError:
    # errors.NewInvalid(meta.k8s.io DeleteOptions, "", errs)
    return APIError.make(
        422,
        "Invalid",
        f'DeleteOptions.meta.k8s.io "" is invalid: {error}',
        {
            "group": "meta.k8s.io",
            "kind": "DeleteOptions",
            "causes": [{"reason": error.type.reason, "message": error.body, "field": error.field}],
        },
    )


def propagation_policy(options: dict[str, Any]) -> str | None:
    """DeleteOptions' ``propagationPolicy`` (or the deprecated ``orphanDependents``), checked
    as upstream's ValidateDeleteOptions does."""
    policy = options.get("propagationPolicy")
    orphan = options.get("orphanDependents")
    path = Path.root("propagationPolicy")
    if policy is not None and orphan is not None:
        raise _invalid_delete_options(
            FieldError.invalid(
                path, policy, "orphanDependents and deletionPropagation cannot be both set"
            )
        )
    if policy is None:
        if orphan is None:
            return None
        return "Orphan" if orphan else "Background"
    if policy not in PROPAGATION_POLICIES:
        raise _invalid_delete_options(
            FieldError.not_supported(path, policy, [*PROPAGATION_POLICIES, "nil"])
        )
    return str(policy)
