"""PodTopologySpread's scores over the node table (spread_vector.py) are the per-node path's
(pre_score, score, normalize), over random clusters changed between decisions; and a
decision redoes only the rows that changed since the last one (issue 16: the system defaults
made every Deployment pod walk every node)."""

from typing import Any

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from taintplane.scheduler.framework import Code, CycleState
from taintplane.scheduler.nodeinfo import PodInfo
from taintplane.scheduler.plugins import pod_topology_spread
from taintplane.scheduler.plugins.pod_topology_spread import ALL_NODES_KEY, PodTopologySpread
from taintplane.scheduler.table import TABLE_KEY
from tests.scheduler.builders import make_node, make_pod, taint
from tests.scheduler.test_decisions import Offline

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
APPS = ("web", "api", "db")
NAMESPACES = ("default", "other")


def replica_set(namespace: str, app: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": app, "namespace": namespace},
        "spec": {"selector": {"matchLabels": {"app": app}}},
    }


def node(name: str, zone: str | None, host: str | None, tainted: bool, ssd: bool) -> dict[str, Any]:
    made = make_node(name, taints=[taint("dedicated")] if tainted else None)
    labels = made["metadata"]["labels"]
    del labels[HOST]
    if host is not None:
        labels[HOST] = host
    if zone is not None:
        labels[ZONE] = zone
    if ssd:
        labels["disk"] = "ssd"
    return made


def pod(name: str, namespace: str, app: str, node_name: str = "", **extra: Any) -> dict[str, Any]:
    made = make_pod(name, namespace=namespace, node_name=node_name)
    made["metadata"]["labels"] = {"app": app}
    made["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": app, "uid": "u", "controller": True}
    ]
    if extra.pop("terminating", False):
        made["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    made["spec"].update(extra)
    return made


nodes_st = st.builds(
    node,
    name=st.sampled_from([f"n{i}" for i in range(10)]),
    zone=st.sampled_from([None, "a", "b", "c", ""]),
    host=st.sampled_from([None, "own", "shared"]),
    tainted=st.booleans(),
    ssd=st.booleans(),
)


def constraint(
    key: str, skew: int, honor_taints: bool, ignore_affinity: bool, app: str
) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "maxSkew": skew,
        "topologyKey": key,
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": app}},
    }
    if honor_taints:
        raw["nodeTaintsPolicy"] = "Honor"
    if ignore_affinity:
        raw["nodeAffinityPolicy"] = "Ignore"
    return raw


constraints_st = st.lists(
    st.builds(
        constraint,
        key=st.sampled_from([ZONE, HOST, "disk"]),
        skew=st.integers(1, 5),
        honor_taints=st.booleans(),
        ignore_affinity=st.booleans(),
        app=st.sampled_from(APPS),
    ),
    max_size=2,
)


def asker_pod(namespace: str, app: str, own: list[dict[str, Any]], ssd: bool) -> dict[str, Any]:
    extra: dict[str, Any] = {"topologySpreadConstraints": own} if own else {}
    if ssd:
        extra["nodeSelector"] = {"disk": "ssd"}
    return pod("asker", namespace, app, **extra)


asker_st = st.builds(
    asker_pod,
    namespace=st.sampled_from(NAMESPACES),
    app=st.sampled_from(APPS),
    own=constraints_st,
    ssd=st.booleans(),
)

node_step_st = st.tuples(st.just("node"), nodes_st)
pod_step_st = st.tuples(
    st.just("pod"),
    st.integers(0, 30),
    st.sampled_from(NAMESPACES),
    st.sampled_from(APPS),
    st.integers(0, 9),
    st.booleans(),
)
step_st = st.one_of(
    node_step_st,
    st.tuples(st.just("node-gone"), st.integers(0, 9)),
    pod_step_st,
    st.tuples(st.just("pod-gone"), st.integers(0, 30)),
    st.tuples(st.just("decide"), asker_st, st.lists(st.integers(0, 9), max_size=10)),
)


def plugin_of(view: Offline) -> PodTopologySpread:
    return next(p for p in view.scheduler.framework.plugins if isinstance(p, PodTopologySpread))


def compare(view: Offline, asker: dict[str, Any], picks: list[int]) -> None:
    """Both paths over the same feasible rows (any rows: neither path assumes the filters)."""
    table = view.scheduler.placement.table()
    if not table.size:
        return
    rows = np.array(sorted({p % table.size for p in picks} or {0}), dtype=np.int64)
    info = PodInfo.of(asker)
    spread = plugin_of(view)
    state = CycleState()
    state.data[ALL_NODES_KEY] = table.nodes
    state.data[TABLE_KEY] = table
    feasible = [table.nodes[int(i)] for i in rows]
    status = spread.pre_score(state, info, feasible)
    if status is not None and status.code is Code.SKIP:
        return
    vector = spread.score_all(state, info, table, rows).tolist()
    scores = {n.name: spread.score(state, info, n) for n in feasible}
    spread.normalize(state, info, scores)
    assert vector == [scores[n.name] for n in feasible]


