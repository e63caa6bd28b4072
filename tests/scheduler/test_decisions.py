"""Scheduling decisions and messages on a fixed view of the cluster (no API involved)."""

import pytest

from taintplane.api.features import FeatureGates
from taintplane.clock import VirtualClock
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.scheduler import Scheduler, nodes_to_find
from tests.scheduler.builders import make_node, make_pod, taint


class Offline:
    """A scheduler fed node and pod objects directly (its informers are not run)."""

    def __init__(self, *nodes, pods=(), seed=1, features=None):
        self.scheduler = Scheduler(client=None, clock=VirtualClock(), seed=seed, features=features)  # type: ignore[arg-type]
        for node in nodes:
            self.scheduler._node_added(node)
        for pod in pods:
            self.scheduler._pod_added(pod)

    def place(self, pod):
        decision = self.scheduler.decide(PodInfo.of(pod))
        return decision.node or decision.message


def test_dedicated_nodes_take_only_the_tolerating_namespace():
    banana = taint("dedicated", value="banana")
    view = Offline(
        make_node("foo", taints=[banana]),
        make_node("bar", taints=[banana]),
        make_node("baz", taints=[banana]),
    )
    assert view.place(make_pod("regular")) == (
        "0/3 nodes are available: 3 node(s) had untolerated taint(s). "
        "no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    tolerating = make_pod(
        "banana-pod",
        tolerations=[
            {"key": "dedicated", "operator": "Equal", "value": "banana", "effect": "NoSchedule"}
        ],
    )
    assert view.place(tolerating) in {"foo", "bar", "baz"}
    wrong_value = make_pod(
        "apple",
        tolerations=[
            {"key": "dedicated", "operator": "Equal", "value": "apple", "effect": "NoSchedule"}
        ],
    )
    assert view.place(wrong_value).startswith(
        "0/3 nodes are available: 3 node(s) had untolerated taint(s)."
    )


def test_special_hardware_needs_the_toleration_and_the_resource():
    gpu = make_node(
        "gpu-1", taints=[taint("nvidia.com/gpu", value="present")], extra={"example.com/gpu": "2"}
    )
    plain = make_node("cpu-1")
    view = Offline(gpu, plain)
    wants_gpu = make_pod(
        "train",
        requests={"example.com/gpu": "1"},
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}],
    )
    assert view.place(wants_gpu) == "gpu-1"
    no_toleration = make_pod("train2", requests={"example.com/gpu": "1"})
    assert view.place(no_toleration) == (
        "0/2 nodes are available: 1 Insufficient example.com/gpu, 1 node(s) had untolerated taint(s). "
        "no new claims to deallocate, preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling."
    )
    # A pod that tolerates the taint but needs no GPU is still kept by its own choice only.
    assert view.place(make_pod("web")) == "cpu-1"


def test_runtimeclass_intersection_of_node_selector_and_tolerations():
    sandbox = make_node(
        "sandbox-1", labels={"sandboxed": "true"}, taints=[taint("sandboxed.kubernetes.io")]
    )
    other_sandbox = make_node(
        "sandbox-2", labels={"sandboxed": "false"}, taints=[taint("sandboxed.kubernetes.io")]
    )
    normal = make_node("normal", labels={"sandboxed": "true"})
    view = Offline(sandbox, other_sandbox, normal)
    pod = make_pod(
        "gvisor",
        node_selector={"sandboxed": "true"},
        tolerations=[
            {"key": "sandboxed.kubernetes.io", "operator": "Exists", "effect": "NoSchedule"}
        ],
    )
    decision = view.scheduler.decide(PodInfo.of(pod), explain=True)
    assert decision.diagnosis is not None
    assert decision.scores is not None
    assert decision.diagnosis.node_statuses["sandbox-2"].plugin == "NodeAffinity"
    assert set(decision.scores["TaintToleration"]) == {"sandbox-1", "normal"}


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        pytest.param({"operator": "Exists"}, "tainted", id="empty-key-exists-tolerates-everything"),
        pytest.param(
            {"key": "k", "operator": "Exists"}, "tainted", id="empty-effect-matches-every-effect"
        ),
        pytest.param(
            {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
            None,
            id="noexecute-toleration-leaves-the-noschedule-taint",
        ),
    ],
)
def test_tricky_tolerations(toleration, expected):
    tainted = make_node(
        "tainted", taints=[taint("k", "NoSchedule", "v"), taint("k", "NoExecute", "v")]
    )
    view = Offline(tainted)
    result = view.place(make_pod("p", tolerations=[toleration]))
    if expected:
        assert result == expected
    else:
        assert result.startswith("0/1 nodes are available: 1 node(s) had untolerated taint(s).")


def test_noexecute_taint_tolerated_for_a_while_still_admits():
    tainted = make_node("draining", taints=[taint("maintenance", "NoExecute")])
    view = Offline(tainted)
    pod = make_pod(
        "p",
        tolerations=[
            {
                "key": "maintenance",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            }
        ],
    )
    assert view.place(pod) == "draining"


