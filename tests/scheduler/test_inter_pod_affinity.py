"""InterPodAffinity: required affinity and anti-affinity (the pod's and the existing pods'),
namespaces, the first pod of a group, and preferred terms in scoring."""

from taintplane.scheduler.framework import CycleState
from taintplane.scheduler.nodeinfo import PodInfo
from taintplane.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from taintplane.scheduler.plugins.pod_topology_spread import ALL_NODES_KEY
from tests.scheduler.builders import make_node, make_pod
from tests.scheduler.test_decisions import Offline

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
NOT_HELPFUL = "no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."


def labelled(pod, **labels):
    pod["metadata"]["labels"] = labels
    return pod


def on(node, name, namespace="default", affinity=None, **labels):
    return labelled(
        make_pod(name, node_name=node, namespace=namespace, affinity=affinity), **labels
    )


def term(key, selector, **extra):
    return {"labelSelector": {"matchLabels": selector}, "topologyKey": key, **extra}


def required(kind, *terms):
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def preferred(kind, *weighted):
    return {
        kind: {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in weighted
            ]
        }
    }


def nodes():
    return (
        make_node("a-1", labels={ZONE: "a"}),
        make_node("a-2", labels={ZONE: "a"}),
        make_node("b-1", labels={ZONE: "b"}),
    )


def test_required_affinity_needs_a_matching_pod_in_the_domain():
    view = Offline(*nodes(), pods=[on("a-1", "db", app="db")])
    pod = make_pod("web", affinity=required("podAffinity", term(ZONE, {"app": "db"})))
    assert {view.place(pod) for _ in range(6)} <= {"a-1", "a-2"}
    lonely = make_pod("x", affinity=required("podAffinity", term(ZONE, {"app": "cache"})))
    assert view.place(lonely) == (
        "0/3 nodes are available: 3 node(s) didn't match pod affinity rules. " + NOT_HELPFUL
    )


def test_the_first_pod_of_a_group_matching_its_own_term_lands():
    view = Offline(*nodes())
    pod = labelled(
        make_pod("web-0", affinity=required("podAffinity", term(ZONE, {"app": "web"}))),
        app="web",
    )
    assert view.place(pod) in {"a-1", "a-2", "b-1"}


def test_a_node_without_the_topology_key_never_satisfies_affinity():
    view = Offline(make_node("bare"), pods=[on("bare", "db", app="db")])
    pod = make_pod("web", affinity=required("podAffinity", term(ZONE, {"app": "db"})))
    assert view.place(pod).startswith(
        "0/1 nodes are available: 1 node(s) didn't match pod affinity rules."
    )


def test_required_anti_affinity_keeps_the_pod_out_of_the_domain():
    view = Offline(*nodes(), pods=[on("a-1", "web-0", app="web")])
    pod = labelled(
        make_pod("web-1", affinity=required("podAntiAffinity", term(ZONE, {"app": "web"}))),
        app="web",
    )
    assert view.place(pod) == "b-1"
    view.scheduler._pod_added(on("b-1", "web-2", app="web"))
    assert view.place(pod) == (
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. "
        "no new claims to deallocate, preemption: 0/3 nodes are available: "
        "3 No preemption victims found for incoming pod."
    )


def test_existing_pods_anti_affinity_keeps_matching_pods_away():
    guard = on(
        "a-1",
        "guard",
        affinity=required("podAntiAffinity", term(HOST, {"team": "noisy"})),
    )
    view = Offline(*nodes(), pods=[guard])
    noisy = labelled(make_pod("noisy", node_selector={HOST: "a-1"}), team="noisy")
    assert view.place(noisy) == (
        "0/3 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules, "
        "2 node(s) didn't match Pod's node affinity/selector. no new claims to deallocate, "
        "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling."
    )
    quiet = make_pod("quiet", node_selector={HOST: "a-1"})
    assert view.place(quiet) == "a-1"


def test_terms_look_in_the_pods_namespace_unless_told_otherwise():
    view = Offline(*nodes(), pods=[on("b-1", "db", namespace="data", app="db")])
    same_ns = make_pod("web", affinity=required("podAffinity", term(ZONE, {"app": "db"})))
    assert "didn't match pod affinity rules" in view.place(same_ns)
    listed = make_pod(
        "web",
        affinity=required("podAffinity", term(ZONE, {"app": "db"}, namespaces=["data"])),
    )
    assert view.place(listed) == "b-1"
    everywhere = make_pod(
        "web", affinity=required("podAffinity", term(ZONE, {"app": "db"}, namespaceSelector={}))
    )
    assert view.place(everywhere) == "b-1"


def test_namespace_selector_reads_namespace_labels():
    plugin = InterPodAffinity({"data": {"tier": "storage"}}.get)  # type: ignore[arg-type]
    view = Offline(*nodes(), pods=[on("b-1", "db", namespace="data", app="db")])
    pod = make_pod(
        "web",
        affinity=required(
            "podAffinity",
            term(ZONE, {"app": "db"}, namespaceSelector={"matchLabels": {"tier": "storage"}}),
        ),
    )
    state = CycleState()
    all_nodes = view.scheduler.placement.node_order()
    assert plugin.pre_filter(state, PodInfo.of(pod), all_nodes) is None
    verdicts = {n.name: plugin.filter(state, PodInfo.of(pod), n) for n in all_nodes}
    assert verdicts["b-1"] is None
    assert verdicts["a-1"] is not None


def test_pods_without_affinity_skip_when_nobody_has_any():
    view = Offline(*nodes(), pods=[on("a-1", "plain", app="web")])
    state = CycleState()
    plugin = InterPodAffinity()
    all_nodes = view.scheduler.placement.node_order()
    skipped = plugin.pre_filter(state, PodInfo.of(make_pod("p")), all_nodes)
    assert skipped is not None
    state.data[ALL_NODES_KEY] = all_nodes
    assert plugin.pre_score(state, PodInfo.of(make_pod("p")), all_nodes) is not None


def test_preferred_terms_score_the_domain_normalized():
    view = Offline(*nodes(), pods=[on("b-1", "db", app="db"), on("a-1", "web", app="web")])
    pod = make_pod(
        "p",
        affinity={
            **preferred("podAffinity", (10, term(ZONE, {"app": "db"}))),
            **preferred("podAntiAffinity", (5, term(HOST, {"app": "web"}))),
        },
    )
    decision = view.scheduler.explain(pod)
    assert decision.scores is not None
    # b-1: +10, a-2: 0, a-1: -5 -> 100, 33, 0, times the weight 2.
    assert decision.scores["InterPodAffinity"] == {"a-1": 0, "a-2": 66, "b-1": 200}
    assert decision.node == "b-1"


def test_existing_pods_required_affinity_attracts_matching_pods():
    friend = on("a-2", "friend", affinity=required("podAffinity", term(HOST, {"app": "web"})))
    view = Offline(*nodes(), pods=[friend])
    decision = view.scheduler.explain(labelled(make_pod("web"), app="web"))
    assert decision.scores is not None
    assert decision.scores["InterPodAffinity"] == {"a-1": 0, "a-2": 200, "b-1": 0}
