"""NodePorts: host ports by protocol and host IP, against the pods on the node."""

from taintplane.scheduler.framework import Code, CycleState
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins.node_ports import ERR_REASON, NodePorts
from tests.scheduler.builders import make_node, make_pod
from tests.scheduler.test_decisions import Offline


def with_ports(name, *ports, node_name="", init=None):
    pod = make_pod(name, node_name=node_name)
    pod["spec"]["containers"][0]["ports"] = [dict(p) for p in ports]
    if init is not None:
        pod["spec"]["initContainers"] = init
    return pod


def verdict(pod, *existing):
    node = NodeInfo.of(make_node("n"))
    for other in existing:
        node.add_pod(PodInfo.of(other))
    plugin, state, info = NodePorts(), CycleState(), PodInfo.of(pod)
    skipped = plugin.pre_filter(state, info, [node])
    if skipped is not None:
        assert skipped.code is Code.SKIP
        return "skip"
    status = plugin.filter(state, info, node)
    return "fits" if status is None else status.message


def test_a_pod_without_host_ports_skips_the_plugin():
    assert verdict(with_ports("p", {"containerPort": 80})) == "skip"
    assert verdict(make_pod("p")) == "skip"


def test_the_same_port_and_protocol_conflict_on_the_wildcard_address():
    taken = with_ports("a", {"containerPort": 80, "hostPort": 8080}, node_name="n")
    assert verdict(with_ports("b", {"containerPort": 80, "hostPort": 8080}), taken) == ERR_REASON
    assert verdict(with_ports("b", {"containerPort": 80, "hostPort": 8081}), taken) == "fits"
    udp = {"containerPort": 80, "hostPort": 8080, "protocol": "UDP"}
    assert verdict(with_ports("b", udp), taken) == "fits"


def test_host_ip_rules_follow_check_conflict():
    on_ip = with_ports("a", {"containerPort": 1, "hostPort": 53, "hostIP": "10.0.0.1"})
    other_ip = with_ports("b", {"containerPort": 1, "hostPort": 53, "hostIP": "10.0.0.2"})
    same_ip = with_ports("b", {"containerPort": 1, "hostPort": 53, "hostIP": "10.0.0.1"})
    wildcard = with_ports("b", {"containerPort": 1, "hostPort": 53, "hostIP": "0.0.0.0"})
    assert verdict(other_ip, on_ip) == "fits"
    assert verdict(same_ip, on_ip) == ERR_REASON
    # 0.0.0.0 takes the port on every address, and wants it on every address.
    assert verdict(wildcard, on_ip) == ERR_REASON
    assert verdict(on_ip, wildcard) == ERR_REASON


def test_sidecar_ports_count_other_init_containers_do_not():
    sidecar = {
        "name": "s",
        "image": "envoy",
        "restartPolicy": "Always",
        "ports": [{"containerPort": 9, "hostPort": 9000}],
    }
    plain_init = {**sidecar, "restartPolicy": None}
    taken = with_ports("a", node_name="n", init=[sidecar])
    wants = with_ports("b", {"containerPort": 9, "hostPort": 9000})
    assert verdict(wants, taken) == ERR_REASON
    assert verdict(wants, with_ports("a", node_name="n", init=[plain_init])) == "fits"


def test_a_deleted_pod_frees_its_port():
    node = NodeInfo.of(make_node("n"))
    holder = PodInfo.of(with_ports("a", {"containerPort": 80, "hostPort": 80}, node_name="n"))
    node.add_pod(holder)
    node.remove_pod(holder.key)
    assert node.used_ports == {}


def test_the_second_pod_on_the_port_waits_with_upstreams_message():
    view = Offline(make_node("only"), make_node("other", labels={"pool": "b"}))
    first = with_ports("first", {"containerPort": 80, "hostPort": 8080})
    first["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "only"}
    decision = view.scheduler.decide(PodInfo.of(first))
    assert decision.node == "only"
    view.scheduler._pod_added({**first, "spec": {**first["spec"], "nodeName": "only"}})
    second = {**first, "metadata": {**first["metadata"], "name": "second", "uid": "u2"}}
    assert view.place(second) == (
        "0/2 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, "
        "1 node(s) didn't match Pod's node affinity/selector. no new claims to deallocate, "
        "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling."
    )
    # Without the selector it goes to the other node.
    free = with_ports("third", {"containerPort": 80, "hostPort": 8080})
    assert view.place(free) == "other"
