"""Resource requirements as ``pkg/apis/core/validation`` checks them: a container's
``resources`` (``ValidateContainerResourceRequirements``), the pod-level ``spec.resources``
(``validatePodResources``, the PodLevelResources feature, beta and on since 1.34) and a
RuntimeClass's overhead, which upstream validates as a container's limits.

Rejected quantities are shown as ``Quantity.String()``: the decoder has already put every
quantity in canonical form, so the text stored is the text Go would print."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any

from taintplane.api import names
from taintplane.api.field import FieldError, Path
from taintplane.api.quantity import QuantityError, parse_quantity
from taintplane.api.quantity_format import canonical_quantity

__all__ = [
    "default_pod_level_requests",
    "validate_container_resources",
    "validate_pod_level_resources",
    "validate_resource_requirements",
]

NONNEGATIVE = "must be greater than or equal to 0"
NOT_INTEGER = "must be an integer"
HUGE_PAGES = "hugepages-"
#: pkg/apis/core/helper: the resources a container may name without a domain.
STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
#: The standard resources quotas count in whole numbers (IsIntegerResourceName).
INTEGER_RESOURCES = frozenset(
    {
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)
#: …and every resource a quota may name (validateResourceName's first check).
STANDARD_RESOURCES = (
    STANDARD_CONTAINER_RESOURCES
    | INTEGER_RESOURCES
    | {
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "requests.storage",
    }
)
QOS_RESOURCES = ("cpu", "memory")
#: component-helpers' SupportedPodLevelResources, as the NotSupported list prints it.
POD_LEVEL_RESOURCES = ("cpu", HUGE_PAGES, "memory")

NameCheck = Callable[[str, Path], list[FieldError]]


def is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_extended(name: str) -> bool:
    if is_native(name) or name.startswith("requests."):
        return False
    return not names.is_qualified_name("requests." + name)


def _overcommit_allowed(name: str) -> bool:
    return is_native(name) and not name.startswith(HUGE_PAGES)


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


def container_resource_name_errors(name: str, path: Path) -> list[FieldError]:
    """``validateContainerResourceName``, which adds to validateResourceName's errors."""
    errors = _validate_resource_name(name, path)
    if "/" not in name:
        if not (name in STANDARD_CONTAINER_RESOURCES or name.startswith(HUGE_PAGES)):
            errors.append(
                FieldError.invalid(path, name, "must be a standard resource for containers")
            )
    elif not is_native(name) and not is_extended(name):
        errors.append(
            FieldError.invalid(path, name, "doesn't follow extended resource name standard")
        )
    return errors


def _pod_resource_name_errors(name: str, path: Path) -> list[FieldError]:
    """``validatePodResourceName``: cpu, memory and huge pages only."""
    errors = _validate_resource_name(name, path)
    if not errors and name not in QOS_RESOURCES and not name.startswith(HUGE_PAGES):
        errors.append(FieldError.not_supported(path, name, POD_LEVEL_RESOURCES))
    return errors


def _quantity_errors(name: str, text: str, amount: Decimal, path: Path) -> list[FieldError]:
    """``ValidateResourceQuantityValue``."""
    errors: list[FieldError] = []
    if amount < 0:
        errors.append(FieldError.invalid(path, text, NONNEGATIVE))
    if (is_extended(name) or name in INTEGER_RESOURCES) and math.ceil(amount * 1000) % 1000:
        errors.append(FieldError.invalid(path, text, NOT_INTEGER))
    return errors


def _huge_page_errors(name: str, text: str, amount: Decimal, path: Path) -> list[FieldError]:
    """``validateResourceQuantityHugePageValue``: a whole number of pages."""
    if not name.startswith(HUGE_PAGES) or _divisible(name[len(HUGE_PAGES) :], amount):
        return []
    return [FieldError.invalid(path, text, f"{text} is not positive integer multiple of {name}")]


def _divisible(page_size: str, amount: Decimal) -> bool:
    try:
        page = parse_quantity(page_size)
    except QuantityError:
        return False
    if page <= 0 or (page * 1000) % 1000 != 0:
        return False
    return math.ceil(amount) % math.ceil(page) == 0


