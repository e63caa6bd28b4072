"""The default profile's plugins through the API: the FailedScheduling message as 1.35 writes
it (NodePorts, InterPodAffinity, NodeAffinity's PreFilter)."""

import pytest

from taintplane.sim.cluster import running_cluster
from tests.scheduler.builders import make_node, make_pod, taint
from tests.scheduler.test_live import add_node, condition, wait_for_events, wait_for_pod

PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    import httpx

    with (
        running_cluster(tmp_path_factory.mktemp("plugins")) as cluster,
        httpx.Client(base_url=cluster.url, timeout=30) as client,
    ):
        add_node(client, make_node("a-1", labels={"zone": "a"}))
        add_node(client, make_node("a-2", labels={"zone": "a"}))
        add_node(client, make_node("b-1", labels={"zone": "b"}, taints=[taint("gpu")]))
        yield client


def failure(api, name):
    """The pod's PodScheduled message, once its FailedScheduling event says the same (the
    scheduler records the event after it writes the condition, asynchronously)."""
    pod = wait_for_pod(api, name, lambda p: condition(p) is not None)
    message = condition(pod)["message"]
    wait_for_events(
        api,
        f"involvedObject.name={name},reason=FailedScheduling",
        lambda events: message in [e["message"] for e in events],
    )
    return message


def bound(api, name):
    return wait_for_pod(api, name, lambda p: p["spec"].get("nodeName"))["spec"]["nodeName"]


def test_two_pods_on_one_host_port_of_one_node(api):
    for name in ("port-1", "port-2"):
        pod = make_pod(name, node_selector={"kubernetes.io/hostname": "a-1"})
        pod["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
        assert api.post(PODS, json=pod).status_code == 201
        if name == "port-1":
            assert bound(api, name) == "a-1"
    assert failure(api, "port-2") == (
        "0/3 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, "
        "1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated "
        "taint(s). no new claims to deallocate, preemption: 0/3 nodes are available: "
        "1 No preemption victims found for incoming pod, 2 Preemption is not helpful for "
        "scheduling."
    )


def by_name(*values):
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": list(values)}]}
    required = {"nodeSelectorTerms": [term]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}


def test_node_names_in_match_fields_are_the_only_candidates(api):
    api.post(PODS, json=make_pod("named-b", affinity=by_name("b-1")))
    api.post(PODS, json=make_pod("named-nope", affinity=by_name("nope")))
    api.post(PODS, json=make_pod("named-a", affinity=by_name("a-2", "b-1")))
    not_helpful = (
        "no new claims to deallocate, preemption: 0/3 nodes are available: "
        "3 Preemption is not helpful for scheduling."
    )
    assert failure(api, "named-b") == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), "
        "2 node(s) didn't satisfy plugin(s) [NodeAffinity]. " + not_helpful
    )
    assert failure(api, "named-nope") == (
        "0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [NodeAffinity]. " + not_helpful
    )
    assert bound(api, "named-a") == "a-2"


def test_pod_anti_affinity_and_affinity(api):
    zone_term = {"labelSelector": {"matchLabels": {"app": "solo"}}, "topologyKey": "zone"}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [zone_term]}}
    for name in ("solo-1", "solo-2"):
        pod = make_pod(name, affinity=anti)
        pod["metadata"]["labels"] = {"app": "solo"}
        api.post(PODS, json=pod)
        if name == "solo-1":
            assert bound(api, name) in {"a-1", "a-2"}
    assert failure(api, "solo-2") == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 node(s) didn't match "
        "pod anti-affinity rules. no new claims to deallocate, preemption: 0/3 nodes are "
        "available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found "
        "for incoming pod."
    )
    lonely = {**zone_term, "labelSelector": {"matchLabels": {"app": "nobody"}}}
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [lonely]}}
    api.post(PODS, json=make_pod("lonely", affinity=affinity))
    assert failure(api, "lonely") == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 node(s) didn't match "
        "pod affinity rules. no new claims to deallocate, preemption: 0/3 nodes are available: "
        "3 Preemption is not helpful for scheduling."
    )
