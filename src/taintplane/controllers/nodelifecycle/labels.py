"""The beta OS and architecture labels kept equal to the stable ones (upstream's
``reconcileNodeLabels`` with ``labelReconcileInfo``), on every node add and update."""

from __future__ import annotations

import logging
from typing import Any

from taintplane.client import ApiError, Client, resource

__all__ = ["RECONCILED_LABELS", "labels_to_reconcile", "reconcile_labels"]

log = logging.getLogger(__name__)

NODES = resource("", "v1", "nodes")

#: (stable label, its beta twin): the stable one is the source of truth, and the beta one
#: is added when missing (ensureSecondaryExists).
RECONCILED_LABELS = (
    ("kubernetes.io/os", "beta.kubernetes.io/os"),
    ("kubernetes.io/arch", "beta.kubernetes.io/arch"),
)


def labels_to_reconcile(node: dict[str, Any]) -> dict[str, str]:
    """The beta labels to set: those missing or differing from their stable label. A node
    without the stable label is left alone, as upstream leaves it."""
    labels = node["metadata"].get("labels") or {}
    return {
        beta: labels[stable]
        for stable, beta in RECONCILED_LABELS
        if stable in labels and labels.get(beta) != labels[stable]
    }


async def reconcile_labels(client: Client, node: dict[str, Any]) -> None:
    """``AddOrUpdateLabelsOnNode``: a patch of the labels alone, so no conflict to retry."""
    wanted = labels_to_reconcile(node)
    if not wanted:
        return
    name = node["metadata"]["name"]
    try:
        await client.patch(NODES, name, {"metadata": {"labels": wanted}}, patch_type="strategic")
    except ApiError as error:
        log.info("reconciling the labels of node %s failed: %s", name, error)