def run(steps: list[tuple[Any, ...]], asker: dict[str, Any], picks: list[int]) -> None:
    view = Offline(seed=1)
    view.scheduler.spread_listers.replica_sets = {
        f"{ns}/{app}": replica_set(ns, app) for ns in NAMESPACES for app in APPS
    }
    nodes: dict[str, dict[str, Any]] = {}
    pods: dict[int, dict[str, Any]] = {}
    for step in steps:
        kind = step[0]
        if kind == "node":
            made = step[1]
            name = made["metadata"]["name"]
            if made["metadata"]["labels"].get(HOST) == "own":
                made["metadata"]["labels"][HOST] = name
            if name in nodes:
                view.scheduler._node_updated(nodes[name], made)
            else:
                view.scheduler._node_added(made)
            nodes[name] = made
        elif kind == "node-gone":
            gone = nodes.pop(f"n{step[1]}", None)
            if gone is not None:
                view.scheduler._node_deleted(gone)
        elif kind == "pod":
            _, number, namespace, app, on, terminating = step
            if number in pods:
                view.scheduler._pod_deleted(pods.pop(number))
            made = pod(f"p{number}", namespace, app, f"n{on}", terminating=terminating)
            view.scheduler._pod_added(made)
            pods[number] = made
        elif kind == "pod-gone":
            if step[1] in pods:
                view.scheduler._pod_deleted(pods.pop(step[1]))
        else:
            compare(view, step[1], step[2])
            continue
        # After every change too, a Deployment pod and the example's own asker scored on
        # every row: the kept arrays are exercised change by change.
        compare(view, pod("asker", "default", "web"), list(range(10)))
        compare(view, asker, picks)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(node_step_st, min_size=2, max_size=10),
    st.lists(pod_step_st, min_size=2, max_size=25),
    st.lists(step_st, max_size=30),
    asker_st,
    st.lists(st.integers(0, 9), min_size=1, max_size=6),
)
@example(  # a feasible node whose taints the pod does not tolerate (nodeTaintsPolicy: Honor)
    # holds no domain of its own: zone a's pods count for no feasible node
    nodes=[
        ("node", node("n0", "a", "own", True, False)),
        ("node", node("n1", "a", "own", False, False)),
        ("node", node("n2", "b", "own", False, False)),
    ],
    pods=[("pod", 0, "default", "web", 1, False)],
    steps=[],
    asker=pod(
        "asker",
        "default",
        "web",
        topologySpreadConstraints=[constraint(ZONE, 1, True, False, "web")],
    ),
    picks=[0, 2],
)
def test_table_scores_equal_the_per_node_scores(
    nodes: list[tuple[Any, ...]],
    pods: list[tuple[Any, ...]],
    steps: list[tuple[Any, ...]],
    asker: dict[str, Any],
    picks: list[int],
) -> None:
    run(nodes + pods + steps, asker, picks)


def test_a_decision_recounts_only_the_rows_whose_pods_changed(monkeypatch: Any) -> None:
    view = Offline(*(node(f"n{i}", "ab"[i % 2], f"n{i}", False, False) for i in range(8)))
    view.scheduler.spread_listers.replica_sets = {"default/web": replica_set("default", "web")}
    view.scheduler._pod_added(pod("p0", "default", "web", "n3"))
    counted: list[str] = []
    original = pod_topology_spread.Constraint.matching

    def counting(self: Any, asker: PodInfo, info: Any) -> int:
        counted.append(info.name)
        return original(self, asker, info)

    monkeypatch.setattr(pod_topology_spread.Constraint, "matching", counting)
    assert view.place(pod("new1", "default", "web")) != "n3"
    assert len(counted) == 8  # the first decision counts every row once
    counted.clear()
    view.scheduler._pod_added(pod("p1", "default", "web", "n5"))
    view.scheduler._pod_added(pod("x", "default", "api", "n6"))
    view.place(pod("new2", "default", "web"))
    assert sorted(counted) == ["n5", "n6"]
    counted.clear()
    view.scheduler._node_updated(
        node("n1", "a", "n1", False, False), node("n1", "b", "n1", False, False)
    )
    view.place(pod("new3", "default", "web"))
    assert counted == ["n1"]  # a new NodeInfo: its row is redone, the others kept
