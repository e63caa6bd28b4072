"""Column arrays over the nodes, for filtering and scoring thousands of nodes per pod at once.

Python evaluates a plugin on one node in about a microsecond; with 5000 nodes and several
plugins that is milliseconds per pod. Plugins that can, also implement ``filter_all`` and
``score_all`` over this table with NumPy, and the framework uses them when every plugin of
the extension point can (falling back to the per-node methods otherwise, and always for the
diagnosis of a failure, so messages come from one code path). Tests check that both paths
agree.

Rows are in node name order (the cycle's order). The table is kept, not rebuilt: as
upstream's ``Cache.UpdateSnapshot`` copies only the NodeInfos whose generation moved, a node
that came, went or changed costs its own row (:meth:`NodeTable.update`), and a node whose pods
changed reloads its usage (:meth:`NodeTable.refresh`). ``tests/scheduler/test_table_incremental.py``
checks the kept table against a fresh one after random changes.

Nodes with the same taints share a *taint group*, so a toleration is matched once per
distinct taint set, not once per node. A taint's ``timeAdded`` does not count: no toleration
reads it when scheduling, and a NoExecute taint applied node by node (a zone's outage) carries
a different one on every node, which would make a group of each. Which number a group has
does not matter (plugins only index by it); groups no row uses any more are dropped once they
outnumber the live ones.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from itertools import count
from typing import Any

import numpy as np
import numpy.typing as npt

from taintplane.api.taints import Taint
from taintplane.scheduler.nodeinfo import NodeInfo

__all__ = ["TABLE_KEY", "NodeTable"]

#: Cycle-state key under which the scheduler leaves the table of the cycle's nodes.
TABLE_KEY = "node-table"

Ints = npt.NDArray[np.int64]

#: The per-row columns, each one array of ``size`` (``names`` and ``nodes`` besides).
_COLUMNS = (
    "alloc_cpu",
    "alloc_memory",
    "alloc_storage",
    "alloc_pods",
    "unschedulable",
    "taint_group",
    "req_cpu",
    "req_memory",
    "req_storage",
    "pod_count",
    "score_cpu",
    "score_memory",
    "affinity_pods",
    "anti_affinity_pods",
)

#: Stamps of what a row was made from, for plugins that keep per-row results of their own
#: (PodTopologySpread's matching-pod counts and domain ids) and redo only the rows whose
#: stamp moved: ``pods_changed`` is the node's (NodeInfo.pods_changed, reloaded with the
#: usage), ``filled`` is new each time the row is filled from a NodeInfo (its labels).
_STAMPS = ("pods_changed", "filled")
_FILLS = count(1)


class NodeTable:
    def __init__(self, nodes: Sequence[NodeInfo]) -> None:
        """The table of ``nodes``, which must be in name order."""
        self.nodes = list(nodes)
        self.size = len(self.nodes)
        self._keys = [node.name for node in self.nodes]  # for bisect
        self.names = np.array(self._keys, dtype=object)
        for column in _COLUMNS:
            setattr(self, column, np.zeros(self.size, dtype=np.int64))
        self.unschedulable = np.zeros(self.size, dtype=bool)
        for column in _STAMPS:
            setattr(self, column, np.zeros(self.size, dtype=np.int64))
        self.pods_changed: Ints
        self.filled: Ints
        #: Plugins' own per-row arrays (rows along the first axis), by a key of theirs: they
        #: follow rows inserted (as zeros) and deleted, like the columns.
        self.extra: dict[Any, npt.NDArray[Any]] = {}
        #: Plugins' own data about the table that is not per row (e.g. ids of label values).
        self.memo: dict[Any, Any] = {}
        self.alloc_cpu: Ints
        self.alloc_memory: Ints
        self.alloc_storage: Ints
        self.alloc_pods: Ints
        self.taint_group: Ints
        self.req_cpu: Ints
        self.req_memory: Ints
        self.req_storage: Ints
        self.pod_count: Ints
        self.score_cpu: Ints
        self.score_memory: Ints
        self.affinity_pods: Ints
        self.anti_affinity_pods: Ints
        self.groups: list[tuple[Taint, ...]] = []
        self._group_ids: dict[tuple[tuple[str, str, str], ...], int] = {}
        self._group_rows: list[int] = []  # rows in each group
        self._live_groups = 0  # groups with rows
        #: How many nodes have each image (upstream's ImageStateSummary.NumNodes).
        self.image_nodes: dict[str, int] = {}
        for i in range(self.size):
            self._fill(i)

    def row(self, name: str) -> int | None:
        i = bisect_left(self._keys, name)
        return i if i < len(self._keys) and self._keys[i] == name else None

    def refresh(self, name: str) -> None:
        """A node's pods changed: reload its usage row."""
        i = self.row(name)
        if i is not None:
            self._load(i)

    def update(self, changed: Iterable[NodeInfo], gone: Iterable[str]) -> None:
        """Nodes came or changed (``changed``, their current NodeInfo) and went (``gone``):
        only their rows are touched, and the order stays name order."""
        drop = sorted(i for name in gone if (i := self.row(name)) is not None)
        for i in drop:
            self._forget(i)
        for i in reversed(drop):
            del self.nodes[i], self._keys[i]
        fresh: list[NodeInfo] = []
        replaced: list[NodeInfo] = []
        for node in changed:
            (fresh if self.row(node.name) is None else replaced).append(node)
        fresh.sort(key=lambda node: node.name)
        at_list = [bisect_left(self._keys, node.name) for node in fresh]
        for at, node in reversed(list(zip(at_list, fresh, strict=True))):
            self.nodes.insert(at, node)
            self._keys.insert(at, node.name)
        # Where each fresh row lands: after the fresh rows before it.
        landed = [at + j for j, at in enumerate(at_list)]
        if drop or fresh:
            self._reshape(drop, at_list, [node.name for node in fresh])
        for node in replaced:
            i = self.row(node.name)
            assert i is not None
            self._forget(i)
            self.nodes[i] = node
            self._fill(i)
        for i in landed:
            self._fill(i)
        if len(self.groups) > 2 * self._live_groups + 8:
            self._compact_groups()

    # ---- rows --------------------------------------------------------------------------------

    def _reshape(self, drop: list[int], insert_at: list[int], names: list[str]) -> None:
        """Every column without the rows ``drop``, then with empty rows (named ``names``)
        before ``insert_at``, positions among the remaining rows; the caller fills them."""
        self.size = len(self.nodes)
        for column in _COLUMNS + _STAMPS:
            setattr(self, column, _reshaped(getattr(self, column), drop, insert_at))
        for key, values in self.extra.items():
            self.extra[key] = _reshaped(values, drop, insert_at)
        kept = np.delete(self.names, drop) if drop else self.names
        self.names = np.insert(kept, insert_at, np.array(names, dtype=object)) if names else kept

    def _fill(self, i: int) -> None:
        """Row ``i`` from its NodeInfo: the node's own columns, then its usage."""
        node = self.nodes[i]
        allocatable = node.allocatable
        self.alloc_cpu[i] = allocatable.get("cpu", 0)
        self.alloc_memory[i] = allocatable.get("memory", 0)
        self.alloc_storage[i] = allocatable.get("ephemeral-storage", 0)
        self.alloc_pods[i] = allocatable.get("pods", 0)
        self.unschedulable[i] = node.unschedulable
        key = tuple((t.key, t.value, t.effect) for t in node.taints)
        group = self._group_ids.get(key)
        if group is None:
            group = self._group_ids[key] = len(self.groups)
            self.groups.append(node.taints)
            self._group_rows.append(0)
        self._group_rows[group] += 1
        self._live_groups += self._group_rows[group] == 1
        self.taint_group[i] = group
        self.filled[i] = next(_FILLS)
        for image in node.images:
            self.image_nodes[image] = self.image_nodes.get(image, 0) + 1
        self._load(i)

    def _forget(self, i: int) -> None:
        """Undo what :meth:`_fill` counted for row ``i`` (its group, its images)."""
        group = int(self.taint_group[i])
        self._group_rows[group] -= 1
        self._live_groups -= self._group_rows[group] == 0
        for image in self.nodes[i].images:
            left = self.image_nodes[image] - 1
            if left:
                self.image_nodes[image] = left
            else:
                del self.image_nodes[image]

    def _load(self, i: int) -> None:
        node = self.nodes[i]
        self.req_cpu[i] = node.requested.get("cpu", 0)
        self.req_memory[i] = node.requested.get("memory", 0)
        self.req_storage[i] = node.requested.get("ephemeral-storage", 0)
        self.pod_count[i] = len(node.pods)
        self.score_cpu[i] = node.score_requested[0]
        self.score_memory[i] = node.score_requested[1]
        self.affinity_pods[i] = node.affinity_pods
        self.anti_affinity_pods[i] = node.anti_affinity_pods
        self.pods_changed[i] = node.pods_changed

    def _compact_groups(self) -> None:
        """Number the live groups afresh, in order of first use, as a fresh table would."""
        used, first = np.unique(self.taint_group, return_index=True)
        live = used[np.argsort(first)]
        renumber = np.zeros(len(self.groups), dtype=np.int64)
        renumber[live] = np.arange(len(live))
        self.taint_group = renumber[self.taint_group]
        self.groups = [self.groups[int(g)] for g in live]
        self._group_ids = {
            tuple((t.key, t.value, t.effect) for t in taints): g
            for g, taints in enumerate(self.groups)
        }
        self._group_rows = np.bincount(self.taint_group, minlength=len(live)).tolist()
        self._live_groups = len(live)


def _reshaped(values: npt.NDArray[Any], drop: list[int], insert_at: list[int]) -> npt.NDArray[Any]:
    kept = np.delete(values, drop, axis=0) if drop else values
    return np.insert(kept, insert_at, 0, axis=0) if insert_at else kept
