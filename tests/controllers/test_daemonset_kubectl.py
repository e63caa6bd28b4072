"""``kubectl rollout history|undo|status daemonset`` against a cluster with simulated kubelets:
kubectl reads the DaemonSet's ControllerRevisions and patches its template back."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from taintplane.agents.nodes import NodeShape
from taintplane.sim.cluster import Cluster, running_cluster
from tests.conftest import Kubectl


def manifest(name: str, image: str) -> str:
    return f"""
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {name}
  annotations: {{kubernetes.io/change-cause: "image {image}"}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      terminationGracePeriodSeconds: 0
      containers: [{{name: c, image: "{image}"}}]
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(
        tmp_path_factory.mktemp("rollout"),
        components=("scheduler", "controller-manager", "agents"),
        nodes=[NodeShape("node-1"), NodeShape("node-2")],
    ) as running:
        yield running


@pytest.fixture(scope="module")
def kubectl(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    assert shutil.which("kubectl") is not None, "kubectl is on the CI image"
    return Kubectl(cluster.kubeconfig_path, tmp_path_factory.mktemp("home"))


def roll_out(kubectl: Kubectl, name: str, image: str) -> None:
    kubectl("apply", "-f", "-", stdin=manifest(name, image))
    done = kubectl("rollout", "status", f"daemonset/{name}", "--timeout=30s")
    assert done.splitlines()[-1] == f'daemon set "{name}" successfully rolled out'


def pod_hashes(kubectl: Kubectl, name: str) -> set[str]:
    labels = kubectl(
        "get",
        "pods",
        "-l",
        f"app={name}",
        "-o",
        "jsonpath={.items[*].metadata.labels.controller-revision-hash}",
    )
    return set(labels.split())


def revision_hash(kubectl: Kubectl, name: str, revision: int) -> str:
    return kubectl(
        "get",
        "controllerrevisions",
        "-l",
        f"app={name}",
        "-o",
        f"jsonpath={{.items[?(@.revision=={revision})].metadata.labels.controller-revision-hash}}",
    )


def test_rollout_history_lists_each_template_with_its_change_cause(kubectl: Kubectl) -> None:
    roll_out(kubectl, "history", "agent:1")
    roll_out(kubectl, "history", "agent:2")
    assert kubectl("rollout", "history", "daemonset/history") == (
        "daemonset.apps/history \n"
        "REVISION  CHANGE-CAUSE\n"
        "1         image agent:1\n"
        "2         image agent:2\n"
        "\n"
    )
    assert kubectl("rollout", "history", "daemonset/history", "--revision=1") == (
        "daemonset.apps/history with revision #1\n"
        "Pod Template:\n"
        "  Labels:\tapp=history\n"
        "  Containers:\n"
        "   c:\n"
        "    Image:\tagent:1\n"
        "    Port:\t<none>\n"
        "    Host Port:\t<none>\n"
        "    Environment:\t<none>\n"
        "    Mounts:\t<none>\n"
        "  Volumes:\t<none>\n"
        "  Node-Selectors:\t<none>\n"
        "  Tolerations:\t<none>\n"
        "\n"
    )
    missing = kubectl.run("rollout", "history", "daemonset/history", "--revision=7")
    assert (missing.returncode, missing.stderr) == (
        1,
        "error: unable to find the specified revision\n",
    )
    listed = kubectl("get", "controllerrevisions", "-l", "app=history").splitlines()
    assert listed[0].split() == ["NAME", "CONTROLLER", "REVISION", "AGE"]
    assert sorted(line.split()[1:3] for line in listed[1:]) == [
        ["daemonset.apps/history", "1"],
        ["daemonset.apps/history", "2"],
    ]
    assert pod_hashes(kubectl, "history") == {revision_hash(kubectl, "history", 2)}


def test_rollout_undo_patches_the_template_back_and_renumbers_its_revision(
    kubectl: Kubectl,
) -> None:
    roll_out(kubectl, "undo", "agent:1")
    first_hash = revision_hash(kubectl, "undo", 1)
    roll_out(kubectl, "undo", "agent:2")
    assert kubectl("rollout", "undo", "daemonset/undo") == "daemonset.apps/undo rolled back\n"
    done = kubectl("rollout", "status", "daemonset/undo", "--timeout=30s")
    assert done.splitlines()[-1] == 'daemon set "undo" successfully rolled out'
    image = "jsonpath={.spec.template.spec.containers[0].image}"
    assert kubectl("get", "daemonset/undo", "-o", image) == "agent:1"
    # The first revision is the newest again: same name, same hash on the new pods.
    assert kubectl("rollout", "history", "daemonset/undo") == (
        "daemonset.apps/undo \n"
        "REVISION  CHANGE-CAUSE\n"
        "2         image agent:2\n"
        "3         image agent:1\n"
        "\n"
    )
    assert revision_hash(kubectl, "undo", 3) == first_hash
    assert pod_hashes(kubectl, "undo") == {first_hash}

    assert kubectl("rollout", "undo", "daemonset/undo", "--to-revision=2") == (
        "daemonset.apps/undo rolled back\n"
    )
    kubectl("rollout", "status", "daemonset/undo", "--timeout=30s")
    assert kubectl("get", "daemonset/undo", "-o", image) == "agent:2"
    assert kubectl("rollout", "history", "daemonset/undo").splitlines()[2:] == [
        "3         image agent:1",
        "4         image agent:2",
        "",
    ]
    missing = kubectl.run("rollout", "undo", "daemonset/undo", "--to-revision=9")
    assert (missing.returncode, missing.stderr) == (
        1,
        "error: unable to find specified revision 9 in history\n",
    )


def test_rollout_undo_needs_a_previous_revision(kubectl: Kubectl) -> None:
    roll_out(kubectl, "single", "agent:1")
    done = kubectl.run("rollout", "undo", "daemonset/single")
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        "error: no last revision to roll back to\n",
    )


def test_rollout_status_reports_a_rollout_waiting_for_availability(kubectl: Kubectl) -> None:
    roll_out(kubectl, "slow", "agent:1")
    # An hour of minReadySeconds: the pods are replaced, ready, and not yet available.
    slow = manifest("slow", "agent:2").replace(
        "spec:\n  selector", "spec:\n  minReadySeconds: 3600\n  selector"
    )
    kubectl("apply", "-f", "-", stdin=slow)
    kubectl("wait", "--for=jsonpath={.status.updatedNumberScheduled}=2", "ds/slow", "--timeout=30s")
    kubectl("wait", "--for=jsonpath={.status.numberReady}=2", "ds/slow", "--timeout=30s")
    assert kubectl("rollout", "status", "daemonset/slow", "--watch=false") == (
        'Waiting for daemon set "slow" rollout to finish: 0 of 2 updated pods are available...\n'
    )
