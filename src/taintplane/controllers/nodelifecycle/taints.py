"""Changing a node's taints as the node lifecycle controller does (``SwapNodeControllerTaint``):
add some (stamped with ``timeAdded``), remove others, by key and effect, with optimistic
concurrency and retries."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from taintplane.api.decoding import format_time
from taintplane.client import ApiError, Client, resource

__all__ = ["has_taint", "swap_taints"]

log = logging.getLogger(__name__)

NODES = resource("", "v1", "nodes")
RETRIES = 5


def has_taint(node: dict[str, Any], key: str, effect: str) -> bool:
    return any(
        t.get("key") == key and t.get("effect") == effect
        for t in (node.get("spec") or {}).get("taints") or []
    )


def _swapped(
    taints: list[dict[str, Any]],
    add: Sequence[tuple[str, str]],
    remove: Sequence[tuple[str, str]],
    now: datetime,
) -> list[dict[str, Any]]:
    result = [t for t in taints if (t.get("key"), t.get("effect")) not in set(remove)]
    for key, effect in add:
        if not any(t.get("key") == key and t.get("effect") == effect for t in result):
            result.append({"key": key, "effect": effect, "timeAdded": format_time(now)})
    return result


async def swap_taints(
    client: Client,
    node: dict[str, Any],
    add: Sequence[tuple[str, str]],
    remove: Sequence[tuple[str, str]],
    now: datetime,
) -> bool:
    """Add and remove taints (key, effect) on the node; True when the node has them so."""
    current = node
    for _ in range(RETRIES):
        taints = (current.get("spec") or {}).get("taints") or []
        wanted = _swapped(taints, add, remove, now)
        if wanted == taints:
            return True
        patch = {
            "metadata": {"resourceVersion": current["metadata"].get("resourceVersion")},
            "spec": {"taints": wanted or None},
        }
        name = current["metadata"]["name"]
        try:
            await client.patch(NODES, name, patch)
            return True
        except ApiError as error:
            if error.code == 404:
                return False
            if error.code != 409:
                log.info("updating the taints of node %s failed: %s", name, error)
                return False
        try:
            current = await client.get(NODES, name)
        except ApiError:
            return False
    return False
