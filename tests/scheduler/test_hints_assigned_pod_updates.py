"""A placed pod's update (upstream's updateAssignedPodInCache and PodSchedulingPropertiesChange):
relabelled, it raises UpdatePodLabel, which InterPodAffinity and PodTopologySpread register;
its requests scaled down, UpdatePodScaleDown (NodeResourcesFit). Each plugin's hint is upstream
v1.35's isSchedulableAfterPodChange, checked against upstream's own tables, then end to end: a
pod parked by required pod affinity or a DoNotSchedule spread constraint is bound at the
instant a placed pod is relabelled so that it may fit, and an irrelevant relabel leaves it
parked (before, only the five-minute flush retried it)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from taintplane.client import resource
from taintplane.clock import VirtualClock
from taintplane.scheduler.events import ClusterEvent, assigned_pod_update_events
from taintplane.scheduler.nodeinfo import PodInfo
from taintplane.scheduler.plugins import names
from taintplane.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from taintplane.scheduler.plugins.node_resources import NodeResourcesFit
from taintplane.scheduler.plugins.pod_topology_spread import PodTopologySpread
from taintplane.scheduler.queue import INTERESTS
from taintplane.scheduler.scheduler import Scheduler
from taintplane.sim.cluster import in_process_cluster
from tests.controllers.harness import START
from tests.scheduler.builders import make_node, make_pod

NODES = resource("", "v1", "nodes")
PODS = resource("", "v1", "pods")
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def _pod(
    name: str = "other",
    node: str = "",
    labels: dict[str, str] | None = None,
    namespace: str = "default",
    **spec: Any,
) -> PodInfo:
    raw = make_pod(name, node_name=node, namespace=namespace, **spec)
    raw["metadata"]["labels"] = dict(labels or {})
    return PodInfo.of(raw)


def _in(key: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}


def _exists(key: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "Exists"}]}


def _affinity(kind: str, *terms: tuple[dict[str, Any], str]) -> dict[str, Any]:
    required = [{"labelSelector": s, "topologyKey": k} for s, k in terms]
    return {kind: {REQUIRED: required}}


SECURITY = (_in("service", "securityscan", "value2"), "region")
WANTS = _pod("p", affinity=_affinity("podAffinity", SECURITY))
AVOIDS = _pod("p", affinity=_affinity("podAntiAffinity", SECURITY))
WANTS_BOTH = _pod(
    "p",
    affinity=_affinity("podAffinity", (_exists("aaa"), "hostname"), (_exists("bbb"), "hostname")),
)
N = "fake-node"


def _event(pod: PodInfo, old: PodInfo | None, new: PodInfo | None) -> str:
    """Which event the scheduler raises for this change (so which hint answers)."""
    if old is None:
        return ClusterEvent.ASSIGNED_POD_ADD
    if new is None:
        return ClusterEvent.ASSIGNED_POD_DELETE
    return ClusterEvent.POD_UPDATE if new.key == pod.key else ClusterEvent.ASSIGNED_POD_LABEL


# upstream's interpodaffinity Test_isSchedulableAfterPodChange:
# (name, pending pod, old, new, Queue?)
AFFINITY_CASES: list[tuple[str, PodInfo, PodInfo | None, PodInfo | None, bool]] = [
    ("add a pod which matches the pod affinity",
     WANTS, None, _pod(node=N, labels={"service": "securityscan"}), True),
    ("add an un-scheduled pod", WANTS, None, _pod(labels={"service": "securityscan"}), False),
    ("add a pod which doesn't match the pod affinity",
     WANTS, None, _pod(node=N, labels={"aaa": "a"}), False),
    ("update a pod from non-match to match pod affinity", WANTS,
     _pod(node=N, labels={"aaa": "a"}), _pod(node=N, labels={"service": "securityscan"}), True),
    ("the updating pod matches target pod's affinity both before and after label changes", WANTS,
     _pod(node=N, labels={"service": "value2"}), _pod(node=N, labels={"service": "securityscan"}),
     False),
    ("update an un-scheduled pod", WANTS,
     _pod(labels={"aaa": "a"}), _pod(labels={"service": "securityscan"}), False),
    ("update a pod from match to non-match the pod affinity", WANTS,
     _pod(node=N, labels={"service": "securityscan"}), _pod(node=N, labels={"aaa": "a"}), False),
    ("update a pod from match to non-match pod's affinity - multiple terms case", WANTS_BOTH,
     _pod(node=N, labels={"aaa": "a"}), _pod(node=N, labels={"service": "securityscan"}), False),
    ("update a pod from non-match to match pod's affinity - multiple terms case", WANTS_BOTH,
     _pod(node=N, labels={"aaa": "a"}), _pod(node=N, labels={"aaa": "", "bbb": ""}), True),
    ("updated pod is the target pod", _pod("p", labels={"foo": "baz"}),
     _pod("p", labels={"foo": "bar"}), _pod("p", labels={"foo": "baz"}), True),
    ("modify pod label to change it from satisfying pod anti-affinity to not satisfying anti-affinity",
     AVOIDS, _pod(node=N, labels={"service": "securityscan"}),
     _pod(node=N, labels={"service": "aaaa"}), True),
    ("modify pod label to change it from not satisfying pod anti-affinity to satisfying anti-affinity",
     AVOIDS, _pod(node=N, labels={"service": "bbb"}),
     _pod(node=N, labels={"service": "securityscan"}), False),
    ("delete a pod which doesn't match pod's anti-affinity",
     AVOIDS, _pod(node=N, labels={"aaa": "a"}), None, False),
    ("delete a pod which matches pod's anti-affinity",
     AVOIDS, _pod(node=N, labels={"service": "securityscan"}), None, True),
    ("delete a pod with anti-affinity that matches pending pod",
     _pod("p", labels={"service": "securityscan"}),
     _pod(node=N, affinity=_affinity("podAntiAffinity", SECURITY)), None, True),
    ("delete a pod with anti-affinity that doesn't match pending pod",
     _pod("p", labels={"service": "foo"}),
     _pod(node=N, affinity=_affinity("podAntiAffinity", SECURITY)), None, False),
    ("delete a pod which doesn't match pending pod's anti-affinity and has anti-affinity that "
     "doesn't match pending pod",
     _pod("p", labels={"service": "foo"}, affinity=_affinity("podAntiAffinity", SECURITY)),
     _pod(node=N, labels={"service": "foo"}, affinity=_affinity("podAntiAffinity", SECURITY)),
     None, False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("pod", "old", "new", "queue"),
    [case[1:] for case in AFFINITY_CASES],
    ids=[case[0] for case in AFFINITY_CASES],
)
def test_inter_pod_affinity_pod_hint_as_upstreams_table(
    pod: PodInfo, old: PodInfo | None, new: PodInfo | None, queue: bool
) -> None:
    hint = InterPodAffinity().queueing_hints()[_event(pod, old, new)]
    assert hint(pod, old, new) is queue


def test_anti_affinity_one_term_matching_is_enough():
    """Upstream 1.35 reads the pending pod's anti-affinity as "all terms" (kubernetes#139161
    fixed it): here a placed pod that stops matching one of two terms queues."""
    two = _pod("p", affinity=_affinity(
        "podAntiAffinity", (_exists("aaa"), "zone"), (_exists("bbb"), "zone")))  # fmt: skip
    hint = InterPodAffinity().queueing_hints()[ClusterEvent.ASSIGNED_POD_LABEL]
    assert hint(two, _pod(node=N, labels={"aaa": ""}), _pod(node=N, labels={"ccc": ""}))
    assert not hint(two, _pod(node=N, labels={"aaa": ""}), _pod(node=N, labels={"bbb": ""}))


def test_affinity_terms_read_their_namespaces():
    """A term selects pods in its own namespaces (the pending pod's by default), or those its
    namespaceSelector selects, read from the namespaces' labels."""
    labels = {"team-a": {"team": "a"}}
    plugin = InterPodAffinity(lambda ns: labels.get(ns, {}))
    hint = plugin.queueing_hints()[ClusterEvent.ASSIGNED_POD_LABEL]
    ns = "team-a"
    assert not hint(WANTS, _pod(node=N, namespace=ns), _pod(node=N, labels={"service": "value2"}, namespace=ns))  # fmt: skip
    by_label = {"labelSelector": _in("service", "value2"), "topologyKey": "region",
                "namespaceSelector": {"matchLabels": {"team": "a"}}}  # fmt: skip
    wants_team_a = _pod("p", affinity={"podAffinity": {REQUIRED: [by_label]}})
    assert hint(wants_team_a, _pod(node=N, namespace=ns), _pod(node=N, labels={"service": "value2"}, namespace=ns))  # fmt: skip
    assert not hint(wants_team_a, _pod(node=N), _pod(node=N, labels={"service": "value2"}))


SPREAD_FOO = {"maxSkew": 1, "topologyKey": "zone", "labelSelector": _exists("foo")}
SPREAD_BAR = {"maxSkew": 1, "topologyKey": "node", "labelSelector": _exists("bar")}
SPREADS = _pod("p", labels={"foo": ""}, topologySpreadConstraints=[SPREAD_FOO])
SPREADS_TWICE = _pod("p", labels={"foo": ""}, topologySpreadConstraints=[SPREAD_FOO, SPREAD_BAR])

# upstream's podtopologyspread Test_isSchedulableAfterPodChange:
SPREAD_CASES: list[tuple[str, PodInfo, PodInfo | None, PodInfo | None, bool]] = [
    ("add pod with labels match topologySpreadConstraints selector",
     SPREADS, None, _pod(node=N, labels={"foo": ""}), True),
    ("add un-scheduled pod", SPREADS, None, _pod(labels={"foo": ""}), False),
    ("update un-scheduled pod", SPREADS, _pod(labels={"bar": ""}), _pod(labels={"foo": ""}), False),
    ("delete un-scheduled pod", SPREADS, _pod(labels={"foo": ""}), None, False),
    ("add pod with different namespace",
     SPREADS, None, _pod(node=N, namespace="fake-namespace", labels={"foo": ""}), False),
    ("add pod with labels don't match topologySpreadConstraints selector",
     SPREADS, None, _pod(node=N, labels={"bar": ""}), False),
    ("delete pod with labels that match topologySpreadConstraints selector",
     SPREADS, _pod(node=N, labels={"foo": ""}), None, True),
    ("delete pod with labels that don't match topologySpreadConstraints selector",
     SPREADS, _pod(node=N, labels={"bar": ""}), None, False),
    ("update pod's non-related label", SPREADS,
     _pod(node=N, labels={"foo": "", "bar": "bar1"}), _pod(node=N, labels={"foo": "", "bar": "bar2"}),
     False),
    ("add pod's label that matches topologySpreadConstraints selector",
     SPREADS, _pod(node=N), _pod(node=N, labels={"foo": ""}), True),
    ("delete pod label that matches topologySpreadConstraints selector",
     SPREADS, _pod(node=N, labels={"foo": ""}), _pod(node=N), True),
    ("change pod's label that matches topologySpreadConstraints selector",
     SPREADS, _pod(node=N, labels={"foo": "foo1"}), _pod(node=N, labels={"foo": "foo2"}), False),
    ("add pod's label that matches topologySpreadConstraints selector with multi constraints",
     SPREADS_TWICE, _pod(node=N, labels={"foo": ""}), _pod(node=N, labels={"foo": "", "bar": "bar2"}),
     True),
    ("change pod's label that doesn't match topologySpreadConstraints selector with multi constraints",
     SPREADS_TWICE, _pod(node=N, labels={"foo": ""}), _pod(node=N, labels={"foo": "", "baz": ""}),
     False),
    ("change pod's label that match topologySpreadConstraints selector with multi constraints",
     SPREADS_TWICE, _pod(node=N, labels={"foo": "", "bar": ""}),
     _pod(node=N, labels={"foo": "", "bar": "bar2"}), False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("pod", "old", "new", "queue"),
    [case[1:] for case in SPREAD_CASES],
    ids=[case[0] for case in SPREAD_CASES],
)
def test_pod_topology_spread_pod_hint_as_upstreams_table(
    pod: PodInfo, old: PodInfo | None, new: PodInfo | None, queue: bool
) -> None:
    hint = PodTopologySpread().queueing_hints()[_event(pod, old, new)]
    assert hint(pod, old, new) is queue


def test_pod_topology_spread_own_update():
    """The pending pod's own update: a new toleration helps only under nodeTaintsPolicy Honor;
    a label change only if it flips a constraint's selector on the pod itself."""
    hint = PodTopologySpread().queueing_hints()[ClusterEvent.POD_UPDATE]
    honour = {**SPREAD_FOO, "nodeTaintsPolicy": "Honor"}
    tolerates = [{"key": "x", "operator": "Exists"}]
    for constraint, queue in ((SPREAD_FOO, False), (honour, True)):
        old = _pod("p", labels={"foo": ""}, topologySpreadConstraints=[constraint])
        new = _pod("p", labels={"foo": ""}, topologySpreadConstraints=[constraint], tolerations=tolerates)  # fmt: skip
        assert hint(new, old, new) is queue
    assert hint(SPREADS, _pod("p"), SPREADS)  # it now carries foo
    assert not hint(SPREADS, _pod("p", labels={"foo": "", "x": "1"}), SPREADS)
    assert not hint(SPREADS, SPREADS, _pod("q", labels={"bar": ""}))  # another pending pod


def test_inter_pod_affinity_own_update_queues_only_for_its_labels():
    hint = InterPodAffinity().queueing_hints()[ClusterEvent.POD_UPDATE]
    tolerating = _pod("p", affinity=WANTS.pod["spec"]["affinity"], tolerations=[{"key": "x"}])
    assert not hint(tolerating, WANTS, tolerating)
    relabelled = _pod("p", labels={"service": "value2"}, affinity=WANTS.pod["spec"]["affinity"])
    assert hint(relabelled, WANTS, relabelled)


def test_the_events_of_a_placed_pods_update():
    """extractPodLabelsChange and extractPodScaleDown: nothing else a placed pod changes
    raises an event here."""
    base = _pod(node=N, labels={"a": "1"}, requests={"cpu": "2", "memory": "1Gi"})
    relabelled = _pod(node=N, labels={"a": "2"}, requests={"cpu": "2", "memory": "1Gi"})
    smaller = _pod(node=N, labels={"a": "1"}, requests={"cpu": "1", "memory": "1Gi"})
    bigger = _pod(node=N, labels={"a": "1"}, requests={"cpu": "3", "memory": "1Gi"})
    dropped = _pod(node=N, labels={"a": "2"}, requests={"cpu": "2"})
    annotated = _pod(node=N, labels={"a": "1"}, requests={"cpu": "2", "memory": "1Gi"})
    annotated.pod["metadata"]["annotations"] = {"x": "y"}
    assert assigned_pod_update_events(base, relabelled) == [ClusterEvent.ASSIGNED_POD_LABEL]
    assert assigned_pod_update_events(base, smaller) == [ClusterEvent.ASSIGNED_POD_SCALE_DOWN]
    assert assigned_pod_update_events(base, dropped) == [
        ClusterEvent.ASSIGNED_POD_LABEL,
        ClusterEvent.ASSIGNED_POD_SCALE_DOWN,
    ]
    assert assigned_pod_update_events(base, bigger) == []
    assert assigned_pod_update_events(base, annotated) == []
    registered = {p for p, events in INTERESTS.items() if ClusterEvent.ASSIGNED_POD_LABEL in events}
    assert registered == {names.INTER_POD_AFFINITY, names.POD_TOPOLOGY_SPREAD}
    scale_down = {p for p, e in INTERESTS.items() if ClusterEvent.ASSIGNED_POD_SCALE_DOWN in e}
    assert scale_down == {names.NODE_RESOURCES_FIT}


def test_node_resources_fit_scale_down_hint():
    """isSchedulableAfterPodScaleDown: a placed pod asking for less of what the pod asks."""
    hint = NodeResourcesFit().queueing_hints()[ClusterEvent.ASSIGNED_POD_SCALE_DOWN]
    wants_cpu = _pod("p", requests={"cpu": "1"})
    before = _pod(node=N, requests={"cpu": "2", "memory": "2Gi"})
    assert hint(wants_cpu, before, _pod(node=N, requests={"cpu": "1", "memory": "2Gi"}))
    assert not hint(wants_cpu, before, _pod(node=N, requests={"cpu": "2", "memory": "1Gi"}))
    assert not hint(wants_cpu, _pod(requests={"cpu": "2"}), _pod(requests={"cpu": "1"}))


# ---- end to end, on virtual time -----------------------------------------------------------


async def _ready_nodes(client: Any, *names_: str) -> None:
    for name in names_:
        node = make_node(name)
        status = node.pop("status")
        await client.create(NODES, node)
        await client.patch(NODES, name, {"status": status}, subresource="status")
        # No node lifecycle controller here to lift TaintNodesByCondition's taint.
        await client.patch(NODES, name, {"spec": {"taints": None}})


async def _placed(client: Any, name: str, node: str, **labels: str) -> None:
    raw = make_pod(name, node_name=node)
    raw["metadata"]["labels"] = labels
    await client.create(PODS, raw, namespace="default")


async def _relabel(client: Any, name: str, labels: dict[str, str | None]) -> None:
    await client.patch(PODS, name, {"metadata": {"labels": labels}}, namespace="default")


def _scenario(tmp_path: Any, pending: dict[str, Any], placed: tuple[str, str, dict[str, str]],
              irrelevant: dict[str, str | None], relevant: dict[str, str | None]) -> list[Any]:  # fmt: skip
    """Park ``pending``, relabel the placed pod irrelevantly, then relevantly; what the queue
    and the pod look like after each (the clock never moves past the first attempt's
    instant, so only an event can have retried it)."""

    async def run() -> list[Any]:
        clock = VirtualClock(START)
        async with in_process_cluster(tmp_path, clock, components=("scheduler",)) as cluster:
            client, scheduler = cluster.client, cluster.scheduler
            assert client is not None
            assert scheduler is not None
            await _ready_nodes(client, "a-1", "a-2")
            name, node, labels = placed
            await _placed(client, name, node, **labels)
            await clock.advance(0)
            await client.create(PODS, pending, namespace="default")
            await clock.advance(0)
            seen: list[Any] = []
            pod = await client.get(PODS, "p", "default")
            seen.append(pod["status"]["conditions"][0]["message"])
            seen.append(scheduler.queue.pending())
            await _relabel(client, name, irrelevant)
            await clock.advance(0)
            seen.append(scheduler.queue.pending())
            await _relabel(client, name, relevant)
            await clock.advance(0)
            seen.append((await client.get(PODS, "p", "default"))["spec"].get("nodeName"))
            seen.append(clock.now() == START)
            return seen

    return asyncio.run(run())


def test_a_pod_parked_by_pod_affinity_is_bound_when_a_placed_pod_is_relabelled_to_match(
    tmp_path: Any,
) -> None:
    pending = make_pod("p", affinity=_affinity("podAffinity", (
        {"matchLabels": {"app": "db"}}, "kubernetes.io/hostname")))  # fmt: skip
    seen = _scenario(
        tmp_path,
        pending,
        ("cache", "a-2", {"app": "cache"}),
        irrelevant={"tier": "backend"},  # still no app=db pod anywhere
        relevant={"app": "db"},
    )
    assert seen[0].startswith("0/2 nodes are available: 2 node(s) didn't match pod affinity rules")
    assert seen[1:3] == [{"unschedulable": 1}, {"unschedulable": 1}]
    assert seen[3:] == ["a-2", True]


def test_a_pod_parked_by_topology_spread_is_bound_when_a_placed_pod_stops_being_counted(
    tmp_path: Any,
) -> None:
    """maxSkew 1 by hostname, the pod pinned to a-1 (nodeAffinityPolicy Ignore: a-2, empty,
    is still a domain), where one app=w pod already is: skew 2 until it is relabelled."""
    spread = {
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "w"}},
        "nodeAffinityPolicy": "Ignore",
    }
    pending = make_pod(
        "p", node_selector={"kubernetes.io/hostname": "a-1"}, topologySpreadConstraints=[spread]
    )
    pending["metadata"]["labels"] = {"app": "w"}
    seen = _scenario(
        tmp_path,
        pending,
        ("w1", "a-1", {"app": "w"}),
        irrelevant={"tier": "backend"},  # still selected
        relevant={"app": "x"},
    )
    assert "didn't match pod topology spread constraints" in seen[0]
    assert seen[1:3] == [{"unschedulable": 1}, {"unschedulable": 1}]
    assert seen[3:] == ["a-1", True]


