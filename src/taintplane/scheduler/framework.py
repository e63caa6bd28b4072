"""The scheduling framework's contract: statuses, cycle state and the plugin extension points.

A plugin implements only the extension points it needs; the :class:`Framework` discovers them
and runs them in profile order. Codes mean what they mean upstream, and decide what the queue
does with a pod that failed:

* ``UNSCHEDULABLE`` — the node does not fit now, but removing pods might help (preemption is
  tried); the pod waits for a cluster event that could make it fit.
* ``UNSCHEDULABLE_AND_UNRESOLVABLE`` — nothing short of a change to the node (or the pod) can
  help; preemption is not tried on that node.
* ``ERROR`` — an internal failure; the pod is retried with backoff.
* ``SKIP`` — a PreFilter/PreScore says the plugin has nothing to do for this pod.

Filters return ``None`` for success, as a nil Status is success upstream. A PreFilter may
instead return a :class:`PreFilterResult`: the only nodes worth filtering (the results of all
PreFilters intersect; the other nodes are rejected as UnschedulableAndUnresolvable).
PostFilter plugins (DynamicResources, then DefaultPreemption) run when a PreFilter or every
node's Filter rejected the pod; they return a :class:`Status` always, as upstream's.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.table import NodeTable

__all__ = [
    "MAX_NODE_SCORE",
    "Code",
    "CycleState",
    "FilterPlugin",
    "FilterRun",
    "Framework",
    "NodeToStatus",
    "Plugin",
    "PostFilterHandle",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QueueingHintFn",
    "Registry",
    "ReservePlugin",
    "ScorePlugin",
    "Status",
]

MAX_NODE_SCORE = 100


class Code(enum.Enum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5


@dataclass(frozen=True, slots=True)
class Status:
    code: Code
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @classmethod
    def unschedulable(cls, *reasons: str) -> Status:
        return cls(Code.UNSCHEDULABLE, reasons)

    @classmethod
    def unresolvable(cls, *reasons: str) -> Status:
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    def is_rejected(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def with_plugin(self, name: str) -> Status:
        return Status(self.code, self.reasons, name)


@dataclass
class CycleState:
    """Data plugins share within one scheduling cycle (PreFilter/PreScore write, others read)."""

    data: dict[str, Any] = field(default_factory=dict)
    skip_filter: set[str] = field(default_factory=set)
    skip_score: set[str] = field(default_factory=set)
    #: The merged PreFilterResult: the only candidate nodes (``None``: all nodes).
    node_names: frozenset[str] | None = None
    #: The PreFilter plugins that narrowed ``node_names`` (upstream's pluginsWithNodes).
    narrowed_by: set[str] = field(default_factory=set)

    def narrowed_message(self) -> str:
        """The absent nodes' reason when PreFilters named the only candidates."""
        return f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(self.narrowed_by))}]"


@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """``PreFilterResult``: the names of the only nodes that can fit the pod."""

    node_names: frozenset[str]


class Plugin(Protocol):
    name: str


#: ``QueueingHintFn``: may this event (the object before and after; ``None`` before for an add,
#: after for a delete) make this pod, which the plugin rejected, schedulable? ``True`` is
#: Queue, ``False`` QueueSkip. A plugin's ``queueing_hints()`` maps event kinds to these.
QueueingHintFn = Callable[[PodInfo, Any, Any], bool]


#: Runs the filters for a pod on a node (the scheduler's, which counts nominated pods).
FilterRun = Callable[[CycleState, PodInfo, NodeInfo], "Status | None"]


@dataclass(frozen=True, slots=True)
class NodeToStatus:
    """``NodeToStatusReader``: each rejected node's status; nodes without one read ``absent``
    (after a PreFilter rejection, that rejection for every node)."""

    statuses: Mapping[str, Status]
    absent: Status

    def get(self, node_name: str) -> Status:
        return self.statuses.get(node_name, self.absent)


@dataclass(frozen=True, slots=True)
class PostFilterHandle:
    """What PostFilter plugins read besides the cycle state (upstream's framework handle): the
    nodes of the cycle, the scheduler's filter run, the PodDisruptionBudgets."""

    nodes: Sequence[NodeInfo]
    run_filter: FilterRun
    budgets: Callable[[], list[dict[str, Any]]] = list


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    """``PostFilterResult``: the node nominated for the pod (with the pods to evict there, which
    upstream's DefaultPreemption evicts itself and the scheduler evicts here)."""

    nominated: str = ""
    victims: Sequence[PodInfo] = ()


