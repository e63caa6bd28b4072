"""PodTopologySpread asks every node, for every pod it scores, how many of its pods a
selector matches; a node keeps the answer until a pod comes or goes (issue 16: the system
defaults made a Deployment's scheduling grow with pods x nodes). The kept answer must be the
count of the pods the node holds at that moment."""

from taintplane.api.selectors import label_selector_from_dict
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins.pod_topology_spread import Constraint
from tests.scheduler.builders import make_node, make_pod


def labelled(name, node_name, app, deleting=False):
    pod = make_pod(name, node_name=node_name)
    pod["metadata"]["labels"] = {"app": app}
    if deleting:
        pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return PodInfo.of(pod)


def constraint():
    return Constraint.parse(
        {
            "maxSkew": 3,
            "topologyKey": "kubernetes.io/hostname",
            "labelSelector": {"matchLabels": {"app": "web"}},
        },
        labelled("asker", "", "web"),
    )


def test_the_count_follows_pods_added_replaced_and_removed():
    node = NodeInfo.of(make_node("n1"))
    spread, asker = constraint(), labelled("asker", "", "web")
    assert spread.matching(asker, node) == 0
    node.add_pod(labelled("w1", "n1", "web"))
    node.add_pod(labelled("x1", "n1", "other"))
    assert spread.matching(asker, node) == 1
    node.add_pod(labelled("w2", "n1", "web"))
    assert spread.matching(asker, node) == 2
    node.add_pod(labelled("w2", "n1", "web", deleting=True))  # an update: now terminating
    assert spread.matching(asker, node) == 1
    node.remove_pod(labelled("w1", "n1", "web").key)
    assert spread.matching(asker, node) == 0


def test_a_node_object_updated_shares_its_pods_counts():
    node = NodeInfo.of(make_node("n1"))
    spread, asker = constraint(), labelled("asker", "", "web")
    node.add_pod(labelled("w1", "n1", "web"))
    assert spread.matching(asker, node) == 1
    fresh = node.with_node(make_node("n1", labels={"x": "y"}))
    fresh.add_pod(labelled("w2", "n1", "web"))
    assert spread.matching(asker, fresh) == spread.matching(asker, node) == 2


def test_other_namespaces_and_selectors_are_counted_apart():
    node = NodeInfo.of(make_node("n1"))
    node.add_pod(labelled("w1", "n1", "web"))
    spread = constraint()
    elsewhere = labelled("asker", "", "web")
    elsewhere.namespace = "other"
    assert spread.matching(elsewhere, node) == 0
    assert spread.matching(labelled("asker", "", "web"), node) == 1
    spread.selector = label_selector_from_dict({"matchLabels": {"app": "other"}})
    assert spread.matching(labelled("asker", "", "web"), node) == 0