def test_the_binding_of_a_pod_this_scheduler_placed_is_an_assigned_pod_add(tmp_path: Any) -> None:
    """Upstream's updatePod sees unassigned -> assigned as AssignedPodAdd even for a pod the
    scheduler assumed (assuming raises nothing): a pod parked waiting for it is bound at once."""

    async def run() -> list[Any]:
        clock = VirtualClock(START)
        async with in_process_cluster(tmp_path, clock, components=("scheduler",)) as cluster:
            client, scheduler = cluster.client, cluster.scheduler
            assert client is not None
            assert scheduler is not None
            await _ready_nodes(client, "a-1", "a-2")
            follower = make_pod("web", affinity=_affinity("podAffinity", (
                {"matchLabels": {"app": "db"}}, "kubernetes.io/hostname")))  # fmt: skip
            await client.create(PODS, follower, namespace="default")
            await clock.advance(0)
            parked = scheduler.queue.pending()
            leader = make_pod("db")
            leader["metadata"]["labels"] = {"app": "db"}
            await client.create(PODS, leader, namespace="default")
            await clock.advance(0)
            found = [(await client.get(PODS, n, "default"))["spec"].get("nodeName") for n in ("db", "web")]  # fmt: skip
            return [parked, found[0] is not None and found[0] == found[1], clock.now() == START]

    assert asyncio.run(run()) == [{"unschedulable": 1}, True, True]


def test_an_assumed_pod_updated_before_its_binding_is_seen_is_not_queued_again() -> None:
    """updatePodInSchedulingQueue skips assumed pods: a relabel while the binding is in flight
    would otherwise schedule the pod a second time."""

    async def run() -> tuple[bool, bool]:
        scheduler = Scheduler(client=None, clock=VirtualClock(START), seed=1)  # type: ignore[arg-type]
        scheduler._node_added(make_node("a-1"))
        raw = make_pod("p")
        scheduler._pod_added(raw)
        pod = await scheduler.queue.pop()
        decision = scheduler.decide(pod)
        assert decision.node == "a-1"
        scheduler._assumed[pod.key] = "a-1"  # what schedule_one does before binding
        scheduler.queue.done(pod.key)
        relabelled = {**raw, "metadata": {**raw["metadata"], "labels": {"app": "x"}}}
        scheduler._pod_updated(raw, relabelled)
        queued_while_assumed = pod.key in scheduler.queue
        bound = {**relabelled, "spec": {**relabelled["spec"], "nodeName": "a-1"}}
        scheduler._pod_updated(relabelled, bound)
        return queued_while_assumed, pod.key in scheduler.queue

    assert asyncio.run(run()) == (False, False)
