"""PodTopologySpread's system defaults (defaultingType System): pods without constraints of
their own are scored by hostname (maxSkew 3) and zone (maxSkew 5) over the pods their
Services and owner select, as upstream's buildDefaultConstraints and DefaultSelector."""

from taintplane.scheduler.nodeinfo import PodInfo
from taintplane.scheduler.plugins.spread_defaults import SpreadListers, default_selector
from tests.scheduler.builders import make_node, make_pod
from tests.scheduler.test_decisions import Offline

ZONE = "topology.kubernetes.io/zone"
PTS = "PodTopologySpread"


def replica_set(name="web", selector=None):
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": selector or {"matchLabels": {"app": "web"}}},
    }


def owned(name, node_name="", owner="web", kind="ReplicaSet", api="apps/v1", **labels):
    pod = make_pod(name, node_name=node_name)
    pod["metadata"]["labels"] = {"app": "web", **labels}
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": api, "kind": kind, "name": owner, "uid": "u", "controller": True}
    ]
    return pod


def other(name, node_name):
    pod = make_pod(name, node_name=node_name)
    pod["metadata"]["labels"] = {"app": "other"}
    return pod


def view_of(nodes, pods, *, seed=1, replica_sets=(), services=()):
    view = Offline(*nodes, pods=pods, seed=seed)
    listers = view.scheduler.spread_listers
    listers.replica_sets = {f"default/{rs['metadata']['name']}": rs for rs in replica_sets}
    listers.services = {f"default/{s['metadata']['name']}": s for s in services}
    return view


def spread_scores(view, pod):
    return view.scheduler.decide(PodInfo.of(pod), explain=True).scores.get(PTS)


def crowded():
    """Zone a holds the ReplicaSet's pod (a1) and another app's (a2); zone b another's (b1):
    every node holds one pod, so only spreading tells them apart."""
    nodes = [
        make_node("a1", labels={ZONE: "a"}),
        make_node("a2", labels={ZONE: "a"}),
        make_node("b1", labels={ZONE: "b"}),
    ]
    return nodes, [owned("w1", "a1"), other("x2", "a2"), other("x3", "b1")]


def test_replica_set_pod_goes_to_the_zone_and_host_without_its_siblings():
    nodes, pods = crowded()
    placed = {
        view_of(nodes, pods, seed=s, replica_sets=[replica_set()]).place(owned("new"))
        for s in range(8)
    }
    assert placed == {"b1"}
    # Upstream's raw scores: a1 round(1*ln5+2 + 1*ln4+4) = 9, a2 round(2 + ln4+4) = 7,
    # b1 2+4 = 6; normalized 100*(max+min-s)/max, then weight 2.
    view = view_of(nodes, pods, replica_sets=[replica_set()])
    assert spread_scores(view, owned("new")) == {"a1": 132, "a2": 176, "b1": 200}


def test_nodes_without_a_zone_are_still_spread_by_hostname():
    nodes = [make_node("a1", labels={ZONE: "a"}), make_node("bare")]
    pods = [owned("w1", "a1"), other("x", "bare")]
    view = view_of(nodes, pods, replica_sets=[replica_set()])
    # Not ignored as under a pod's own constraints: bare scores 2 (hostname only), a1
    # round(ln4+2 + ln4+4) = 9 (the missing zone is a domain "" in the weight, as upstream).
    assert spread_scores(view, owned("new")) == {"a1": 44, "bare": 200}
    assert view.place(owned("new")) == "bare"


def test_a_pod_with_its_own_constraints_gets_no_defaults():
    nodes, pods = crowded()
    pod = owned("new")
    pod["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "other"}},
        }
    ]
    # Its own constraint spreads app=other: zone a holds one, b one; host a1 none.
    view = view_of(nodes, pods, replica_sets=[replica_set()])
    scores = spread_scores(view, pod)
    assert scores is not None
    assert scores["a1"] == scores["a2"] == scores["b1"]
    pod["spec"]["topologySpreadConstraints"][0]["whenUnsatisfiable"] = "DoNotSchedule"
    assert spread_scores(view, pod) is None  # only hard constraints: nothing scores


def test_a_pod_nothing_selects_gets_no_defaults():
    nodes, pods = crowded()
    assert spread_scores(view_of(nodes, pods), owned("new")) is None  # its RS is not known
    unowned = make_pod("bare")
    unowned["metadata"]["labels"] = {"app": "web"}
    view = view_of(nodes, pods, replica_sets=[replica_set()])
    assert spread_scores(view, unowned) is None
    # Owned, but not by a controller kind DefaultSelector knows (a Job here).
    job = owned("new", kind="Job", api="batch/v1")
    assert spread_scores(view, job) is None
    # A service without a selector selects nothing.
    headless = {"metadata": {"name": "h", "namespace": "default"}, "spec": {}}
    assert spread_scores(view_of(nodes, pods, services=[headless]), unowned) is None


def test_services_and_the_replica_set_selectors_merge():
    service = {
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}},
    }
    elsewhere = {
        "metadata": {"name": "web", "namespace": "other"},
        "spec": {"selector": {"team": "x"}},
    }
    rs = replica_set(
        selector={"matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe"]}]}
    )
    listers = SpreadListers(
        services={"default/web": service, "other/web": elsewhere},
        replica_sets={"default/web": rs},
    )
    pod = PodInfo.of(owned("new", tier="fe"))
    assert str(default_selector(pod, listers)) == "app=web,tier in (fe)"
    # Only pods matching both count: w1 (tier fe) on a1, not a2's tier be pod (with the
    # Service's app=web alone both hosts would tie). a1 round(ln4+2 + ln3+4) = 8, a2 7.
    nodes = [make_node("a1", labels={ZONE: "a"}), make_node("a2", labels={ZONE: "a"})]
    pods = [owned("w1", "a1", tier="fe"), owned("w2", "a2", tier="be")]
    view = view_of(nodes, pods, replica_sets=[rs], services=[service])
    assert spread_scores(view, owned("new", tier="fe")) == {"a1": 174, "a2": 200}


def test_replication_controller_and_stateful_set_owners_select_too():
    rc = {"metadata": {"name": "rc", "namespace": "default"}, "spec": {"selector": {"app": "web"}}}
    ss = {
        "metadata": {"name": "ss", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
    }
    listers = SpreadListers(
        replication_controllers={"default/rc": rc}, stateful_sets={"default/ss": ss}
    )
    by_rc = PodInfo.of(owned("p", owner="rc", kind="ReplicationController", api="v1"))
    by_ss = PodInfo.of(owned("q", owner="ss", kind="StatefulSet"))
    assert str(default_selector(by_rc, listers)) == "app=web"
    assert str(default_selector(by_ss, listers)) == "app=web"