def _quantities(resources: Any) -> list[tuple[str, str, Decimal]]:
    """A ResourceList's entries by name (Go walks a map; sorted keeps errors stable), each
    with its text and amount. One the decoder could not parse is the decoder's error."""
    if not isinstance(resources, dict):
        return []
    entries = []
    for name in sorted(resources, key=str):
        try:
            amount = parse_quantity(resources[name])
        except (QuantityError, TypeError):
            continue
        entries.append((str(name), str(resources[name]), amount))
    return entries


def validate_resource_requirements(
    requirements: Mapping[str, Any], path: Path, name_check: NameCheck
) -> list[FieldError]:
    """``validateResourceRequirements``: names and quantities of limits and requests, each
    request no more than its limit (equal to it for resources that cannot be overcommitted:
    extended resources and huge pages), and huge pages only beside cpu or memory."""
    errors: list[FieldError] = []
    limits_path, requests_path = path.child("limits"), path.child("requests")
    limits = {
        name: (text, amount) for name, text, amount in _quantities(requirements.get("limits"))
    }
    for name, (text, amount) in limits.items():
        at = limits_path.key(name)
        errors += name_check(name, at)
        errors += _quantity_errors(name, text, amount, at)
        errors += _huge_page_errors(name, text, amount, at)
    requests = _quantities(requirements.get("requests"))
    for name, text, amount in requests:
        at = requests_path.key(name)
        errors += name_check(name, at)
        errors += _quantity_errors(name, text, amount, at)
        if name in limits:
            limit_text, limit = limits[name]
            # The comparison errors name the whole requests map, as upstream's reqPath.
            if amount != limit and not _overcommit_allowed(name):
                detail = f"must be equal to {name} limit of {limit_text}"
                errors.append(FieldError.invalid(requests_path, text, detail))
            elif amount > limit:
                detail = f"must be less than or equal to {name} limit of {limit_text}"
                errors.append(FieldError.invalid(requests_path, text, detail))
        elif not _overcommit_allowed(name):
            errors.append(
                FieldError.required(
                    limits_path, "Limit must be set for non overcommitable resources"
                )
            )
        errors += _huge_page_errors(name, text, amount, at)
    named = set(limits) | {name for name, _, _ in requests}
    if any(n.startswith(HUGE_PAGES) for n in named) and not named & set(QOS_RESOURCES):
        errors.append(FieldError.forbidden(path, "HugePages require cpu or memory"))
    return errors


def validate_container_resources(container: Mapping[str, Any], path: Path) -> list[FieldError]:
    """``ValidateContainerResourceRequirements`` for one container at ``path``."""
    resources = container.get("resources")
    if not isinstance(resources, dict):
        return []
    return validate_resource_requirements(
        resources, path.child("resources"), container_resource_name_errors
    )


def validate_pod_level_resources(spec: Mapping[str, Any], path: Path) -> list[FieldError]:
    """``validatePodResources`` at ``path`` (``spec.resources``): the pod's own requirements,
    and their consistency with the containers' (``validatePodResourceConsistency``)."""
    resources = spec.get("resources")
    if not isinstance(resources, dict):
        return []
    errors: list[FieldError] = []
    if resources.get("claims") is not None:
        errors.append(
            FieldError.forbidden(
                path.child("claims"), "claims cannot be set for Resources at pod-level"
            )
        )
    errors += validate_resource_requirements(resources, path, _pod_resource_name_errors)
    pod_requests = {n: (t, a) for n, t, a in _quantities(resources.get("requests"))}
    for name, (total, text) in sorted(aggregate_container_requests(spec).items()):
        own_text, own = pod_requests.get(name, ("0", Decimal(0)))
        if total > own:
            detail = f"must be greater than or equal to aggregate container requests of {text}"
            errors.append(FieldError.invalid(path.child("requests").key(name), own_text, detail))
    pod_limits = {n: (t, a) for n, t, a in _quantities(resources.get("limits"))}
    for i, container in enumerate(_containers(spec, "containers")):
        for name, text, amount in _quantities((container.get("resources") or {}).get("limits")):
            if name in pod_limits and amount > pod_limits[name][1]:
                at = path.child("containers").index(i).key(name).child("limits")
                detail = f"must be less than or equal to pod limits of {pod_limits[name][0]}"
                errors.append(FieldError.invalid(at, text, detail))
    return errors


