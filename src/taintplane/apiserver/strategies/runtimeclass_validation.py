"""A RuntimeClass's overhead, as ``pkg/apis/node/validation`` checks it: ``podFixed`` is
validated as a container's resource limits (``ValidateContainerResourceRequirements`` with
``Limits: podFixed``) under the path ``overhead``, so errors read ``overhead.limits[cpu]``."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from taintplane.api import names
from taintplane.api.field import FieldError, Path
from taintplane.api.quantity import QuantityError, parse_quantity

__all__ = ["validate_overhead"]

NONNEGATIVE = "must be greater than or equal to 0"
NOT_INTEGER = "must be an integer"
HUGE_PAGES = "hugepages-"
#: pkg/apis/core/helper: the resources a container may name without a domain.
STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
#: …and every resource a quota may name (validateResourceName's first check).
STANDARD_RESOURCES = STANDARD_CONTAINER_RESOURCES | {
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "persistentvolumeclaims",
    "requests.storage",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
}
QOS_RESOURCES = ("cpu", "memory")


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _is_extended(name: str) -> bool:
    if _is_native(name) or name.startswith("requests."):
        return False
    return not names.is_qualified_name("requests." + name)


def _validate_resource_name(name: str, path: Path) -> list[FieldError]:
    """``validateResourceName``: a qualified name, and without a domain a standard one."""
    errors = [FieldError.invalid(path, name, m) for m in names.is_qualified_name(name)]
    if errors:
        return errors
    if "/" not in name and not (
        name in STANDARD_RESOURCES or name.startswith((HUGE_PAGES, "requests." + HUGE_PAGES))
    ):
        errors.append(
            FieldError.invalid(path, name, "must be a standard resource type or fully qualified")
        )
    return errors


def _validate_container_resource_name(name: str, path: Path) -> list[FieldError]:
    """``validateContainerResourceName``, which adds to validateResourceName's errors."""
    errors = _validate_resource_name(name, path)
    if "/" not in name:
        if not (name in STANDARD_CONTAINER_RESOURCES or name.startswith(HUGE_PAGES)):
            errors.append(
                FieldError.invalid(path, name, "must be a standard resource for containers")
            )
    elif not _is_native(name) and not _is_extended(name):
        errors.append(
            FieldError.invalid(path, name, "doesn't follow extended resource name standard")
        )
    return errors


def _validate_quantity(name: str, text: str, amount: Decimal, path: Path) -> list[FieldError]:
    """``ValidateResourceQuantityValue`` and, for huge pages, the page-size multiple. The
    rejected quantity is shown as its string (``Quantity.String()``)."""
    errors: list[FieldError] = []
    if amount < 0:
        errors.append(FieldError.invalid(path, text, NONNEGATIVE))
    if _is_extended(name) and math.ceil(amount * 1000) % 1000 != 0:
        errors.append(FieldError.invalid(path, text, NOT_INTEGER))
    if name.startswith(HUGE_PAGES) and not _divisible(name[len(HUGE_PAGES) :], amount):
        errors.append(
            FieldError.invalid(path, text, f"{text} is not positive integer multiple of {name}")
        )
    return errors


def _divisible(page_size: str, amount: Decimal) -> bool:
    try:
        page = parse_quantity(page_size)
    except QuantityError:
        return False
    if page <= 0 or (page * 1000) % 1000 != 0:
        return False
    return math.ceil(amount) % math.ceil(page) == 0


def validate_overhead(overhead: Any, path: Path) -> list[FieldError]:
    if not isinstance(overhead, dict):
        return []
    pod_fixed = overhead.get("podFixed")
    if not isinstance(pod_fixed, dict):
        return []
    errors: list[FieldError] = []
    limits = path.child("limits")
    for name, quantity in pod_fixed.items():
        at = limits.key(str(name))
        errors += _validate_container_resource_name(str(name), at)
        try:
            amount = parse_quantity(quantity)
        except (QuantityError, TypeError):
            continue  # the decoder refuses a quantity it cannot parse
        errors += _validate_quantity(str(name), str(quantity), amount, at)
    names_set = {str(n) for n in pod_fixed}
    if any(n.startswith(HUGE_PAGES) for n in names_set) and not names_set & set(QOS_RESOURCES):
        errors.append(FieldError.forbidden(path, "HugePages require cpu or memory"))
    return errors
