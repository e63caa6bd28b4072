"""Queueing hints (SchedulerQueueingHints): each rejecting plugin says whether one event can make
one parked pod schedulable; the pod moves only if one says Queue.

The first tests drive a scheduler's informer handlers and queue; the rest call each plugin's
hint with the event that queues and one that skips."""

import asyncio
from typing import Any

from taintplane.clock import VirtualClock
from taintplane.scheduler.events import ClusterEvent
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names
from taintplane.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from taintplane.scheduler.plugins.node_affinity import NodeAffinity
from taintplane.scheduler.plugins.node_name import NodeName
from taintplane.scheduler.plugins.node_ports import NodePorts
from taintplane.scheduler.plugins.node_resources import NodeResourcesFit
from taintplane.scheduler.plugins.node_unschedulable import NodeUnschedulable
from taintplane.scheduler.plugins.pod_topology_spread import PodTopologySpread
from taintplane.scheduler.plugins.taint_toleration import TaintToleration
from taintplane.scheduler.scheduler import Scheduler
from tests.scheduler.builders import make_node, make_pod, taint


def node(name: str = "n", **kw: Any) -> NodeInfo:
    return NodeInfo.of(make_node(name, **kw))


def pod(name: str = "p", **kw: Any) -> PodInfo:
    return PodInfo.of(make_pod(name, **kw))


def hint(plugin: Any, event: str) -> Any:
    return plugin.queueing_hints()[event]


# ---- through the scheduler's handlers ------------------------------------------------------


def _parked(scheduler: Scheduler, rejected_by: set[str]) -> None:
    async def park() -> None:
        scheduler._pod_added(make_pod("waiting"))
        scheduler.queue.unschedulable(await scheduler.queue.pop(), rejected_by)

    asyncio.run(park())
    assert scheduler.queue.pending() == {"unschedulable": 1}


def test_a_heartbeat_or_a_taint_still_untolerated_leaves_a_parked_pod_parked():
    scheduler = Scheduler(client=None, clock=VirtualClock(), seed=1)  # type: ignore[arg-type]
    before = make_node("n", taints=[taint("outage")])
    scheduler._node_added(before)
    _parked(scheduler, {names.TAINT_TOLERATION})

    beat = {**before, "status": {**before["status"], "conditions": [{"type": "Ready"}]}}
    scheduler._node_updated(before, beat)  # a status report: no scheduling property changed
    assert scheduler.queue.pending() == {"unschedulable": 1}

    worse = {**beat, "spec": {"taints": [taint("outage"), taint("other", "NoExecute")]}}
    scheduler._node_updated(beat, worse)  # a taint change, still one it does not tolerate
    assert scheduler.queue.pending() == {"unschedulable": 1}

    cleared = {**worse, "spec": {}}
    scheduler._node_updated(worse, cleared)  # now every taint is gone: worth a retry
    assert scheduler.queue.pending() == {"backoff": 1}


def test_another_pending_pods_update_wakes_nobody_but_the_pods_own_toleration_does():
    scheduler = Scheduler(client=None, clock=VirtualClock(), seed=1)  # type: ignore[arg-type]
    scheduler._node_added(make_node("n", taints=[taint("outage")]))
    _parked(scheduler, {names.TAINT_TOLERATION})
    other = make_pod("other")
    scheduler._pod_added(other)
    scheduler._pod_updated(other, make_pod("other", tolerations=[{"operator": "Exists"}]))
    assert scheduler.queue.pending() == {"unschedulable": 1, "active": 1}

    old = make_pod("waiting")
    scheduler._pod_updated(old, {**old, "metadata": {**old["metadata"], "labels": {"a": "b"}}})
    assert scheduler.queue.pending() == {"unschedulable": 1, "active": 1}  # labels: no
    scheduler._pod_updated(old, make_pod("waiting", tolerations=[{"key": "outage"}]))
    assert scheduler.queue.pending() == {"backoff": 1, "active": 1}