def default_pod_level_requests(spec: dict[str, Any]) -> None:
    """SetDefaults_Pod's ``defaultPodRequests``: with pod-level limits, a supported resource
    without a pod-level request asks for what the containers ask (if they may overcommit
    it), else for the pod's limit."""
    resources = spec.get("resources")
    if not isinstance(resources, dict) or not resources.get("limits"):
        return
    requests = resources.get("requests")
    requests = dict(requests) if isinstance(requests, dict) else {}
    for name, (_, text) in aggregate_container_requests(spec).items():
        if name not in requests and _pod_level(name) and _overcommit_allowed(name):
            requests[name] = text
    for name, limit in resources["limits"].items():
        if name not in requests and _pod_level(str(name)):
            requests[name] = limit
    if requests:
        resources["requests"] = requests


def _pod_level(name: str) -> bool:
    return name in QOS_RESOURCES or name.startswith(HUGE_PAGES)


def _containers(spec: Mapping[str, Any], key: str) -> Iterable[Mapping[str, Any]]:
    items = spec.get(key)
    return [c for c in items if isinstance(c, dict)] if isinstance(items, list) else []


def aggregate_container_requests(spec: Mapping[str, Any]) -> dict[str, tuple[Decimal, str]]:
    """component-helpers' ``AggregateContainerRequests``: the regular containers and sidecars
    together, or the largest init container's need (beside the sidecars started before it)
    when that is more. Each total comes with its text, formatted as Go's Quantity.Add keeps
    the first operand's format."""
    totals: dict[str, tuple[Decimal, str]] = {}
    for container in _containers(spec, "containers"):
        _add(totals, _requests(container))
    sidecars: dict[str, tuple[Decimal, str]] = {}
    init_peak: dict[str, tuple[Decimal, str]] = {}
    for container in _containers(spec, "initContainers"):
        own = _requests(container)
        if container.get("restartPolicy") == "Always":
            _add(totals, own)
            _add(sidecars, own)
            need = dict(sidecars)
        else:
            need = {}
            _add(need, own)
            _add(need, sidecars)
        _max(init_peak, need)
    _max(totals, init_peak)
    return totals


def _requests(container: Mapping[str, Any]) -> dict[str, tuple[Decimal, str]]:
    resources = container.get("resources")
    found = _quantities(resources.get("requests") if isinstance(resources, dict) else None)
    return {name: (amount, text) for name, text, amount in found}


def _add(into: dict[str, tuple[Decimal, str]], more: Mapping[str, tuple[Decimal, str]]) -> None:
    for name, (amount, text) in more.items():
        if name in into:
            total, first = into[name]
            into[name] = (total + amount, _format_like(total + amount, first))
        else:
            into[name] = (amount, text)


def _max(into: dict[str, tuple[Decimal, str]], other: Mapping[str, tuple[Decimal, str]]) -> None:
    for name, (amount, text) in other.items():
        if name not in into or amount > into[name][0]:
            into[name] = (amount, text)


_BINARY_SUFFIXES = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def _format_like(amount: Decimal, like: str) -> str:
    """``amount`` as Quantity.String() prints a sum whose first operand was ``like``: binary
    suffixes stay binary (the largest that divides it), anything else decimal."""
    if (
        like.endswith(_BINARY_SUFFIXES)
        and amount == amount.to_integral_value()
        and abs(amount) >= 1024
    ):
        whole, suffix = int(amount), ""
        for candidate in _BINARY_SUFFIXES:
            if whole % 1024:
                break
            whole, suffix = whole // 1024, candidate
        return f"{whole}{suffix}"
    return canonical_quantity(format(amount.normalize(), "f")) or format(amount, "f")
