"""``kubectl drain`` against a cluster with simulated kubelets: evictions go through the
Eviction API and honour a PodDisruptionBudget; DaemonSet pods are left alone."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from taintplane.agents.nodes import NodeShape
from taintplane.sim.cluster import Cluster, running_cluster
from tests.conftest import Kubectl

MANIFESTS = """
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx}]
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule,
         labelSelector: {matchLabels: {app: web}}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: c, image: agent}]
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(
        tmp_path_factory.mktemp("drain"),
        components=("scheduler", "controller-manager", "agents"),
        nodes=[NodeShape(f"node-{i}") for i in (1, 2, 3, 4)],
    ) as running:
        yield running


@pytest.fixture(scope="module")
def kubectl(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    assert shutil.which("kubectl") is not None, "kubectl is on the CI image"
    tool = Kubectl(cluster.kubeconfig_path, tmp_path_factory.mktemp("home"))
    tool("apply", "-f", "-", stdin=MANIFESTS)
    tool("wait", "--for=jsonpath={.status.readyReplicas}=3", "rs/web", "--timeout=30s")
    tool("wait", "--for=jsonpath={.status.numberReady}=4", "ds/agent", "--timeout=30s")
    return tool


def budget(name: str, rule: str) -> str:
    # `kubectl create pdb` sends protobuf, which taintplane does not decode; apply YAML.
    return (
        f"apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: {name}}}\n"
        f"spec: {{selector: {{matchLabels: {{app: web}}}}, {rule}}}\n"
    )


def web_pod_on(kubectl: Kubectl, node: str) -> str:
    return kubectl(
        "get",
        "pods",
        "-l",
        "app=web",
        "--field-selector",
        f"spec.nodeName={node}",
        "-o",
        "jsonpath={.items[*].metadata.name}",
    )


def test_a_budget_that_allows_nothing_blocks_the_drain(kubectl: Kubectl) -> None:
    node = kubectl("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].spec.nodeName}")
    pod = web_pod_on(kubectl, node)
    kubectl("apply", "-f", "-", stdin=budget("strict", "minAvailable: 3"))
    done = kubectl.run("drain", node, "--ignore-daemonsets", "--timeout=2s")
    assert done.returncode == 1
    assert (
        f'error when evicting pods/"{pod}" -n "default" (will retry after 5s): Cannot evict '
        "pod as it would violate the pod's disruption budget." in done.stderr
    )
    assert kubectl("get", "pod", pod, "-o", "jsonpath={.status.phase}") == "Running"
    kubectl("delete", "pdb", "strict")
    kubectl("uncordon", node)


def test_a_budget_with_room_lets_the_drain_through_and_daemons_stay(kubectl: Kubectl) -> None:
    node = kubectl("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].spec.nodeName}")
    pod = web_pod_on(kubectl, node)
    daemon = kubectl(
        "get",
        "pods",
        "-l",
        "app=agent",
        "--field-selector",
        f"spec.nodeName={node}",
        "-o",
        "jsonpath={.items[0].metadata.name}",
    )
    kubectl("apply", "-f", "-", stdin=budget("room", "maxUnavailable: 1"))
    done = kubectl.run("drain", node, "--ignore-daemonsets", "--timeout=30s")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"node/{node} cordoned"
    assert f"evicting pod default/{pod}" in done.stdout
    assert f"pod/{pod} evicted" in done.stdout
    assert done.stdout.splitlines()[-1] == f"node/{node} drained"
    assert f"ignoring DaemonSet-managed Pods: default/{daemon}" in done.stderr
    # The ReplicaSet put its pod back on another node; the daemon pod stayed.
    kubectl("wait", "--for=jsonpath={.status.readyReplicas}=3", "rs/web", "--timeout=30s")
    assert web_pod_on(kubectl, node) == ""
    assert kubectl("get", "pod", daemon, "-o", "jsonpath={.spec.nodeName}") == node
    taints = kubectl("get", "node", node, "-o", "jsonpath={.spec.taints[*].key}")
    assert "node.kubernetes.io/unschedulable" in taints


def test_a_server_dry_run_drain_evicts_nothing(kubectl: Kubectl) -> None:
    node = kubectl("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].spec.nodeName}")
    pod = web_pod_on(kubectl, node)
    kubectl("delete", "pdb", "--all")  # one budget per pod: the eviction API allows no more
    kubectl("apply", "-f", "-", stdin=budget("dry", "maxUnavailable: 1"))
    kubectl("wait", "--for=jsonpath={.status.disruptionsAllowed}=1", "pdb/dry", "--timeout=30s")
    done = kubectl.run("drain", node, "--ignore-daemonsets", "--dry-run=server", "--timeout=30s")
    assert done.returncode == 0, done.stderr
    # kubectl does not wait for deletions in a dry run: no "evicted" line.
    assert done.stdout == (
        f"node/{node} cordoned (server dry run)\n"
        f"evicting pod default/{pod} (server dry run)\n"
        f"node/{node} drained (server dry run)\n"
    )
    # Nothing changed: the pod runs, unmarked; the budget still has its disruption.
    assert kubectl("get", "pod", pod, "-o", "jsonpath={.metadata.deletionTimestamp}") == ""
    conditions = kubectl("get", "pod", pod, "-o", "jsonpath={.status.conditions[*].type}")
    assert "DisruptionTarget" not in conditions
    assert kubectl("get", "pdb", "dry", "-o", "jsonpath={.status.disruptionsAllowed}") == "1"
    assert kubectl("get", "node", node, "-o", "jsonpath={.spec.unschedulable}") == ""
    kubectl("delete", "pdb", "dry")
