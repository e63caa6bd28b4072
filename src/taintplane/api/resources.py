"""What a pod asks of its node: its effective requests (``resourcehelper.PodRequests``), in
the units the scheduler and the kubelet compare (milli-CPU, bytes, counts)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taintplane.api.quantity import QuantityError, milli_value, value

__all__ = ["amount", "pod_requests"]


def amount(resource: str, quantity: Any) -> int:
    """A quantity as the scheduler counts it: milli-CPU for ``cpu``, whole units otherwise
    (an unparsable one counts as nothing; validation refused it long before)."""
    try:
        return milli_value(quantity) if resource == "cpu" else value(quantity)
    except QuantityError:
        return 0


def _requests(container: Mapping[str, Any]) -> dict[str, int]:
    requests = (container.get("resources") or {}).get("requests") or {}
    return {resource: amount(resource, quantity) for resource, quantity in requests.items()}


def _add(into: dict[str, int], more: Mapping[str, int]) -> None:
    for resource, count in more.items():
        into[resource] = into.get(resource, 0) + count


def _max(into: dict[str, int], other: Mapping[str, int]) -> None:
    for resource, count in other.items():
        into[resource] = max(into.get(resource, 0), count)


def pod_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    """The containers' requests summed, with sidecars (init containers that keep running)
    added to them; each resource at least what any init container needs while it runs (with
    the sidecars started before it); plus the pod's overhead."""
    total: dict[str, int] = {}
    for container in spec.get("containers") or []:
        _add(total, _requests(container))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for container in spec.get("initContainers") or []:
        needs = _requests(container)
        if container.get("restartPolicy") == "Always":
            _add(total, needs)
            _add(sidecars, needs)
            running = dict(sidecars)
        else:
            running = dict(needs)
            _add(running, sidecars)
        _max(init_peak, running)
    _max(total, init_peak)
    for resource, quantity in (spec.get("overhead") or {}).items():
        total[resource] = total.get(resource, 0) + amount(resource, quantity)
    return total
