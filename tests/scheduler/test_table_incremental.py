"""The node table is kept, not rebuilt (upstream's UpdateSnapshot copies only the NodeInfos
that changed), and a PreFilter that names nodes has only those looked at: same decisions as a
table built afresh for every cycle, at a cost that follows what changed."""

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taintplane.api.taints import Taint
from taintplane.clock import VirtualClock
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.scheduler import Scheduler
from taintplane.scheduler.table import _COLUMNS, NodeTable
from tests.scheduler.builders import make_node, make_pod, taint

#: Every column but the taint groups, whose numbers may differ (compared by taints below).
COLUMNS = tuple(column for column in _COLUMNS if column != "taint_group")


def offline(*nodes: dict[str, Any]) -> Scheduler:
    scheduler = Scheduler(client=None, clock=VirtualClock(), seed=7)  # type: ignore[arg-type]
    for node in nodes:
        scheduler._node_added(node)
    return scheduler


def on_node(name: str) -> dict[str, Any]:
    """A DaemonSet pod's affinity: the one node it is for."""
    field = {"key": "metadata.name", "operator": "In", "values": [name]}
    term = {"matchFields": [field]}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def relabelled(node: dict[str, Any], **labels: str) -> dict[str, Any]:
    meta = node["metadata"]
    return {**node, "metadata": {**meta, "labels": {**meta["labels"], **labels}}}


