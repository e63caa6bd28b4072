"""PodTopologySpread: hard constraints filter, soft ones score (upstream semantics)."""

from tests.scheduler.builders import make_node, make_pod, taint
from tests.scheduler.test_decisions import Offline

ZONE = "topology.kubernetes.io/zone"


def spread(max_skew=1, when="DoNotSchedule", key=ZONE, **extra):
    return {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": {"app": "web"}},
        **extra,
    }


def web(name, node_name="", **kwargs):
    pod = make_pod(name, node_name=node_name, **kwargs)
    pod["metadata"]["labels"] = {"app": "web"}
    return pod


def zones(*pairs):
    return [make_node(name, labels={ZONE: zone}) for name, zone in pairs]


def test_hard_constraint_sends_the_pod_to_the_emptier_zone():
    nodes = zones(("a1", "a"), ("a2", "a"), ("b1", "b"))
    view = Offline(*nodes, pods=[web("w1", "a1")])
    pod = web("new", topologySpreadConstraints=[spread()])
    assert view.place(pod) == "b1"


def test_skew_limit_blocks_with_upstream_message():
    nodes = zones(("a1", "a"), ("b1", "b"))
    # Zone b is cordoned off by a taint; with nodeTaintsPolicy Ignore it still counts as a
    # domain holding 0 pods, so a second pod in zone a would make skew 2.
    nodes[1]["spec"]["taints"] = [taint("maintenance")]
    view = Offline(*nodes, pods=[web("w1", "a1")])
    pod = web("new", topologySpreadConstraints=[spread()])
    assert view.place(pod) == (
        "0/2 nodes are available: 1 node(s) didn't match pod topology spread constraints, "
        "1 node(s) had untolerated taint(s). no new claims to deallocate, "
        "preemption: 0/2 nodes are available: "
        "1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling."
    )


def test_node_taints_policy_honor_drops_the_tainted_domain():
    nodes = zones(("a1", "a"), ("b1", "b"))
    nodes[1]["spec"]["taints"] = [taint("maintenance")]
    view = Offline(*nodes, pods=[web("w1", "a1")])
    pod = web("new", topologySpreadConstraints=[spread(nodeTaintsPolicy="Honor")])
    assert view.place(pod) == "a1"


def test_min_domains_treats_missing_domains_as_empty():
    nodes = zones(("a1", "a"), ("b1", "b"))
    view = Offline(*nodes, pods=[web("w1", "a1"), web("w2", "b1")])
    relaxed = web("x", topologySpreadConstraints=[spread()])
    assert view.place(relaxed) in {"a1", "b1"}
    strict = web("y", topologySpreadConstraints=[spread(minDomains=3)])
    assert view.place(strict).startswith(
        "0/2 nodes are available: 2 node(s) didn't match pod topology spread constraints."
    )


def test_node_without_the_topology_key_is_unresolvable():
    labelled = make_node("a1", labels={ZONE: "a"})
    bare = make_node("bare")
    view = Offline(labelled, bare)
    pod = web("new", topologySpreadConstraints=[spread()])
    assert view.place(pod) == "a1"
    view = Offline(bare)
    assert view.place(pod) == (
        "0/1 nodes are available: 1 node(s) didn't match pod topology spread constraints "
        "(missing required label). no new claims to deallocate, "
        "preemption: 0/1 nodes are available: "
        "1 Preemption is not helpful for scheduling."
    )


def test_pods_in_other_namespaces_and_unselected_pods_do_not_count():
    nodes = zones(("a1", "a"), ("b1", "b"))
    other_ns = web("elsewhere", "a1", namespace="other")
    unlabelled = make_pod("plain", node_name="a1")
    view = Offline(*nodes, pods=[web("w1", "b1"), other_ns, unlabelled])
    pod = web("new", topologySpreadConstraints=[spread()])
    assert view.place(pod) == "a1"


def test_match_label_keys_narrow_the_selector_to_the_pods_revision():
    nodes = zones(("a1", "a"), ("b1", "b"))
    old = web("old", "a1")
    old["metadata"]["labels"]["rev"] = "1"
    nodes[1]["spec"]["taints"] = [taint("maintenance")]
    pod = web("new", topologySpreadConstraints=[spread(matchLabelKeys=["rev"])])
    pod["metadata"]["labels"]["rev"] = "2"
    # Zone b (tainted, but counted: nodeTaintsPolicy Ignore) holds 0. If the revision 1 pod
    # counted, a1 would make the skew 2; only revision 2 pods count, so a1 is fine.
    assert Offline(*nodes, pods=[old]).place(pod) == "a1"
    pod["metadata"]["labels"]["rev"] = "1"
    assert (
        Offline(*nodes, pods=[old])
        .place(pod)
        .startswith(
            "0/2 nodes are available: 1 node(s) didn't match pod topology spread constraints"
        )
    )


def test_soft_constraint_prefers_the_emptier_zone_but_never_blocks():
    nodes = zones(("a1", "a"), ("b1", "b"))
    pod = web("new", topologySpreadConstraints=[spread(when="ScheduleAnyway")])
    assert {Offline(*nodes, pods=[web("w1", "a1")], seed=s).place(pod) for s in range(8)} == {"b1"}
    nodes[1]["spec"]["taints"] = [taint("maintenance")]
    view = Offline(*nodes, pods=[web("w1", "a1"), web("w2", "a1")])
    assert view.place(pod) == "a1"


def test_soft_constraint_scores_unlabelled_nodes_lowest():
    pod = web("new", topologySpreadConstraints=[spread(when="ScheduleAnyway")])
    placed = {
        Offline(make_node("bare"), make_node("a1", labels={ZONE: "a"}), seed=s).place(pod)
        for s in range(8)
    }
    assert placed == {"a1"}
