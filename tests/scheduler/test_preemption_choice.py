"""Which node and which victims DefaultPreemption picks (on a fixed view, no API)."""

from taintplane.scheduler.nodeinfo import PodInfo
from tests.scheduler.builders import make_node, make_pod
from tests.scheduler.test_decisions import Offline


def placed(name, node, priority, cpu="1"):
    return make_pod(name, node_name=node, priority=priority, requests={"cpu": cpu})


def decide(view, pod):
    return view.scheduler.decide(PodInfo.of(pod))


def test_node_whose_victims_have_the_lowest_top_priority_wins():
    view = Offline(
        make_node("a", cpu="2"),
        make_node("b", cpu="2"),
        pods=[
            placed("a-1", "a", 50),
            placed("a-2", "a", 5),
            placed("b-1", "b", 10),
            placed("b-2", "b", 10),
        ],
    )
    decision = decide(view, make_pod("big", priority=100, requests={"cpu": "2"}))
    assert decision.node == ""
    assert decision.nominated == "b"
    assert sorted(v.name for v in decision.victims) == ["b-1", "b-2"]
    assert decision.message == "0/2 nodes are available: 2 Insufficient cpu."


def test_higher_priority_pods_are_reprieved_when_room_allows():
    view = Offline(
        make_node("a", cpu="3"),
        pods=[placed("keep", "a", 40), placed("go", "a", 10), placed("also-low", "a", 20)],
    )
    decision = decide(view, make_pod("needs-one", priority=100, requests={"cpu": "1"}))
    assert decision.nominated == "a"
    assert [v.name for v in decision.victims] == ["go"]


def test_never_policy_preempts_nobody():
    view = Offline(make_node("a", cpu="1"), pods=[placed("low", "a", 1)])
    pod = make_pod("polite", priority=100, requests={"cpu": "1"}, preemptionPolicy="Never")
    decision = decide(view, pod)
    assert decision.nominated == ""
    assert decision.message == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."
    )


def budget(name, app, allowed, disrupted=()):
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": app}}, "minAvailable": 1},
        "status": {"disruptionsAllowed": allowed, "disruptedPods": dict.fromkeys(disrupted, "")},
    }


def labelled(name, node, priority, app, cpu="1"):
    pod = placed(name, node, priority, cpu)
    pod["metadata"]["labels"] = {"app": app}
    return pod


def test_the_node_whose_victims_violate_fewer_budgets_wins():
    """Node a's victims are cheaper by priority, but evicting them breaks a budget with no
    disruptions left; upstream prefers node b, which breaks none."""
    view = Offline(
        make_node("a", cpu="1"),
        make_node("b", cpu="1"),
        pods=[labelled("a-1", "a", 5, "guarded"), labelled("b-1", "b", 10, "free")],
    )
    view.scheduler.pdb_informer.cache["default/guard"] = budget("guard", "guarded", 0)
    decision = decide(view, make_pod("big", priority=100, requests={"cpu": "1"}))
    assert decision.nominated == "b"
    assert [v.name for v in decision.victims] == ["b-1"]


def test_budget_violating_pods_are_reprieved_first():
    """Either of two pods must go; the one whose budget has no room is given back first, even
    though it has the lower priority."""
    view = Offline(
        make_node("a", cpu="2"),
        pods=[labelled("guarded", "a", 5, "guarded"), labelled("free", "a", 10, "free")],
    )
    view.scheduler.pdb_informer.cache["default/guard"] = budget("guard", "guarded", 0)
    decision = decide(view, make_pod("needs-one", priority=100, requests={"cpu": "1"}))
    assert [v.name for v in decision.victims] == ["free"]


def test_a_pod_the_budget_already_counts_as_disrupted_does_not_violate_it():
    from taintplane.scheduler.preemption import split_by_budget_violation

    pods = [
        PodInfo.of(labelled("gone", "a", 5, "guarded")),
        PodInfo.of(labelled("next", "a", 5, "guarded")),
    ]
    violating, fine = split_by_budget_violation(
        pods, [budget("guard", "guarded", 0, disrupted=("gone",))]
    )
    assert ([p.name for p in violating], [p.name for p in fine]) == (["next"], ["gone"])


def test_room_made_for_a_nominated_pod_is_kept_from_lower_priority_pods():
    view = Offline(make_node("a", cpu="2"), pods=[placed("half", "a", 1)])
    nominated = make_pod("vip", priority=100, requests={"cpu": "1"})
    nominated["status"] = {"nominatedNodeName": "a"}
    view.scheduler._pod_added(nominated)
    low = decide(view, make_pod("low", priority=10, requests={"cpu": "1"}))
    assert low.node == ""
    assert low.message == "0/1 nodes are available: 1 Insufficient cpu."
    # As upstream, preemption counts the nominated pod too: only evicting "half" makes room.
    assert low.nominated == "a"
    assert [v.name for v in low.victims] == ["half"]
    # A pod of higher priority than the nominated one does not yield to it.
    high = decide(view, make_pod("higher", priority=1000, requests={"cpu": "1"}))
    assert high.node == "a"
    # Once bound elsewhere (or gone), the reservation goes too.
    view.scheduler._pod_deleted(nominated)
    assert decide(view, make_pod("low2", priority=10, requests={"cpu": "1"})).node == "a"