def test_a_pod_deletion_requeues_only_for_the_plugins_that_registered_it():
    scheduler = Scheduler(client=None, clock=VirtualClock(), seed=1)  # type: ignore[arg-type]
    scheduler._node_added(make_node("n", cpu="1"))
    placed = make_pod("placed", node_name="n", requests={"cpu": "1"})
    scheduler._pod_added(placed)
    _parked(scheduler, {names.NODE_RESOURCES_FIT})
    scheduler._pod_deleted(placed)
    assert scheduler.queue.pending() == {"backoff": 1}


# ---- each hint ------------------------------------------------------------------------------


def test_taint_toleration_queues_when_the_node_no_longer_has_an_untolerated_taint():
    on_node = hint(TaintToleration(), ClusterEvent.NODE_TAINT)
    p = pod(tolerations=[{"key": "ok", "operator": "Exists"}])
    bad, good = node(taints=[taint("bad")]), node(taints=[taint("ok")])
    assert on_node(p, bad, good)
    assert not on_node(p, good, node(taints=[taint("ok"), taint("bad")]))
    assert not on_node(p, bad, node(taints=[taint("worse")]))
    assert not on_node(p, good, node())  # tolerated before too: nothing new
    assert hint(TaintToleration(), ClusterEvent.NODE_ADD)(p, None, good)
    assert not hint(TaintToleration(), ClusterEvent.NODE_ADD)(p, None, bad)
    # PreferNoSchedule never filters.
    assert on_node(p, bad, node(taints=[taint("soft", "PreferNoSchedule")]))


def test_taint_toleration_queues_for_the_pods_own_toleration_change_only():
    on_pod = hint(TaintToleration(), ClusterEvent.POD_UPDATE)
    p, more = pod(), pod(tolerations=[{"key": "x"}])
    assert on_pod(more, p, more)
    assert not on_pod(more, more, more)
    assert not on_pod(p, pod("q"), pod("q", tolerations=[{"key": "x"}]))


def test_node_unschedulable_queues_when_a_node_becomes_schedulable():
    on_node = hint(NodeUnschedulable(), ClusterEvent.NODE_SCHEDULABLE)
    assert on_node(pod(), node(unschedulable=True), node())
    assert not on_node(pod(), node(), node(unschedulable=True))
    assert not hint(NodeUnschedulable(), ClusterEvent.NODE_TAINT)(
        pod(), node(unschedulable=True), node(unschedulable=True, taints=[taint("x")])
    )
    assert hint(NodeUnschedulable(), ClusterEvent.NODE_ADD)(pod(), None, node())
    assert not hint(NodeUnschedulable(), ClusterEvent.NODE_ADD)(
        pod(), None, node(unschedulable=True)
    )
    on_pod = hint(NodeUnschedulable(), ClusterEvent.POD_UPDATE)
    tolerant = pod(tolerations=[{"key": "node.kubernetes.io/unschedulable"}])
    assert on_pod(tolerant, pod(), tolerant)
    assert not on_pod(pod(), pod(), pod(tolerations=[{"key": "other"}]))


def test_node_name_queues_for_the_named_node():
    on_add = hint(NodeName(), ClusterEvent.NODE_ADD)
    assert on_add(pod(), None, node("a"))
    named = PodInfo.of(make_pod("p", node_name="a"))
    assert on_add(named, None, node("a"))
    assert not on_add(named, None, node("b"))


def test_node_affinity_queues_when_the_node_starts_to_match():
    on_label = hint(NodeAffinity(), ClusterEvent.NODE_LABEL)
    p = pod(node_selector={"disk": "ssd"})
    ssd, hdd = node(labels={"disk": "ssd"}), node(labels={"disk": "hdd"})
    assert on_label(p, hdd, ssd)
    assert not on_label(p, ssd, node(labels={"disk": "ssd", "x": "y"}))  # matched before
    assert not on_label(p, hdd, node(labels={"disk": "nvme"}))
    assert hint(NodeAffinity(), ClusterEvent.NODE_ADD)(p, None, ssd)
    assert not hint(NodeAffinity(), ClusterEvent.NODE_ADD)(p, None, hdd)
    on_pod = hint(NodeAffinity(), ClusterEvent.POD_UPDATE)
    assert on_pod(pod(node_selector={"disk": "hdd"}), p, pod(node_selector={"disk": "hdd"}))
    assert not on_pod(p, p, p)