def test_a_node_change_or_a_pod_bound_redoes_only_its_row(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = [make_node(f"node-{i:03d}") for i in range(300)]
    scheduler = offline(*nodes)
    assert scheduler.decide(PodInfo.of(make_pod("first"))).node
    loaded: list[int] = []
    original = NodeTable._load

    def counted(table: NodeTable, i: int) -> None:
        loaded.append(i)
        original(table, i)

    monkeypatch.setattr(NodeTable, "_load", counted)

    scheduler._node_updated(nodes[42], relabelled(nodes[42], disk="ssd"))
    decision = scheduler.decide(PodInfo.of(make_pod("ssd", node_selector={"disk": "ssd"})))
    assert (decision.node, loaded) == ("node-042", [42])

    loaded.clear()
    scheduler._pod_added(make_pod("bound", node_name="node-007", requests={"cpu": "1"}))
    scheduler._node_deleted(nodes[0])
    scheduler._node_added(make_node("node-000a"))
    assert scheduler.decide(PodInfo.of(make_pod("next"))).node
    # node-000a took node-000's row 0; node-007 reloaded its usage.
    assert sorted(loaded) == [0, 7]
    assert [n.name for n in scheduler.placement.node_order()][:2] == ["node-000a", "node-001"]


class CountingNodeInfo(NodeInfo):
    """A NodeInfo that counts how often its name is read (a pass over the nodes reads each)."""

    reads = 0

    @property
    def name(self) -> str:
        CountingNodeInfo.reads += 1
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = value


def test_nodes_named_by_prefilter_are_the_only_ones_looked_at() -> None:
    scheduler = offline()
    for i in range(2000):
        info = NodeInfo.of(make_node(f"node-{i:04d}"))
        scheduler.nodes[info.name] = CountingNodeInfo(**vars(info))
    scheduler.placement.nodes_changed()
    scheduler.placement.table()
    CountingNodeInfo.reads = 0
    daemon = PodInfo.of(make_pod("daemon", affinity=on_node("node-1234")))
    assert scheduler.decide(daemon).node == "node-1234"
    assert CountingNodeInfo.reads < 20


def test_narrowed_failure_counts_every_node_and_rotates_among_the_candidates() -> None:
    """numAllNodes is every node; the start index moves by the nodes processed, modulo all."""
    nodes = [make_node(f"n{i}", taints=[taint("t")] if i in (3, 5) else None) for i in range(8)]
    scheduler = offline(*nodes)
    affinity = on_node("n3")
    affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][
        0
    ]["matchFields"][0]["values"] = ["n3", "n5", "ghost"]
    decision = scheduler.decide(PodInfo.of(make_pod("p", affinity=affinity)))
    assert decision.message.startswith(
        "0/8 nodes are available: 2 node(s) had untolerated taint(s), "
        "6 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )
    assert scheduler.placement._next_start == 2


# ---- differential: the kept table against one built afresh ----------------------------------

NAMES = [f"n{i}" for i in range(8)]
TAINTS = [
    None,
    [taint("dedicated", value="a")],
    [taint("spot", "PreferNoSchedule")],
    [{"key": "gone", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}],
    [{"key": "gone", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:05Z"}],
]


@st.composite
def nodes(draw: st.DrawFn) -> dict[str, Any]:
    node = make_node(
        draw(st.sampled_from(NAMES)),
        taints=draw(st.sampled_from(TAINTS)),
        labels={"zone": draw(st.sampled_from("ab"))},
        cpu=draw(st.sampled_from(["1", "2", "4"])),
        pods=draw(st.sampled_from(["2", "110"])),
        unschedulable=draw(st.booleans()),
    )
    images = draw(st.lists(st.sampled_from(["img:1", "img:2", "img:3"]), unique=True))
    node["status"]["images"] = [{"names": [i], "sizeBytes": 300 * 2**20} for i in images]
    return node


@st.composite
def pods(draw: st.DrawFn, bound: bool) -> dict[str, Any]:
    kind = draw(st.sampled_from(["plain", "tolerating", "zone", "anti", "daemon", "ports"]))
    extra: dict[str, Any] = {}
    if kind == "tolerating":
        extra["tolerations"] = [{"operator": "Exists"}]
    elif kind == "zone":
        extra["node_selector"] = {"zone": draw(st.sampled_from("ab"))}
    elif kind == "anti":
        term = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}
        extra["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        }
    elif kind == "daemon":
        extra["affinity"] = on_node(draw(st.sampled_from(NAMES)))
    elif kind == "ports":
        extra["containers"] = [
            {"name": "c", "image": "img:1", "ports": [{"containerPort": 80, "hostPort": 8080}]}
        ]
    pod = make_pod(
        f"p{draw(st.integers(0, 9))}",
        requests={"cpu": draw(st.sampled_from(["100m", "900m"]))},
        node_name=draw(st.sampled_from(NAMES)) if bound else "",
        **extra,
    )
    pod["metadata"]["labels"] = {"app": "x"}
    return pod


OPS = st.one_of(
    st.tuples(st.just("node"), nodes()),
    st.tuples(st.just("delete node"), st.sampled_from(NAMES)),
    st.tuples(st.just("bind"), pods(bound=True)),
    st.tuples(st.just("delete pod"), pods(bound=True)),
    st.tuples(st.just("decide"), pods(bound=False)),
)


def apply(scheduler: Scheduler, op: str, value: Any, seen: dict[str, dict[str, Any]]) -> None:
    if op == "node":
        name = value["metadata"]["name"]
        if name in seen:
            scheduler._node_updated(seen[name], value)
        else:
            scheduler._node_added(value)
    elif op == "delete node":
        if value in seen:
            scheduler._node_deleted(seen[value])
    elif op == "bind":
        scheduler._pod_updated(value, value) if value["metadata"]["name"] in {
            key.split("/")[1] for key in scheduler._placed
        } else scheduler._pod_added(value)
    elif op == "delete pod":
        scheduler._pod_deleted(value)


def bare(taints: tuple[Taint, ...]) -> list[tuple[str, str, str]]:
    return [(t.key, t.value, t.effect) for t in taints]


def same_table(kept: NodeTable, fresh: NodeTable) -> None:
    assert [n.name for n in kept.nodes] == [n.name for n in fresh.nodes]
    assert list(kept.names) == list(fresh.names)
    for column in COLUMNS:
        assert np.array_equal(getattr(kept, column), getattr(fresh, column)), column
    # Group numbers may differ, and so may the timeAdded of a group's taints (those of its
    # first node), which no toleration reads; each row's taints may not.
    rows = [bare(node.taints) for node in fresh.nodes]
    assert [bare(kept.groups[g]) for g in kept.taint_group] == rows
    assert [bare(fresh.groups[g]) for g in fresh.taint_group] == rows
    assert kept.image_nodes == fresh.image_nodes
    assert len(kept.groups) <= 2 * len(fresh.groups) + 8


@settings(max_examples=300, deadline=None)
@given(st.lists(OPS, max_size=40), st.booleans())
def test_kept_table_decides_as_a_table_built_afresh(ops: list[tuple[str, Any]], warm: bool) -> None:
    kept, fresh = offline(), offline()
    if warm:
        kept.placement.table()
    seen: dict[str, dict[str, Any]] = {}
    for op, value in ops:
        for scheduler in (kept, fresh):
            apply(scheduler, op, value, seen)
        if op == "node":
            seen[value["metadata"]["name"]] = value
        elif op == "delete node":
            seen.pop(value, None)
        fresh.placement.nodes_changed()  # every cycle on a table built from scratch
        if op == "decide":
            pod = PodInfo.of(value)
            a, b = kept.decide(pod), fresh.decide(pod)
            assert (a.node, a.message, a.nominated) == (b.node, b.message, b.nominated)
        same_table(kept.placement.table(), fresh.placement.table())


def test_taint_groups_no_row_uses_are_dropped() -> None:
    scheduler = offline(*(make_node(n) for n in NAMES[:3]))
    table = scheduler.placement.table()
    for round_ in range(20):
        for name in NAMES[:3]:
            old = scheduler.nodes[name].node
            new = make_node(name, taints=[taint(f"k{round_}-{name}")])
            scheduler._node_updated(old, new)
        table = scheduler.placement.table()
        assert len(table.groups) <= 2 * 3 + 8
        same_table(table, NodeTable(table.nodes))
    tolerating = make_pod("t", tolerations=[{"key": "k19-n1", "operator": "Exists"}])
    assert scheduler.decide(PodInfo.of(tolerating)).node == "n1"


def test_taints_differing_only_in_time_added_share_a_group() -> None:
    """A zone's nodes tainted one by one NoExecute: one group, not one per node."""
    outage = [
        make_node(
            n,
            taints=[
                {"key": "outage", "effect": "NoExecute", "timeAdded": f"2026-01-01T00:00:0{i}Z"}
            ],
        )
        for i, n in enumerate(NAMES[:5])
    ]
    scheduler = offline(*outage, make_node("spare"))
    table = scheduler.placement.table()
    assert len(table.groups) == 2
    tolerating = make_pod("t", tolerations=[{"key": "outage", "operator": "Exists"}])
    decisions = {scheduler.decide(PodInfo.of(tolerating)).node for _ in range(30)}
    assert decisions - {"spare"}
    assert scheduler.decide(PodInfo.of(make_pod("p"))).node == "spare"
