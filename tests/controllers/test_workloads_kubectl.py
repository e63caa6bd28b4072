"""kubectl against a cluster running the workload controllers: apply a Deployment, wait for
its ReplicaSet and pods, and read them back as ``kubectl get deploy,rs`` prints them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from taintplane.sim.cluster import Cluster, running_cluster
from tests.conftest import Kubectl

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: "nginx:1.27"}]}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The API server and the controller manager, no scheduler: pods stay Pending."""
    with running_cluster(
        tmp_path_factory.mktemp("cluster"), components=("controller-manager",)
    ) as running:
        yield running


def test_apply_deployment_then_get_deploy_and_rs(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=DEPLOYMENT)
    kubectl("wait", "deploy/web", "--for=jsonpath={.status.updatedReplicas}=2", "--timeout=30s")
    rs_name = kubectl("get", "rs", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}")
    assert rs_name.startswith("web-")
    lines = kubectl("get", "deploy,rs").splitlines()
    assert lines[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert lines[1].split()[:4] == ["deployment.apps/web", "0/2", "2", "0"]
    assert lines[3].split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert lines[4].split()[:4] == [f"replicaset.apps/{rs_name}", "2", "2", "0"]
    annotations = kubectl(
        "get",
        "deploy/web",
        "-o",
        "jsonpath={.metadata.annotations.deployment\\.kubernetes\\.io/revision}",
    )
    assert annotations == "1"
    pods = kubectl("get", "pods", "-l", "app=web", "-o", "name").split()
    assert len(pods) == 2
    assert all(p.startswith(f"pod/{rs_name}-") for p in pods)