@runtime_checkable
class PreFilterPlugin(Protocol):
    name: str

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | PreFilterResult | None: ...


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None: ...


@runtime_checkable
class PostFilterPlugin(Protocol):
    name: str

    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus, handle: PostFilterHandle
    ) -> tuple[PostFilterResult | None, Status]: ...


@runtime_checkable
class PreScorePlugin(Protocol):
    name: str

    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None: ...


@runtime_checkable
class ScorePlugin(Protocol):
    name: str
    #: Normalize in reverse: a higher raw score is worse (as TaintToleration's count).
    reverse: bool

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int: ...

    def normalize(self, state: CycleState, pod: PodInfo, scores: dict[str, int]) -> None: ...


@runtime_checkable
class ReservePlugin(Protocol):
    name: str

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


@runtime_checkable
class PreBindPlugin(Protocol):
    name: str

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None: ...


def _no_node_satisfies(plugins: set[str]) -> Status:
    ordered = sorted(plugins)
    if len(ordered) == 1:
        message = f"node(s) didn't satisfy plugin {ordered[0]}"
    else:
        message = f"node(s) didn't satisfy plugin(s) [{' '.join(ordered)}] simultaneously"
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,), ordered[0])


def default_normalize(scores: dict[str, int], *, reverse: bool) -> None:
    """``helper.DefaultNormalizeScore``: scale to 0..100 by the maximum, optionally reversed."""
    top = max(scores.values(), default=0)
    if top == 0:
        if reverse:
            for name in scores:
                scores[name] = MAX_NODE_SCORE
        return
    for name, raw in scores.items():
        scaled = MAX_NODE_SCORE * raw // top
        scores[name] = MAX_NODE_SCORE - scaled if reverse else scaled


def normalize_array(raw: npt.NDArray[np.int64], *, reverse: bool) -> npt.NDArray[np.int64]:
    """:func:`default_normalize` over an array."""
    top = int(raw.max()) if raw.size else 0
    if top == 0:
        return np.full(raw.shape, MAX_NODE_SCORE, dtype=np.int64) if reverse else raw
    scaled = MAX_NODE_SCORE * raw // top
    return MAX_NODE_SCORE - scaled if reverse else scaled


Factory = Callable[[], object]


class Registry:
    """Plugin factories by name; a name can be registered once."""

    def __init__(self) -> None:
        self._factories: dict[str, Factory] = {}

    def register(self, name: str, factory: Factory) -> None:
        if name in self._factories:
            raise ValueError(f"a plugin named {name} already exists")
        self._factories[name] = factory

    def create(self, name: str) -> object:
        return self._factories[name]()

    def names(self) -> list[str]:
        return list(self._factories)


