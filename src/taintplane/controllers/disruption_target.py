"""The DisruptionTarget condition the eviction controllers write before deleting a pod
(upstream's addConditionAndDeletePod in the taint and device-taint eviction controllers)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from taintplane.api.decoding import format_time
from taintplane.api.podconditions import changed_condition
from taintplane.client import Client, resource

__all__ = ["disruption_target_patch", "mark_disruption_target"]

PODS = resource("", "v1", "pods")


def disruption_target_patch(
    pod: dict[str, Any],
    reason: str,
    message: str,
    now: datetime,
    *,
    observe_generation: bool = False,
) -> dict[str, Any] | None:
    """The status patch that writes ``DisruptionTarget=True`` with ``reason`` and
    ``message`` on ``pod``, or ``None`` when ``UpdatePodCondition`` would not change it (a
    pod evicted again keeps its first ``lastTransitionTime`` and sees no status write).

    ``observe_generation``: the condition carries the pod's ``metadata.generation``, as the
    taint eviction controller's does (CalculatePodConditionObservedGeneration, with
    PodObservedGenerationTracking GA in 1.35); the device taint eviction controller's does
    not set one."""
    wanted: dict[str, Any] = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": reason,
        "message": message,
    }
    generation = pod["metadata"].get("generation")
    if observe_generation and isinstance(generation, int) and generation:
        wanted["observedGeneration"] = generation
    condition = changed_condition(pod, wanted, format_time(now))
    return None if condition is None else {"status": {"conditions": [condition]}}


async def mark_disruption_target(
    client: Client,
    pod: dict[str, Any],
    reason: str,
    message: str,
    now: datetime,
    *,
    observe_generation: bool = False,
) -> None:
    """Write ``disruption_target_patch`` to ``pod``'s status, when there is one."""
    patch = disruption_target_patch(
        pod, reason, message, now, observe_generation=observe_generation
    )
    if patch is not None:
        metadata = pod["metadata"]
        await client.patch(
            PODS,
            metadata["name"],
            patch,
            namespace=metadata.get("namespace", ""),
            patch_type="strategic",
            subresource="status",
        )