def test_node_resources_fit_queues_for_room_that_could_hold_the_pod():
    on_node = hint(NodeResourcesFit(), ClusterEvent.NODE_ALLOCATABLE)
    p = pod(requests={"cpu": "2"})
    assert on_node(p, node(cpu="1"), node(cpu="4"))
    assert not on_node(p, node(cpu="1"), node(cpu="1500m"))  # grew, but still too small
    assert not on_node(p, node(cpu="4"), node(cpu="4", memory="16Gi"))  # grew in memory only
    assert on_node(p, node(cpu="4", pods="1"), node(cpu="4", pods="2"))  # more pods allowed
    assert hint(NodeResourcesFit(), ClusterEvent.NODE_ADD)(p, None, node(cpu="2"))
    assert not hint(NodeResourcesFit(), ClusterEvent.NODE_ADD)(p, None, node(cpu="1"))

    on_delete = hint(NodeResourcesFit(), ClusterEvent.ASSIGNED_POD_DELETE)
    assert on_delete(p, PodInfo.of(make_pod("gone", node_name="n")), None)
    assert not on_delete(p, pod("never-placed"), None)
    nominated = make_pod("nominated")
    nominated["status"] = {"nominatedNodeName": "n"}
    assert on_delete(p, PodInfo.of(nominated), None)

    on_pod = hint(NodeResourcesFit(), ClusterEvent.POD_UPDATE)
    smaller = pod(requests={"cpu": "1"})
    assert on_pod(smaller, p, smaller)
    assert not on_pod(p, smaller, p)  # scaled up
    assert not on_pod(p, pod("q", requests={"cpu": "2"}), pod("q"))  # another pod


def test_node_ports_queues_only_when_the_deleted_pod_held_a_wanted_port():
    on_delete = hint(NodePorts(), ClusterEvent.ASSIGNED_POD_DELETE)

    def with_port(name: str, port: int, node_name: str = "n") -> PodInfo:
        raw = make_pod(name, node_name=node_name)
        raw["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": port}]
        return PodInfo.of(raw)

    wants = with_port("p", 8080, node_name="")
    assert on_delete(wants, with_port("gone", 8080), None)
    assert not on_delete(wants, with_port("gone", 9090), None)
    assert not on_delete(wants, PodInfo.of(make_pod("gone", node_name="n")), None)
    assert not on_delete(wants, with_port("unplaced", 8080, node_name=""), None)
    # A node's labels or taints never free a port; a node added may (no hint: Queue).
    hints = NodePorts().queueing_hints()
    assert not hints[ClusterEvent.NODE_TAINT](wants, node(), node(taints=[taint("x")]))
    assert ClusterEvent.NODE_ADD not in hints


def test_inter_pod_affinity_skips_another_pending_pods_update():
    on_pod = hint(InterPodAffinity(), ClusterEvent.POD_UPDATE)
    assert not on_pod(pod(), pod("q"), pod("q", tolerations=[{"key": "x"}]))
    assert on_pod(pod(), pod(), PodInfo.of({**make_pod("p"), "metadata": {
        "name": "p", "namespace": "default", "labels": {"a": "b"}}}))  # fmt: skip


def _labelled(name: str, node_name: str = "n", **labels: str) -> PodInfo:
    raw = make_pod(name, node_name=node_name)
    raw["metadata"]["labels"] = labels
    return PodInfo.of(raw)


def _term(**labels: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}


