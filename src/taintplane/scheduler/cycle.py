"""One scheduling cycle's decision: the cluster as the cycle sees it (nodes with their pods, in
name order, and the same as a column table) and the choice of a node for one pod on it.

Filters run over the whole table at once when every plugin can (``run_filter_all``), and node
by node otherwise, or when a failure needs its per-node reasons; either way only
``numFeasibleNodesToFind`` feasible nodes are scored, starting where the last cycle stopped,
as upstream. A pod that fits nowhere (a PreFilter rejected it, or every node's filters did)
gets the diagnosis, and the PostFilter plugins run on it in order (DynamicResources, then
DefaultPreemption): their reasons close the message and, if preemption would help, the result
names the node and the victims it would take.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from taintplane.scheduler.diagnosis import NO_NODES_AVAILABLE, Diagnosis, fit_error_message
from taintplane.scheduler.framework import (
    Code,
    CycleState,
    Framework,
    NodeToStatus,
    PostFilterHandle,
    Status,
)
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins.pod_topology_spread import ALL_NODES_KEY
from taintplane.scheduler.table import TABLE_KEY, NodeTable

__all__ = ["Decision", "Placement", "nodes_to_find"]

MIN_FEASIBLE_NODES = 100
MIN_FEASIBLE_PERCENTAGE = 5
NOMINATED_KEY = "nominated-pods"


def nodes_to_find(all_nodes: int, percentage: int = 0) -> int:
    """``numFeasibleNodesToFind``: with the adaptive default, 50 % minus 1 % per 125 nodes,
    never under 5 %, never under 100 nodes."""
    if all_nodes < MIN_FEASIBLE_NODES:
        return all_nodes
    if percentage == 0:
        percentage = max(50 - all_nodes // 125, MIN_FEASIBLE_PERCENTAGE)
    return max(all_nodes * percentage // 100, MIN_FEASIBLE_NODES)


@dataclass
class Decision:
    node: str = ""
    diagnosis: Diagnosis | None = None
    message: str = ""
    scores: dict[str, dict[str, int]] | None = None
    nominated: str = ""  # preemption: the node room is being made on
    victims: Sequence[PodInfo] = ()
    state: CycleState | None = None  # the cycle's state, for Reserve and PreBind
    feasible: tuple[str, ...] = ()  # the nodes that passed the filters (when explaining)
    #: A plugin failed with an Error (not a rejection): the cycle was aborted, and the
    #: message is the error's alone (no diagnosis, no PostFilter), as upstream's.
    error: bool = False
    #: The pod's nominatedNodeName is to be cleared (upstream's ModeOverride with "").
    clear_nomination: bool = False


class Placement:
    """The nodes the scheduler knows and the decision for one pod among them."""

    def __init__(
        self,
        framework: Framework,
        *,
        percentage: int = 0,
        seed: int | None = None,
        budgets: Callable[[], list[dict[str, Any]]] = list,
    ) -> None:
        self.framework = framework
        self.percentage = percentage
        self.nodes: dict[str, NodeInfo] = {}
        #: Pending pods nominated to a node by preemption (key -> (node, pod)): the room made
        #: for them is kept from pods of no higher priority, as upstream's nominator does.
        self.nominated: dict[str, tuple[str, PodInfo]] = {}
        self._budgets = budgets
        self._table: NodeTable | None = None
        # What changed since the table was last brought up to date: nodes that came, went or
        # changed (their rows are redone), nodes whose pods changed (their usage is reloaded).
        self._changed: set[str] = set()
        self._touched: set[str] = set()
        self._next_start = 0
        self._random = random.Random(seed)

    def nodes_changed(self, *names: str) -> None:
        """Nodes came, went or changed: their rows are redone before the next cycle. With no
        names, the table is built again from every node."""
        if not names:
            self._table = None
        elif self._table is not None:
            self._changed.update(names)

    def touched(self, *node_names: str | None) -> None:
        """A node's pods changed: its usage row is reloaded before the next cycle."""
        if self._table is not None:
            self._touched.update(name for name in node_names if name)

    def node_order(self) -> list[NodeInfo]:
        """The nodes of the cycle (those whose Node object is known), in name order: the
        table's own list, kept up to date in place (read it, do not change it)."""
        return self.table().nodes

    def table(self) -> NodeTable:
        if self._table is None:
            self._changed.clear()
            self._touched.clear()
            known = [self.nodes[name] for name in sorted(self.nodes) if self.nodes[name].node]
            self._table = NodeTable(known)
        elif self._changed or self._touched:
            self._catch_up(self._table)
        return self._table

    def _catch_up(self, table: NodeTable) -> None:
        """Only what changed, as upstream's UpdateSnapshot copies only the NodeInfos whose
        generation moved since the last snapshot."""
        changed: list[NodeInfo] = []
        gone: list[str] = []
        for name in self._changed:
            info = self.nodes.get(name)
            if info is not None and info.node:
                changed.append(info)
            else:
                gone.append(name)  # or a placeholder for pods of a node not seen yet
        table.update(changed, gone)
        for name in self._touched - self._changed:
            table.refresh(name)
        self._changed.clear()
        self._touched.clear()

    def decide(self, pod: PodInfo, *, explain: bool = False) -> Decision:
        """The scheduling decision for ``pod`` on the current view (no side effects beyond
        advancing the round-robin start, as upstream)."""
        nodes = self.node_order()
        if not nodes:
            return Decision(
                message=NO_NODES_AVAILABLE, diagnosis=Diagnosis(0), clear_nomination=True
            )
        state = CycleState()
        state.data[ALL_NODES_KEY] = nodes
        state.data[TABLE_KEY] = self.table()
        rejected = self.framework.run_pre_filter(state, pod, nodes)
        if rejected is not None and rejected.code is Code.ERROR:
            return _aborted(rejected)
        if rejected is not None:
            # Every node reads the PreFilter's rejection (SetAbsentNodesStatus), for PostFilter.
            diagnosis = Diagnosis(
                len(nodes),
                absent_status=rejected,
                pre_filter_message=rejected.message,
                pre_filter_plugin=rejected.plugin,
                narrowed_by=frozenset(state.narrowed_by),
            )
            return self._post_filter(state, pod, nodes, diagnosis)
        decision = self._decide_filtered(state, pod, nodes, explain)
        decision.state = state
        return decision

    def _decide_filtered(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], explain: bool
    ) -> Decision:
        reserved = self._nominated_for(pod)
        if reserved:
            state.data[NOMINATED_KEY] = reserved
        elif not explain and state.node_names is None:
            fast = self._decide_in_bulk(state, pod, nodes)
            if fast is not None:
                return fast
        return self._decide_node_by_node(state, pod, nodes, explain)

    def _nominated_for(self, pod: PodInfo) -> dict[str, list[PodInfo]]:
        """Pods nominated to each node with at least ``pod``'s priority (not ``pod`` itself)."""
        reserved: dict[str, list[PodInfo]] = {}
        for key, (node, other) in self.nominated.items():
            if key != pod.key and other.priority >= pod.priority:
                reserved.setdefault(node, []).append(other)
        return reserved

    def _filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        """``RunFilterPluginsWithNominatedPods``: with the node's nominated pods of no lower
        priority counted as if placed, then (if that passed) without them."""
        reserved = state.data.get(NOMINATED_KEY, {}).get(node.name)
        if not reserved:
            return self.framework.run_filter(state, pod, node)
        added = [p for p in reserved if p.key not in node.pods]
        for other in added:
            node.add_pod(other)
        try:
            status = self.framework.run_filter(state, pod, node)
        finally:
            for other in added:
                node.remove_pod(other.key)
        if status is not None:
            return status
        return self.framework.run_filter(state, pod, node)

    def _decide_in_bulk(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
    ) -> Decision | None:
        table = self.table()
        mask = self.framework.run_filter_all(state, pod, table)
        if mask is None:
            return None
        feasible = np.flatnonzero(mask)
        if feasible.size == 0:
            return None  # the failure is diagnosed node by node, for its exact message
        count = len(nodes)
        start = self._next_start % count
        positions = (feasible - start) % count
        order = np.argsort(positions, kind="stable")
        want = nodes_to_find(count, self.percentage)
        chosen = feasible[order[:want]]
        processed = int(positions[order[want - 1]]) + 1 if feasible.size >= want else count
        self._next_start = (start + processed) % count
        if chosen.size == 1:
            return Decision(node=nodes[int(chosen[0])].name)
        self.framework.run_pre_score(state, pod, _Rows(nodes, chosen))
        scores = self.framework.run_score_all(state, pod, table, chosen)
        if scores is None:
            picked = [nodes[int(i)] for i in chosen]
            per_node = self.framework.run_score(state, pod, picked)
            totals = {n.name: sum(plugin[n.name] for plugin in per_node.values()) for n in picked}
            return Decision(node=self._select(totals))
        total = np.zeros(chosen.size, dtype=np.int64)
        for plugin_scores in scores.values():
            total += plugin_scores
        # Among equal totals, one uniformly at random (what upstream's reservoir sampling
        # amounts to), in one draw.
        ties = chosen[total == total.max()]
        pick = ties[self._random.randrange(ties.size)] if ties.size > 1 else ties[0]
        return Decision(node=nodes[int(pick)].name)

    def _decide_node_by_node(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], explain: bool
    ) -> Decision:
        # Only the nodes PreFilter results named (findNodesThatFitPod); the others are absent
        # from the diagnosis and read as rejected by those plugins.
        absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        candidates = nodes
        if state.node_names is not None:
            # Looked up by name, never by a pass over every node (a DaemonSet pod names one
            # node); in the cycle's order. Names of nodes not known are skipped, as upstream's
            # snapshot lookup does.
            table = self.table()
            rows = sorted(i for name in state.node_names if (i := table.row(name)) is not None)
            candidates = [nodes[i] for i in rows]
            plugins = ", ".join(sorted(state.narrowed_by))
            absent = Status.unresolvable(state.narrowed_message()).with_plugin(plugins)
        want = len(candidates) if explain else nodes_to_find(len(candidates), self.percentage)
        feasible: list[NodeInfo] = []
        statuses: dict[str, Status] = {}
        start = 0 if explain or not candidates else self._next_start % len(candidates)
        processed = 0
        for offset in range(len(candidates)):
            node = candidates[(start + offset) % len(candidates)]
            processed += 1
            status = self._filter(state, pod, node)
            if status is not None and status.code is Code.ERROR:
                # findNodesThatPassFilters stops at the first error; the nodes checked
                # before it still move the next cycle's start.
                if not explain:
                    self._next_start = (self._next_start + processed - 1) % len(nodes)
                return _aborted(status)
            if status is None:
                feasible.append(node)
                if len(feasible) >= want:
                    break
            else:
                statuses[node.name] = status
        if not explain:
            self._next_start = (self._next_start + processed) % len(nodes)
        diagnosis = Diagnosis(
            len(nodes), statuses, absent_status=absent, narrowed_by=frozenset(state.narrowed_by)
        )
        if not feasible:
            return self._post_filter(state, pod, nodes, diagnosis)
        if len(feasible) == 1 and not explain:
            return Decision(node=feasible[0].name)
        self.framework.run_pre_score(state, pod, feasible)
        scores = self.framework.run_score(state, pod, feasible)
        totals = {
            node.name: sum(plugin[node.name] for plugin in scores.values()) for node in feasible
        }
        return Decision(
            node=self._select(totals),
            scores=scores,
            diagnosis=diagnosis,
            feasible=tuple(node.name for node in feasible),
        )

    def _post_filter(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], diagnosis: Diagnosis
    ) -> Decision:
        """``RunPostFilterPlugins`` on the failure; its status's message (every plugin's
        reasons, joined) becomes the diagnosis's PostFilter message."""
        result, status = self.framework.run_post_filter(
            state,
            pod,
            NodeToStatus(diagnosis.node_statuses, diagnosis.absent_status),
            PostFilterHandle(nodes, self._filter, self._budgets),
        )
        diagnosis.post_filter_message = status.message
        return Decision(
            diagnosis=diagnosis,
            message=fit_error_message(diagnosis),
            nominated=result.nominated if result else "",
            victims=result.victims if result else (),
            state=state,
            clear_nomination=result is not None and not result.nominated,
        )

    def _select(self, totals: dict[str, int]) -> str:
        """The highest total; among equals, one chosen uniformly at random (what upstream's
        reservoir sampling amounts to, with one draw instead of one per tie)."""
        best = max(totals.values())
        ties = [name for name, total in totals.items() if total == best]
        return ties[self._random.randrange(len(ties))] if len(ties) > 1 else ties[0]


def _aborted(status: Status) -> Decision:
    """A PreFilter or Filter Error: the cycle ends there, with the error as the message
    (schedulingCycle's non-FitError path, which also clears the nominated node)."""
    return Decision(message=status.message, error=True, clear_nomination=True)


class _Rows(Sequence[NodeInfo]):
    """The chosen nodes, without building a list (PreScore rarely looks at them)."""

    def __init__(self, nodes: list[NodeInfo], rows: Any) -> None:
        self._nodes, self._rows = nodes, rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self._nodes[int(i)] for i in self._rows[index]]
        return self._nodes[int(self._rows[index])]
