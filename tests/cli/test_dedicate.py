"""`taintplane dedicate nodes`: the taint, label and namespace annotations it writes, and how
it moves dedications made with the old label (``dedicated``, which a node may set on itself)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from taintplane.agents.nodes import NodeShape
from taintplane.cli.main import cli
from taintplane.sim.cluster import Cluster, running_cluster
from tests.conftest import Kubectl


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(
        tmp_path_factory.mktemp("dedicate"),
        components=("controller-manager", "agents"),
        nodes=[
            NodeShape("node-1"),
            NodeShape("node-2", taints=[{"key": "gpu", "effect": "NoSchedule"}]),
        ],
    ) as running:
        yield running


def dedicate(cluster: Cluster, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli, ["dedicate", "nodes", *args, "--kubeconfig", str(cluster.kubeconfig_path)]
    )
    return result.exit_code, result.stdout + (f"[stderr]{result.stderr}" if result.stderr else "")


def test_dedicating_nodes_taints_labels_and_annotates(cluster: Cluster, tmp_path: Path) -> None:
    code, output = dedicate(cluster, "node-1", "node-2", "--to-namespace", "team-a")
    assert code == 0, output
    assert output.splitlines() == [
        "node/node-1 tainted dedicated=team-a:NoSchedule",
        "node/node-1 labeled node-restriction.kubernetes.io/dedicated=team-a",
        "node/node-2 tainted dedicated=team-a:NoSchedule",
        "node/node-2 labeled node-restriction.kubernetes.io/dedicated=team-a",
        "namespace/team-a created",
        "namespace/team-a annotated: default toleration dedicated=team-a:NoSchedule, "
        "tolerations whitelist, node selector node-restriction.kubernetes.io/dedicated=team-a",
        # This cluster runs without PodTolerationRestriction: the taint alone is not enough.
        "[stderr]warning: pods of default, kube-node-lease, kube-public, kube-system can still "
        "land on node-1 (they may add the toleration, or set spec.nodeName past a NoSchedule "
        "taint); enable PodTolerationRestriction with a cluster whitelist and use --evict — see "
        "`taintplane policy who-can-land node-1`",
    ]
    kubectl = Kubectl(cluster.kubeconfig_path, tmp_path)
    taints = json.loads(kubectl("get", "node", "node-2", "-o", "jsonpath={.spec.taints}"))
    assert [(t["key"], t.get("value"), t["effect"]) for t in taints] == [
        ("gpu", None, "NoSchedule"),
        ("dedicated", "team-a", "NoSchedule"),
    ]
    labels = json.loads(kubectl("get", "node", "node-1", "-o", "jsonpath={.metadata.labels}"))
    assert labels["node-restriction.kubernetes.io/dedicated"] == "team-a"
    assert "dedicated" not in labels
    annotations = json.loads(
        kubectl("get", "namespace", "team-a", "-o", "jsonpath={.metadata.annotations}")
    )
    assert annotations["scheduler.alpha.kubernetes.io/node-selector"] == (
        "node-restriction.kubernetes.io/dedicated=team-a"
    )
    assert json.loads(annotations["scheduler.alpha.kubernetes.io/defaultTolerations"]) == [
        {"key": "dedicated", "operator": "Equal", "value": "team-a", "effect": "NoSchedule"}
    ]
    whitelist = json.loads(annotations["scheduler.alpha.kubernetes.io/tolerationsWhitelist"])
    assert [t["key"] for t in whitelist] == [
        "dedicated",
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/memory-pressure",
    ]


def test_evict_uses_no_execute_and_replaces_the_old_dedication(cluster: Cluster) -> None:
    code, output = dedicate(cluster, "node-1", "--to-namespace", "team-b", "--evict")
    assert code == 0, output
    assert output.splitlines()[0] == "node/node-1 tainted dedicated=team-b:NoExecute"
    code, output = dedicate(cluster, "nope", "--to-namespace", "team-b")
    assert code == 1
    assert output == '[stderr]Error: nodes "nope" not found (from ' + cluster.url + ")\n"


def test_an_old_dedication_is_moved_and_never_left_behind(cluster: Cluster, tmp_path: Path) -> None:
    kubectl = Kubectl(cluster.kubeconfig_path, tmp_path)
    # Two nodes dedicated to team-c the old way (label dedicated=team-c), as before.
    for name in ("node-1", "node-2"):
        kubectl.run("taint", "nodes", name, "dedicated-")
        kubectl("taint", "nodes", name, "dedicated=team-c:NoExecute")
        kubectl("label", "nodes", name, "dedicated=team-c", "--overwrite")
        kubectl("label", "nodes", name, "node-restriction.kubernetes.io/dedicated-")
    # Moving one alone would cut the other off from team-c's new node selector: refused,
    # before anything is written, with the command that moves both.
    code, output = dedicate(cluster, "node-1", "--to-namespace", "team-c", "--evict")
    assert code == 1
    assert output == (
        "[stderr]Error: node-2 is dedicated to team-c by the label dedicated=team-c, which a "
        "node may set on itself. team-c's pods will select "
        "node-restriction.kubernetes.io/dedicated=team-c instead, which NodeRestriction "
        "refuses to nodes, and would no longer land on node-2; move it too, in the same "
        "command: taintplane dedicate nodes node-1 node-2 --to-namespace team-c --evict\n"
    )
    assert kubectl("get", "node", "node-1", "-o", "jsonpath={.metadata.labels.dedicated}") == (
        "team-c"
    )
    code, output = dedicate(cluster, "node-1", "node-2", "--to-namespace", "team-c", "--evict")
    assert code == 0, output
    assert output.splitlines()[:4] == [
        "node/node-1 tainted dedicated=team-c:NoExecute",
        "node/node-1 labeled node-restriction.kubernetes.io/dedicated=team-c",
        "node/node-1 unlabeled dedicated (the old dedication's label, which a node may set on "
        "itself)",
        "node/node-2 tainted dedicated=team-c:NoExecute",
    ]
    for name in ("node-1", "node-2"):
        labels = json.loads(kubectl("get", "node", name, "-o", "jsonpath={.metadata.labels}"))
        assert labels.get("node-restriction.kubernetes.io/dedicated") == "team-c"
        assert "dedicated" not in labels
