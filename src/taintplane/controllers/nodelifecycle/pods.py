"""``MarkPodsNotReady``: when a node stops being Ready, its pods' Ready condition goes False
(reason and message kept, as upstream) with a ``NodeNotReady`` warning event on each pod."""

from __future__ import annotations

from typing import Any

from taintplane.api.decoding import format_time
from taintplane.client import ApiError, Client, resource
from taintplane.client.events import EventRecorder
from taintplane.clock import Clock

__all__ = ["mark_pods_not_ready"]

PODS = resource("", "v1", "pods")


async def mark_pods_not_ready(
    client: Client,
    recorder: EventRecorder,
    clock: Clock,
    pods: list[dict[str, Any]],
    node_name: str,
) -> None:
    for pod in pods:
        if (pod.get("spec") or {}).get("nodeName") != node_name:
            continue
        conditions = (pod.get("status") or {}).get("conditions") or []
        ready = next((c for c in conditions if c.get("type") == "Ready"), None)
        if ready is None or ready.get("status") == "False":
            continue
        meta = pod["metadata"]
        patch = {
            "status": {
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "False",
                        "lastTransitionTime": format_time(clock.now()),
                    }
                ]
            }
        }
        try:
            await client.patch(
                PODS,
                meta["name"],
                patch,
                namespace=meta["namespace"],
                patch_type="strategic",
                subresource="status",
            )
        except ApiError as error:
            if error.code == 404:
                continue
            raise
        recorder.event(pod, "Warning", "NodeNotReady", "Node is not ready")
