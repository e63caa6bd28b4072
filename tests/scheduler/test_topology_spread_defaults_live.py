"""The system default spreading in a running scheduler: its ReplicaSet informer feeds the
default selector (the offline tests set the listers by hand)."""

import httpx

from taintplane.sim.cluster import running_cluster
from tests.scheduler.builders import make_node, make_pod
from tests.scheduler.test_live import add_node, wait_for_pod

ZONE = "topology.kubernetes.io/zone"
# No controller manager (its ReplicaSet controller would delete the hand-made pods), so the
# new nodes keep the not-ready taint admission gives them: the pods tolerate it.
NOT_READY = [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}]


def test_a_replica_set_pod_is_placed_away_from_its_siblings_zone(tmp_path):
    with (
        running_cluster(tmp_path, components=("scheduler",)) as cluster,
        httpx.Client(base_url=cluster.url, timeout=30) as api,
    ):
        rs = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                },
            },
        }
        created = api.post("/apis/apps/v1/namespaces/default/replicasets", json=rs)
        assert created.status_code == 201
        owner = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "web",
            "uid": created.json()["metadata"]["uid"],
            "controller": True,
        }
        for name, zone in (("a1", "a"), ("a2", "a"), ("b1", "b")):
            add_node(api, make_node(name, labels={ZONE: zone}))
        # One pod on each node, so only spreading tells them apart: the ReplicaSet's on a1.
        for name, node, app in (("w1", "a1", "web"), ("x2", "a2", "other"), ("x3", "b1", "other")):
            pod = make_pod(name, node_name=node, tolerations=NOT_READY)
            pod["metadata"]["labels"] = {"app": app}
            if app == "web":
                pod["metadata"]["ownerReferences"] = [owner]
            assert api.post("/api/v1/namespaces/default/pods", json=pod).status_code == 201
        pod = make_pod("new", tolerations=NOT_READY)
        pod["metadata"]["labels"] = {"app": "web"}
        pod["metadata"]["ownerReferences"] = [owner]
        assert api.post("/api/v1/namespaces/default/pods", json=pod).status_code == 201
        placed = wait_for_pod(api, "new", lambda p: p["spec"].get("nodeName"))
        assert placed["spec"]["nodeName"] == "b1"
