"""The events a kubelet records about a pod's containers, as upstream's kubelet words them.

Each names its container by reference (``fieldPath: spec.containers{NAME}``, which ``kubectl
describe`` prints before the message), so the starting messages no longer repeat the name.
A simulated node has every image, so the pull is "already present" — except for
``imagePullPolicy: Always``, where a real kubelet pulls and reports sizes and durations we
could only invent: no pull event is recorded for those.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from taintplane.client.events import EventRecorder, object_reference

__all__ = ["container_reference", "record_killing", "record_started"]


def container_reference(
    pod: dict[str, Any], name: str, field: str = "containers"
) -> dict[str, Any]:
    return {**object_reference(pod), "fieldPath": f"spec.{field}{{{name}}}"}


def record_started(
    recorder: EventRecorder,
    pod: dict[str, Any],
    containers: Iterable[dict[str, Any]],
    field: str = "containers",
) -> None:
    """Pulled, Created and Started for each of ``containers`` (of the pod's ``spec.FIELD``)
    the kubelet starts."""
    for container in containers:
        name, image = container.get("name", ""), container.get("image", "")
        reference = container_reference(pod, name, field)
        if container.get("imagePullPolicy") != "Always":
            recorder.event(
                pod,
                "Normal",
                "Pulled",
                f'Container image "{image}" already present on machine and can be accessed '
                "by the pod",
                reference=reference,
            )
        recorder.event(pod, "Normal", "Created", "Container created", reference=reference)
        recorder.event(pod, "Normal", "Started", "Container started", reference=reference)


def record_killing(
    recorder: EventRecorder, pod: dict[str, Any], names: list[str], message: str = ""
) -> None:
    """Killing ("Stopping container NAME", or ``message``) for each container it stops."""
    for name in names:
        recorder.event(
            pod,
            "Normal",
            "Killing",
            message or f"Stopping container {name}",
            reference=container_reference(pod, name),
        )
