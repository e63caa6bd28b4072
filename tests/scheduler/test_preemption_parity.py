"""DefaultPreemption and failed cycles as kube-scheduler 1.35 has them: who may preempt again,
which node's victims are cheapest, the victims' DisruptionTarget condition, and a plugin
Error aborting the cycle (SchedulerError, backoff) rather than reading as a rejection."""

from typing import Any

from taintplane.client import resource
from taintplane.scheduler.framework import Code, Status
from taintplane.scheduler.nodeinfo import PodInfo
from tests.controllers.harness import Sim, simulate
from tests.scheduler.builders import make_node, make_pod, taint
from tests.scheduler.test_decisions import Offline

PRIORITY_CLASSES = resource("scheduling.k8s.io", "v1", "priorityclasses")
NOT_HELPFUL_3 = (
    "0/3 nodes are available: 3 node(s) had untolerated taint(s). no new claims to "
    "deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
)


def placed(name: str, node: str, priority: int, cpu: str, **status: Any) -> dict[str, Any]:
    pod = make_pod(name, node_name=node, priority=priority, requests={"cpu": cpu})
    if status:
        pod["status"] = status
    return pod


def terminating(pod: dict[str, Any], *, preempted: bool) -> dict[str, Any]:
    pod["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    if preempted:
        condition = {"type": "DisruptionTarget", "status": "True"}
        condition["reason"] = "PreemptionByScheduler"
        pod.setdefault("status", {})["conditions"] = [condition]
    return pod


def nominated(pod: dict[str, Any], node: str) -> dict[str, Any]:
    pod["status"] = {"nominatedNodeName": node}
    return pod


def decide(view: Offline, pod: dict[str, Any]) -> Any:
    return view.scheduler.decide(PodInfo.of(pod))


# ---- pickOneNodeForPreemption ---------------------------------------------------------------


def test_negative_priorities_are_offset_before_summing():
    """Both nodes' highest victim is -100; node-2's two victims sum to less in raw priority
    (-300 < -100), but each is offset by MaxInt32+1 first, so node-1's one victim is cheaper."""
    dedicated = taint("dedicated")
    view = Offline(
        make_node("node-1", cpu="4"),
        make_node("node-2", cpu="4"),
        make_node("node-3", cpu="4", taints=[dedicated]),
        pods=[
            placed("va", "node-1", -100, "4"),
            placed("vb", "node-2", -100, "2"),
            placed("vc", "node-2", -200, "2"),
        ],
    )
    decision = decide(view, make_pod("pre", requests={"cpu": "4"}))
    assert decision.nominated == "node-1"
    assert [v.name for v in decision.victims] == ["va"]


def test_the_node_whose_top_victims_started_latest_wins_a_tie():
    """Same priority, sum and count: the node whose highest-priority victims started latest
    is preferred (the name, here "a" first, only breaks what is still tied)."""
    view = Offline(
        make_node("a", cpu="1"),
        make_node("b", cpu="1"),
        pods=[
            placed("early", "a", 5, "1", startTime="2025-01-01T00:00:00Z"),
            placed("late", "b", 5, "1", startTime="2025-01-01T01:00:00Z"),
        ],
    )
    decision = decide(view, make_pod("big", priority=100, requests={"cpu": "1"}))
    assert decision.nominated == "b"
    assert [v.name for v in decision.victims] == ["late"]


def test_a_victim_not_started_yet_counts_as_starting_now():
    view = Offline(
        make_node("a", cpu="1"),
        make_node("b", cpu="1"),
        pods=[
            placed("started", "a", 5, "1", startTime="2025-01-01T00:00:00Z"),
            placed("pending-start", "b", 5, "1"),
        ],
    )
    assert decide(view, make_pod("big", priority=100, requests={"cpu": "1"})).nominated == "b"


def test_earlier_started_pods_of_equal_priority_are_reprieved_first():
    """MoreImportantPod: among equal priorities the earlier start is more important and is
    given back first; room for one pod means the later one goes."""
    view = Offline(
        make_node("a", cpu="2"),
        pods=[
            placed("z-old", "a", 5, "1", startTime="2025-01-01T00:00:00Z"),
            placed("a-new", "a", 5, "1", startTime="2025-01-01T02:00:00Z"),
        ],
    )
    decision = decide(view, make_pod("one", priority=100, requests={"cpu": "1"}))
    assert [v.name for v in decision.victims] == ["a-new"]


# ---- PodEligibleToPreemptOthers -------------------------------------------------------------


def test_a_victim_terminating_by_preemption_on_the_nominated_node_holds_the_pod_back():
    view = Offline(
        make_node("a", cpu="2"),
        pods=[terminating(placed("t", "a", 1, "1"), preempted=True), placed("v", "a", 1, "1")],
    )
    pod = nominated(make_pod("hi", priority=100, requests={"cpu": "2"}), "a")
    decision = decide(view, pod)
    assert decision.nominated == ""
    assert not decision.clear_nomination  # a refused pod keeps its nomination
    assert decision.message == (
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
        "preemption: not eligible due to a terminating pod on the nominated node."
    )


def test_a_pod_deleted_by_its_user_does_not_hold_the_pod_back():
    """Terminating, but not because the scheduler preempted it: the pod may preempt again
    (terminating pods are still victims, as upstream's NodeInfo holds them)."""
    view = Offline(
        make_node("a", cpu="2"),
        pods=[terminating(placed("t", "a", 1, "1"), preempted=False), placed("v", "a", 1, "1")],
    )
    pod = nominated(make_pod("hi", priority=100, requests={"cpu": "2"}), "a")
    decision = decide(view, pod)
    assert decision.nominated == "a"
    assert sorted(v.name for v in decision.victims) == ["t", "v"]


def test_a_nominated_node_that_now_rejects_the_pod_outright_lets_it_preempt_again():
    """The nominated node got an untolerated taint (UnschedulableAndUnresolvable): the
    terminating victim there no longer holds the pod back; with nowhere else to preempt,
    the nomination is cleared."""
    view = Offline(
        make_node("node-1", cpu="4", taints=[taint("late", value="x")]),
        make_node("node-2", cpu="4", taints=[taint("dedicated")]),
        make_node("node-3", cpu="4", taints=[taint("dedicated")]),
        pods=[terminating(placed("slow", "node-1", 100, "4"), preempted=True)],
    )
    pod = nominated(make_pod("hi", priority=1000, requests={"cpu": "2"}), "node-1")
    decision = decide(view, pod)
    assert decision.message == NOT_HELPFUL_3
    assert decision.nominated == ""
    assert decision.clear_nomination


# ---- through the API, on virtual time -------------------------------------------------------


async def _classes(sim: Sim, **values: int) -> None:
    for name, value in values.items():
        await sim.client.create(PRIORITY_CLASSES, {"metadata": {"name": name}, "value": value})


def _condition(pod: dict[str, Any] | None, type_: str) -> dict[str, Any]:
    assert pod is not None
    return next(c for c in pod["status"]["conditions"] if c["type"] == type_)


def test_a_tainted_nominated_node_clears_the_nomination(tmp_path):
    async def scenario(sim: Sim) -> None:
        await _classes(sim, low=100, high=1000)
        for name in ("node-1", "node-2", "node-3"):
            await sim.create_node(make_node(name, cpu="4"))
        await sim.taint("node-1", None)
        for name in ("node-2", "node-3"):
            await sim.taint(name, [taint("dedicated")])
        slow = make_pod("slow", requests={"cpu": "4"}, priorityClassName="low")
        slow["spec"]["nodeName"] = "node-1"
        slow["metadata"]["annotations"] = {"sim.taintplane.io/shutdown-seconds": "20"}
        await sim.create_pod(slow)
        await sim.create_pod(make_pod("hi", requests={"cpu": "2"}, priorityClassName="high"))
        await sim.advance(1)

        hi = await sim.pod("hi")
        assert hi is not None
        assert hi["status"]["nominatedNodeName"] == "node-1"
        victim = await sim.pod("slow")
        assert victim is not None
        assert victim["metadata"].get("deletionTimestamp")
        target = _condition(victim, "DisruptionTarget")
        assert target == {
            "type": "DisruptionTarget",
            "status": "True",
            "observedGeneration": 1,
            "lastProbeTime": None,
            "lastTransitionTime": target["lastTransitionTime"],
            "reason": "PreemptionByScheduler",
            "message": "default-scheduler: preempting to accommodate a higher priority pod",
        }

        await sim.taint("node-1", [taint("late", value="x")])
        await sim.advance(2)
        hi = await sim.pod("hi")
        assert hi is not None
        assert "nominatedNodeName" not in hi["status"]
        scheduled = _condition(hi, "PodScheduled")
        assert (scheduled["reason"], scheduled["message"]) == ("Unschedulable", NOT_HELPFUL_3)

    simulate(tmp_path, scenario, components=("scheduler",))


class _Broken:
    """A plugin that fails with an Error, as DynamicResources does on a CEL runtime error."""

    name = "Broken"

    def __init__(self) -> None:
        self.failing = True

    def pre_filter(self, *_: Any) -> Status | None:
        return None

    def filter(self, *_: Any) -> Status | None:
        return Status(Code.ERROR, ("boom",)) if self.failing else None


class _BrokenPreFilter(_Broken):
    def pre_filter(self, *_: Any) -> Status | None:
        return Status(Code.ERROR, ("boom",)) if self.failing else None

    def filter(self, *_: Any) -> Status | None:
        return None


def _error_scenario(plugin: _Broken, message: str) -> Any:
    async def scenario(sim: Sim) -> None:
        scheduler = sim.cluster.scheduler
        assert scheduler is not None
        scheduler.framework.pre_filters.append(plugin)
        scheduler.framework.filters.append(plugin)
        await sim.create_node(make_node("n1"))
        await sim.taint("n1", None)
        await sim.create_pod(make_pod("p", requests={"cpu": "1"}))
        pod = await sim.pod("p")
        scheduled = _condition(pod, "PodScheduled")
        assert (scheduled["status"], scheduled["reason"]) == ("False", "SchedulerError")
        assert scheduled["message"] == message
        assert scheduled["observedGeneration"] == 1
        events = await sim.events("FailedScheduling")
        assert [e["message"] for e in events] == [message]

        # No plugin rejected it, so no cluster event is awaited: after its backoff (1 s) the
        # pod is tried again by itself.
        plugin.failing = False
        await sim.advance(0.5)
        pod = await sim.pod("p")
        assert pod is not None
        assert not pod["spec"].get("nodeName")
        await sim.advance(1.5)
        pod = await sim.pod("p")
        assert pod is not None
        assert pod["spec"].get("nodeName") == "n1"

    return scenario


def test_a_filter_error_aborts_the_cycle_with_scheduler_error(tmp_path):
    message = 'running "Broken" filter plugin: boom'
    simulate(tmp_path, _error_scenario(_Broken(), message), components=("scheduler",))


def test_a_pre_filter_error_aborts_the_cycle_with_scheduler_error(tmp_path):
    message = 'running PreFilter plugin "Broken": boom'
    simulate(tmp_path, _error_scenario(_BrokenPreFilter(), message), components=("scheduler",))


def test_a_filter_error_preempts_nobody():
    view = Offline(make_node("a", cpu="1"), pods=[placed("low", "a", 1, "1")])
    broken = _Broken()
    view.scheduler.framework.filters.insert(0, broken)
    decision = decide(view, make_pod("hi", priority=100, requests={"cpu": "1"}))
    assert decision.error
    assert decision.clear_nomination
    assert (decision.message, decision.nominated) == ('running "Broken" filter plugin: boom', "")