def test_inter_pod_affinity_queues_for_the_pods_its_terms_wait_for():
    plugin = InterPodAffinity()
    wants_db = pod(affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        _term(app="db")]}})  # fmt: skip
    on_add = hint(plugin, ClusterEvent.ASSIGNED_POD_ADD)
    assert on_add(wants_db, None, _labelled("db", app="db"))
    assert not on_add(wants_db, None, _labelled("web", app="web"))
    assert not on_add(pod(), None, _labelled("db", app="db"))  # no affinity: adds never help

    avoids_db = pod(affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        _term(app="db")]}})  # fmt: skip
    on_delete = hint(plugin, ClusterEvent.ASSIGNED_POD_DELETE)
    assert on_delete(avoids_db, _labelled("db", app="db"), None)
    assert not on_delete(avoids_db, _labelled("web", app="web"), None)
    # An existing pod's own anti-affinity may have kept the pod out: its deletion queues if
    # that anti-affinity selects the pod (kubernetes#135325).
    raw = make_pod("loner", node_name="n", affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [_term(app="x")]}})  # fmt: skip
    assert on_delete(_labelled("p", node_name="", app="x"), PodInfo.of(raw), None)
    assert not on_delete(pod(), PodInfo.of(raw), None)


def test_pod_topology_spread_queues_for_pods_its_constraints_count():
    spread = {"maxSkew": 1, "topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "w"}}}
    p = pod(topologySpreadConstraints=[spread])
    on_add = hint(PodTopologySpread(), ClusterEvent.ASSIGNED_POD_ADD)
    on_delete = hint(PodTopologySpread(), ClusterEvent.ASSIGNED_POD_DELETE)
    assert on_add(p, None, _labelled("w", app="w"))
    assert not on_add(p, None, _labelled("x", app="x"))
    assert on_delete(p, _labelled("w", app="w"), None)
    other_ns = make_pod("w", node_name="n", namespace="other")
    other_ns["metadata"]["labels"] = {"app": "w"}
    assert not on_delete(p, PodInfo.of(other_ns), None)
    soft = pod(topologySpreadConstraints=[{**spread, "whenUnsatisfiable": "ScheduleAnyway"}])
    assert not on_add(soft, None, _labelled("w", app="w"))  # only DoNotSchedule filters


def test_pod_topology_spread_skips_nodes_outside_every_domain():
    spread = {"maxSkew": 1, "topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "w"}}}
    p = pod(topologySpreadConstraints=[spread])
    on_label = hint(PodTopologySpread(), ClusterEvent.NODE_LABEL)
    assert on_label(p, node(), node(labels={"zone": "a"}))  # joins a domain
    assert on_label(p, node(labels={"zone": "a"}), node())  # leaves one
    assert not on_label(p, node(), node(labels={"rack": "1"}))
    assert not hint(PodTopologySpread(), ClusterEvent.NODE_ADD)(p, None, node())


def test_an_event_during_the_cycle_counts_only_if_a_hint_says_queue():
    async def scenario() -> list[dict[str, int]]:
        scheduler = Scheduler(client=None, clock=VirtualClock(), seed=1)  # type: ignore[arg-type]
        before = make_node("n", taints=[taint("outage")])
        scheduler._node_added(before)
        for name in ("a", "b", "c"):
            scheduler._pod_added(make_pod(name))
        queue, seen = scheduler.queue, []
        a, b = await queue.pop(), await queue.pop()
        worse = {**before, "spec": {"taints": [taint("outage"), taint("more")]}}
        scheduler._node_updated(before, worse)  # while "a" and "b" are tried: no help
        queue.unschedulable(a, {names.TAINT_TOLERATION})
        queue.unschedulable(b, {names.TAINT_TOLERATION})
        seen.append(queue.pending())
        c = await queue.pop()
        scheduler._node_updated(worse, {**worse, "spec": {}})  # helps all three
        queue.unschedulable(c, {names.TAINT_TOLERATION})  # in flight through it: backoff
        seen.append(queue.pending())
        return seen

    assert asyncio.run(scenario()) == [{"unschedulable": 2, "active": 1}, {"backoff": 3}]
