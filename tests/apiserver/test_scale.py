"""The scale subresource of Deployments and ReplicaSets: `kubectl scale` and the Scale object."""

from __future__ import annotations

import httpx

from taintplane.sim.cluster import Cluster
from tests.conftest import Kubectl

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: scaled}
spec:
  replicas: 2
  selector: {matchLabels: {app: scaled}}
  template:
    metadata: {labels: {app: scaled}}
    spec: {containers: [{name: c, image: nginx}]}
"""
SCALE = "/apis/apps/v1/namespaces/default/deployments/scaled/scale"


def test_kubectl_scale_and_the_scale_object(cluster: Cluster, kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=DEPLOYMENT)
    assert kubectl("scale", "deployment", "scaled", "--replicas=5") == (
        "deployment.apps/scaled scaled\n"
    )
    assert kubectl("get", "deploy", "scaled", "-o", "jsonpath={.spec.replicas}") == "5"
    with httpx.Client(base_url=cluster.url) as api:
        scale = api.get(SCALE).json()
        assert scale["kind"] == "Scale"
        assert scale["apiVersion"] == "autoscaling/v1"
        assert scale["spec"] == {"replicas": 5}
        assert scale["status"] == {"replicas": 0, "selector": "app=scaled"}
        assert scale["metadata"]["name"] == "scaled"
        scale["spec"]["replicas"] = 3
        assert api.put(SCALE, json=scale).json()["spec"] == {"replicas": 3}
        scale["spec"]["replicas"] = -1
        refused = api.put(SCALE, json=scale)
        assert refused.status_code == 422
        assert refused.json()["message"] == (
            'Scale.autoscaling "scaled" is invalid: spec.replicas: Invalid value: -1: must be '
            "greater than or equal to 0"
        )
        patched = api.patch(
            SCALE,
            json={"spec": {"replicas": 1}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert patched.json()["spec"] == {"replicas": 1}
    assert kubectl("get", "deploy", "scaled", "-o", "jsonpath={.spec.replicas}") == "1"


def test_scale_is_listed_in_discovery(cluster: Cluster) -> None:
    with httpx.Client(base_url=cluster.url) as api:
        resources = api.get("/apis/apps/v1").json()["resources"]
    scale = next(r for r in resources if r["name"] == "deployments/scale")
    assert (scale["group"], scale["version"], scale["kind"]) == ("autoscaling", "v1", "Scale")
    assert sorted(scale["verbs"]) == ["get", "patch", "update"]