def test_prefer_no_schedule_only_steers():
    view = Offline(
        make_node("preferred-not", taints=[taint("spot", "PreferNoSchedule")]), make_node("clean")
    )
    assert view.place(make_pod("p")) == "clean"
    only = Offline(make_node("preferred-not", taints=[taint("spot", "PreferNoSchedule")]))
    assert only.place(make_pod("p")) == "preferred-not"
    decision = view.scheduler.decide(PodInfo.of(make_pod("p")), explain=True)
    assert decision.scores is not None
    assert decision.scores["TaintToleration"] == {"preferred-not": 0, "clean": 300}


def test_unschedulable_node_and_its_toleration():
    view = Offline(make_node("cordoned", unschedulable=True))
    assert view.place(make_pod("p")).startswith(
        "0/1 nodes are available: 1 node(s) were unschedulable."
    )
    tolerant = make_pod(
        "ds",
        tolerations=[
            {
                "key": "node.kubernetes.io/unschedulable",
                "operator": "Exists",
                "effect": "NoSchedule",
            }
        ],
    )
    assert view.place(tolerant) == "cordoned"


def test_resources_and_histogram_order():
    nodes = [make_node(f"small-{i}", cpu="1") for i in range(10)] + [
        make_node("tiny", pods="0"),
        make_node("tainted", taints=[taint("x")]),
    ]
    view = Offline(*nodes)
    message = view.place(make_pod("big", requests={"cpu": "2", "memory": "1Gi"}))
    # Entries sort as strings: "10 Insufficient cpu" before "1 Too many pods".
    assert message == (
        "0/12 nodes are available: 1 Too many pods, 1 node(s) had untolerated taint(s), 10 Insufficient cpu. "
        "no new claims to deallocate, preemption: 0/12 nodes are available: 1 Preemption is not helpful for scheduling, "
        "11 No preemption victims found for incoming pod."
    )


def test_preemption_policy_never_and_possible_victims():
    full = make_node("full", cpu="1")
    low = make_pod("low", requests={"cpu": "1"}, priority=0, node_name="full")
    view = Offline(full, pods=[low])
    never = make_pod("never", requests={"cpu": "1"}, priority=100, preemptionPolicy="Never")
    assert view.place(never) == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."
    )
    equal = make_pod("equal", requests={"cpu": "1"}, priority=0)
    assert view.place(equal).endswith(
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_no_nodes():
    assert Offline().place(make_pod("p")) == "no nodes available to schedule pods"


def test_node_affinity_operators_and_fields():
    nodes = [
        make_node("a", labels={"zone": "z1", "gen": "3"}),
        make_node("b", labels={"zone": "z2", "gen": "5"}),
    ]
    view = Offline(*nodes)

    def required(*expressions, fields=()):
        term = {"matchExpressions": list(expressions)}
        if fields:
            term["matchFields"] = list(fields)
        return {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        }

    assert (
        view.place(
            make_pod("p", affinity=required({"key": "gen", "operator": "Gt", "values": ["4"]}))
        )
        == "b"
    )
    assert (
        view.place(
            make_pod("p", affinity=required({"key": "gen", "operator": "Lt", "values": ["4"]}))
        )
        == "a"
    )
    assert (
        view.place(
            make_pod("p", affinity=required({"key": "zone", "operator": "NotIn", "values": ["z1"]}))
        )
        == "b"
    )
    assert (
        view.place(
            make_pod(
                "p",
                affinity=required(
                    {"key": "missing", "operator": "DoesNotExist"},
                    fields=[{"key": "metadata.name", "operator": "In", "values": ["a"]}],
                ),
            )
        )
        == "a"
    )
    assert view.place(
        make_pod(
            "p",
            affinity=required(
                {"key": "zone", "operator": "Exists"},
                {"key": "zone", "operator": "In", "values": ["z9"]},
            ),
        )
    ) == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
        "no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    preferred = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 50,
                    "preference": {
                        "matchExpressions": [{"key": "zone", "operator": "In", "values": ["z2"]}]
                    },
                }
            ]
        }
    }
    assert view.place(make_pod("p", affinity=preferred)) == "b"


def test_comparison_operator_tolerations_follow_the_gate():
    node = make_node("mem", taints=[taint("memory-gb", "NoSchedule", "64")])
    pod = make_pod(
        "p",
        tolerations=[{"key": "memory-gb", "operator": "Gt", "value": "32", "effect": "NoSchedule"}],
    )
    assert (
        Offline(node)
        .place(pod)
        .startswith("0/1 nodes are available: 1 node(s) had untolerated taint(s).")
    )
    gated = Offline(node, features=FeatureGates({"TaintTolerationComparisonOperators": True}))
    assert gated.place(pod) == "mem"


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [(5, 5), (99, 99), (100, 100), (500, 230), (5000, 500), (6250, 312), (10000, 500)],
)
def test_percentage_of_nodes_to_score_adaptive_default(nodes, expected):
    assert nodes_to_find(nodes) == expected


def test_nodeinfo_accounts_pods_and_init_containers():
    node = NodeInfo.of(make_node("n", cpu="2"))
    pod = make_pod(
        "p",
        requests={"cpu": "500m"},
        initContainers=[
            {"name": "init", "image": "x", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
        ],
    )
    info = PodInfo.of(pod)
    assert info.requests == {"cpu": 1000, "memory": 1024**3}
    node.add_pod(info)
    assert node.requested["cpu"] == 1000
    node.remove_pod(info.key)
    assert node.requested["cpu"] == 0