class Framework:
    """Runs one profile's plugins at each extension point, in order."""

    def __init__(self, plugins: Iterable[object], weights: dict[str, int]) -> None:
        self.plugins = list(plugins)
        self.weights = weights
        self.pre_filters = [p for p in self.plugins if isinstance(p, PreFilterPlugin)]
        self.filters = [p for p in self.plugins if isinstance(p, FilterPlugin)]
        self.post_filters = [p for p in self.plugins if isinstance(p, PostFilterPlugin)]
        self.pre_scores = [p for p in self.plugins if isinstance(p, PreScorePlugin)]
        self.scorers = [p for p in self.plugins if isinstance(p, ScorePlugin)]
        self.reservers = [p for p in self.plugins if isinstance(p, ReservePlugin)]
        self.pre_binders = [p for p in self.plugins if isinstance(p, PreBindPlugin)]

    def run_pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        """``RunPreFilterPlugins``: node-name results are intersected into
        ``state.node_names``, and an empty intersection rejects the pod. An
        UnschedulableAndUnresolvable rejection stops the run; an Unschedulable one lets the
        others run too (preemption follows, and needs their state) and the last such is
        returned; any other failure is an Error that aborts the cycle."""
        rejected: Status | None = None
        for plugin in self.pre_filters:
            status = plugin.pre_filter(state, pod, nodes)
            if status is None:
                continue
            if isinstance(status, PreFilterResult):
                state.narrowed_by.add(plugin.name)
                names = status.node_names
                state.node_names = names if state.node_names is None else state.node_names & names
                if not state.node_names:
                    return _no_node_satisfies(state.narrowed_by)
                continue
            if status.code in (Code.SKIP, Code.SUCCESS):
                if status.code is Code.SKIP:
                    state.skip_filter.add(plugin.name)
                continue
            if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return status.with_plugin(plugin.name)
            if status.code is Code.UNSCHEDULABLE:
                rejected = status.with_plugin(plugin.name)
                continue
            message = f'running PreFilter plugin "{plugin.name}": {status.message}'
            return Status(Code.ERROR, (message,), plugin.name)
        return rejected

    def run_filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        """The first rejection, stamped with its plugin; ``None`` when the node fits."""
        for plugin in self.filters:
            if plugin.name in state.skip_filter:
                continue
            status = plugin.filter(state, pod, node)
            if status is not None and status.code is not Code.SUCCESS:
                if not status.is_rejected():
                    status = Status(
                        Code.ERROR, (f'running "{plugin.name}" filter plugin: {status.message}',)
                    )
                return status.with_plugin(plugin.name)
        return None

    def run_filter_all(
        self, state: CycleState, pod: PodInfo, table: NodeTable
    ) -> npt.NDArray[np.bool_] | None:
        """Which nodes pass every filter, at once; ``None`` if some plugin cannot say so in
        bulk for this pod (the caller then asks node by node)."""
        mask = np.ones(table.size, dtype=bool)
        for plugin in self.filters:
            if plugin.name in state.skip_filter:
                continue
            bulk = getattr(plugin, "filter_all", None)
            result = bulk(state, pod, table) if bulk is not None else None
            if result is None:
                return None
            mask &= result
        return mask

    def run_post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus, handle: PostFilterHandle
    ) -> tuple[PostFilterResult | None, Status]:
        """``RunPostFilterPlugins``: each plugin in order until one succeeds (its result wins),
        answers UnschedulableAndUnresolvable or fails; otherwise one Unschedulable status with
        every plugin's reasons in order (its message joins them with ", "), naming the first
        plugin, and the last result any of them gave."""
        result: PostFilterResult | None = None
        reasons: list[str] = []
        rejector = ""
        for plugin in self.post_filters:
            found, status = plugin.post_filter(state, pod, statuses, handle)
            if status.code is Code.SUCCESS:
                return found, status
            if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return found, status.with_plugin(plugin.name)
            if not status.is_rejected():
                return None, Status(Code.ERROR, (status.message,), plugin.name)
            if found is not None:
                result = found
            reasons.extend(status.reasons)
            rejector = rejector or plugin.name
        return result, Status(Code.UNSCHEDULABLE, tuple(reasons), rejector)

    def run_pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> None:
        for pre in self.pre_scores:
            status = pre.pre_score(state, pod, nodes)
            if status is not None and status.code is Code.SKIP:
                state.skip_score.add(pre.name)

    def run_score_all(
        self, state: CycleState, pod: PodInfo, table: NodeTable, rows: npt.NDArray[np.int64]
    ) -> dict[str, npt.NDArray[np.int64]] | None:
        """Weighted, normalized scores for the table rows ``rows``; ``None`` to fall back."""
        result: dict[str, npt.NDArray[np.int64]] = {}
        for scorer in self.scorers:
            if scorer.name in state.skip_score:
                continue
            bulk = getattr(scorer, "score_all", None)
            scores = bulk(state, pod, table, rows) if bulk is not None else None
            if scores is None:
                return None
            result[scorer.name] = scores * self.weights.get(scorer.name, 1)
        return result

    def run_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> dict[str, dict[str, int]]:
        """Weighted, normalized scores per plugin per node (PreScore must have run)."""
        result: dict[str, dict[str, int]] = {}
        for scorer in self.scorers:
            if scorer.name in state.skip_score:
                continue
            scores = {node.name: scorer.score(state, pod, node) for node in nodes}
            scorer.normalize(state, pod, scores)
            weight = self.weights.get(scorer.name, 1)
            result[scorer.name] = {name: value * weight for name, value in scores.items()}
        return result

    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Reserve in order; the first failure is returned (the caller then unreserves)."""
        for plugin in self.reservers:
            status = plugin.reserve(state, pod, node_name)
            if status is not None and status.code is not Code.SUCCESS:
                message = f'running Reserve plugin "{plugin.name}": {status.message}'
                return Status(Code.ERROR, (message,), plugin.name)
        return None

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Unreserve in reverse order, as upstream."""
        for plugin in reversed(self.reservers):
            plugin.unreserve(state, pod, node_name)

    async def run_pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        for plugin in self.pre_binders:
            status = await plugin.pre_bind(state, pod, node_name)
            if status is not None and status.code is not Code.SUCCESS:
                message = f'running PreBind plugin "{plugin.name}": {status.message}'
                return Status(Code.ERROR, (message,), plugin.name)
        return None
