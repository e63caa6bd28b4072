"""InterPodAffinity's node hint (upstream's isSchedulableAfterNodeChange): a node added or
relabelled wakes a pod InterPodAffinity rejected only if it touches a topology key of the pod's
required terms in a way that can help; the cases of upstream's own table, then the same through
a scheduler on virtual time."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from taintplane.clock import VirtualClock
from taintplane.scheduler.events import ClusterEvent
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names
from taintplane.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from taintplane.scheduler.queue import SchedulingQueue
from taintplane.scheduler.scheduler import Scheduler
from tests.scheduler.builders import make_node, make_pod, taint

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def _node(**labels: str) -> NodeInfo:
    raw = make_node("node-a")
    raw["metadata"]["labels"] = labels
    return NodeInfo.of(raw)


def _wants(kind: str, key: str, **selector: str) -> PodInfo:
    term = {"labelSelector": {"matchLabels": selector or {"service": "db"}}, "topologyKey": key}
    return PodInfo.of(make_pod("p", affinity={kind: {REQUIRED: [term]}}))


AFFINITY, ANTI = "podAffinity", "podAntiAffinity"

# (pod's term kind, its topology key, node before (None: added), node after, queue?)
CASES: list[tuple[str, str, str, dict[str, str] | None, dict[str, str], bool]] = [
    ("affinity: a node added with the key", AFFINITY, "zone", None, {"zone": "z1"}, True),
    ("affinity: a node added without it", AFFINITY, "region", None, {"zone": "z1"}, False),
    ("affinity: another label changes", AFFINITY, "zone", {"aaa": "a"}, {"aaa": "b"}, False),
    (
        "affinity: a label added beside the key",
        AFFINITY,
        "zone",
        {"zone": "z1"},
        {"zone": "z1", "unrelated": "x"},
        False,
    ),
    ("affinity: the key's value changes", AFFINITY, "zone", {"zone": "z1"}, {"zone": "z2"}, True),
    ("affinity: the node gains the key", AFFINITY, "zone", {"aaa": "a"}, {"zone": "z1"}, True),
    ("affinity: the node loses the key", AFFINITY, "zone", {"zone": "z1"}, {"aaa": "a"}, False),
    ("anti: a node added with the key", ANTI, "zone", None, {"zone": "z1"}, True),
    ("anti: a node added without it", ANTI, "zone", None, {}, True),
    (
        "anti: a label added beside the key",
        ANTI,
        "zone",
        {"zone": "z1"},
        {"zone": "z1", "unrelated": "x"},
        False,
    ),
    ("anti: the key's value changes", ANTI, "zone", {"zone": "z1"}, {"zone": "z2"}, True),
    ("anti: the node gains the key", ANTI, "zone", {"aaa": "a"}, {"zone": "z1"}, False),
    ("anti: the node loses the key", ANTI, "zone", {"zone": "z1"}, {"aaa": "a"}, True),
]


@pytest.mark.parametrize(
    ("kind", "key", "before", "after", "queue"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_the_node_hint_as_upstreams_table(
    kind: str, key: str, before: dict[str, str] | None, after: dict[str, str], queue: bool
) -> None:
    event = ClusterEvent.NODE_ADD if before is None else ClusterEvent.NODE_LABEL
    hint = InterPodAffinity().queueing_hints()[event]
    old = None if before is None else _node(**before)
    assert hint(_wants(kind, key), old, _node(**after)) is queue


def test_a_pod_without_required_terms_is_not_helped_by_a_node():
    """Rejected for other pods' anti-affinity only: no term of its own, so no node event."""
    hint = InterPodAffinity().queueing_hints()[ClusterEvent.NODE_ADD]
    assert not hint(PodInfo.of(make_pod("p")), None, _node(zone="z1"))
    preferred = {"weight": 1, "podAffinityTerm": {"topologyKey": "zone", "labelSelector": {}}}
    soft = make_pod("p", affinity={"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred]}})  # fmt: skip
    assert not hint(PodInfo.of(soft), None, _node(zone="z1"))  # preferred terms never filter


def test_affinity_is_read_before_anti_affinity_and_any_term_suffices():
    both = make_pod("p", affinity={
        AFFINITY: {REQUIRED: [{"labelSelector": {}, "topologyKey": "rack"}]},
        ANTI: {REQUIRED: [{"labelSelector": {}, "topologyKey": "zone"}]},
    })  # fmt: skip
    hint = InterPodAffinity().queueing_hints()[ClusterEvent.NODE_LABEL]
    assert hint(PodInfo.of(both), _node(zone="z1"), _node())  # the anti term's key is lost
    assert hint(PodInfo.of(both), _node(), _node(rack="r1"))  # the affinity term's key gained
    assert not hint(PodInfo.of(both), _node(), _node(zone="z1"))


def test_a_wrong_object_is_an_error_and_the_queue_reads_it_as_queue() -> None:
    hint = InterPodAffinity().queueing_hints()[ClusterEvent.NODE_LABEL]
    with pytest.raises(TypeError):
        hint(_wants(AFFINITY, "zone"), "not-a-node", _node())
    queue = SchedulingQueue(VirtualClock(), hints={names.INTER_POD_AFFINITY: {ClusterEvent.NODE_LABEL: hint}})  # fmt: skip

    async def park() -> None:
        queue.add(_wants(AFFINITY, "zone"))
        queue.unschedulable(await queue.pop(), {names.INTER_POD_AFFINITY})

    asyncio.run(park())
    queue.on_event(ClusterEvent.NODE_LABEL, "not-a-node", _node())
    assert queue.pending() == {"backoff": 1}


# ---- through a scheduler on virtual time ---------------------------------------------------


def _db(node: str) -> dict[str, Any]:
    raw = make_pod("db", node_name=node)
    raw["metadata"]["labels"] = {"service": "db"}
    return raw


def test_a_parked_pod_waits_through_irrelevant_node_events_and_moves_on_a_relevant_one():
    async def scenario() -> list[Any]:
        clock = VirtualClock()
        scheduler = Scheduler(client=None, clock=clock, seed=1)  # type: ignore[arg-type]
        store = make_node("store")  # no zone: the db pod there is in no zone
        zoned = make_node("web", labels={"zone": "z1"})
        for raw in (store, zoned):
            scheduler._node_added(raw)
        scheduler._pod_added(_db("store"))
        term = {"labelSelector": {"matchLabels": {"service": "db"}}, "topologyKey": "zone"}
        scheduler._pod_added(make_pod("app", affinity={AFFINITY: {REQUIRED: [term]}}))
        queue = scheduler.queue
        seen: list[Any] = []

        async def attempt() -> str:
            pod = await queue.pop()
            decision = scheduler.decide(pod)
            if not decision.node:
                assert decision.diagnosis is not None
                queue.unschedulable(pod, decision.diagnosis.unschedulable_plugins)
            return decision.node or decision.message

        seen.append(await attempt())
        seen.append(queue.pending())
        # Irrelevant: another label on a node, a node added without the key, a taint.
        relabelled = {**zoned, "metadata": {**zoned["metadata"], "labels": {
            **zoned["metadata"]["labels"], "rack": "r1"}}}  # fmt: skip
        scheduler._node_updated(zoned, relabelled)
        scheduler._node_added(make_node("bare"))
        scheduler._node_updated(store, {**store, "spec": {"taints": [taint("x", "PreferNoSchedule")]}})  # fmt: skip
        seen.append(queue.pending())
        # Relevant: the db pod's node joins zone z1, where "web" is.
        store_zoned = make_node("store", labels={"zone": "z1"})
        scheduler._node_updated(store, store_zoned)
        seen.append(queue.pending())
        await clock.advance(1)
        seen.append(await attempt())
        return seen

    seen = asyncio.run(scenario())
    assert seen[0].startswith("0/2 nodes are available: 2 node(s) didn't match pod affinity rules.")
    assert seen[1:4] == [{"unschedulable": 1}, {"unschedulable": 1}, {"backoff": 1}]
    assert seen[4] in {"store", "web"}
