"""NodeAffinity's PreFilter: Skip, node names from matchFields as the only candidates, and
the framework's handling of PreFilter results (intersection, absent nodes' status)."""

from taintplane.scheduler.framework import Code, CycleState, Framework, PreFilterResult
from taintplane.scheduler.nodeinfo import PodInfo
from taintplane.scheduler.plugins.node_affinity import ERR_REASON_CONFLICT, NodeAffinity
from tests.scheduler.builders import make_node, make_pod, taint
from tests.scheduler.test_decisions import Offline

NOT_HELPFUL = "no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."


def by_name(*terms):
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": list(values)}
                            for values in term
                        ]
                    }
                    for term in terms
                ]
            }
        }
    }


def pre_filter(pod):
    return NodeAffinity().pre_filter(CycleState(), PodInfo.of(pod), [])


def test_skips_pods_without_selector_or_required_affinity():
    result = pre_filter(make_pod("p"))
    assert result is not None
    assert not isinstance(result, PreFilterResult)
    assert result.code is Code.SKIP
    assert pre_filter(make_pod("p", node_selector={"zone": "a"})) is None


def test_names_of_each_term_are_intersected_and_terms_united():
    assert pre_filter(make_pod("p", affinity=by_name([["a", "b"], ["b", "c"]]))) == (
        PreFilterResult(frozenset({"b"}))
    )
    assert pre_filter(make_pod("p", affinity=by_name([["a"]], [["c"]]))) == (
        PreFilterResult(frozenset({"a", "c"}))
    )
    conflict = pre_filter(make_pod("p", affinity=by_name([["a"], ["b"]])))
    assert conflict is not None
    assert not isinstance(conflict, PreFilterResult)
    assert (conflict.code, conflict.message) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ERR_REASON_CONFLICT,
    )


def test_a_term_without_names_leaves_every_node():
    affinity = by_name([["a"]])
    terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    terms["nodeSelectorTerms"].append({"matchExpressions": [{"key": "z", "operator": "Exists"}]})
    assert pre_filter(make_pod("p", affinity=affinity)) is None


class Names:
    def __init__(self, name, names):
        self.name, self.names = name, frozenset(names)

    def pre_filter(self, state, pod, nodes):
        return PreFilterResult(self.names)


def test_results_of_several_plugins_intersect():
    state, pod = CycleState(), PodInfo.of(make_pod("p"))
    framework = Framework([Names("B", {"x", "y"}), Names("A", {"y", "z"})], {})
    assert framework.run_pre_filter(state, pod, []) is None
    assert state.node_names == frozenset({"y"})
    disjoint = Framework([Names("B", {"x"}), Names("A", {"z"})], {})
    status = disjoint.run_pre_filter(CycleState(), pod, [])
    assert status is not None
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message == "node(s) didn't satisfy plugin(s) [A B] simultaneously"


def cluster():
    return Offline(
        make_node("a-1", labels={"zone": "a"}),
        make_node("a-2", labels={"zone": "a"}),
        make_node("b-1", labels={"zone": "b"}, taints=[taint("gpu")]),
    )


def test_nodes_not_named_read_as_rejected_by_the_plugin():
    view = cluster()
    assert view.place(make_pod("p", affinity=by_name([["b-1"]]))) == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), "
        "2 node(s) didn't satisfy plugin(s) [NodeAffinity]. " + NOT_HELPFUL
    )
    assert view.place(make_pod("p", affinity=by_name([["nope"]]))) == (
        "0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [NodeAffinity]. " + NOT_HELPFUL
    )
    # DynamicResources' PreFilter never ran: its PostFilter fails reading its state, and
    # upstream prints that error (CycleState's ErrNotFound) as the PostFilter message.
    assert view.place(make_pod("p", affinity=by_name([["a-1"], ["a-2"]]))) == (
        "0/3 nodes are available: pod affinity terms conflict. not found"
    )
    assert view.place(make_pod("p", affinity=by_name([["a-2", "b-1"]]))) == "a-2"


def test_explain_shows_the_nodes_left_out():
    view = cluster()
    decision = view.scheduler.explain(make_pod("p", affinity=by_name([["a-2"]])))
    assert decision.node == "a-2"
    assert decision.feasible == ("a-2",)
    assert decision.diagnosis is not None
    assert decision.diagnosis.absent_status.message == (
        "node(s) didn't satisfy plugin(s) [NodeAffinity]"
    )
    assert decision.diagnosis.absent_status.plugin == "NodeAffinity"
    assert decision.diagnosis.unschedulable_plugins == {"NodeAffinity"}
