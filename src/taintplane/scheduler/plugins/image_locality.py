"""ImageLocality: prefer nodes that already have the pod's container images.

Each container image (init containers included) found in the node's ``status.images`` adds
its size scaled by the share of nodes that have it (so an image on every node does not pull
pods anywhere); the sum, clamped between 23 MB and 1000 MB per container, maps onto 0..100.
Names without a tag are looked up as ``:latest``, as upstream.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from taintplane.scheduler.framework import MAX_NODE_SCORE, CycleState, ScorePlugin
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names
from taintplane.scheduler.table import TABLE_KEY, NodeTable

__all__ = ["ImageLocality", "normalized_image_name"]

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB
Rows = npt.NDArray[np.int64]


def normalized_image_name(name: str) -> str:
    """``normalizedImageName``: a name without a tag means ``:latest``."""
    return name if name.rfind(":") > name.rfind("/") else name + ":latest"


def _images(pod: PodInfo) -> list[str]:
    spec = pod.pod.get("spec") or {}
    containers = list(spec.get("initContainers") or []) + list(spec.get("containers") or [])
    return [normalized_image_name(str(c.get("image") or "")) for c in containers]


def calculate_priority(total: int, containers: int) -> int:
    """``calculatePriority``: the clamped sum mapped onto 0..100."""
    top = MAX_CONTAINER_THRESHOLD * containers
    total = min(max(total, MIN_THRESHOLD), top)
    return MAX_NODE_SCORE * (total - MIN_THRESHOLD) // (top - MIN_THRESHOLD)


class ImageLocality:
    name = names.IMAGE_LOCALITY
    reverse = False

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        table: NodeTable | None = state.data.get(TABLE_KEY)
        images = _images(pod)
        total = 0
        for image in images:
            size = node.images.get(image)
            if size is not None:
                spread = table.image_nodes.get(image, 1) / table.size if table else 1.0
                total += int(size * spread)
        return calculate_priority(total, len(images))

    def normalize(self, state: CycleState, pod: PodInfo, scores: dict[str, int]) -> None:
        return None  # upstream has no ScoreExtensions: scores are 0..100 already

    def score_all(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: Rows) -> Rows:
        images = _images(pod)
        known = [image for image in images if image in table.image_nodes]
        if not known:  # no node has any of them: every node scores the same 0
            return np.zeros(len(rows), dtype=np.int64)
        return np.array([self.score(state, pod, table.nodes[int(i)]) for i in rows], np.int64)


_check: type[ScorePlugin] = ImageLocality
