"""`taintplane dedicate nodes`: the taint, label and namespace annotations it writes."""

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
        "node/node-1 labeled dedicated=team-a",
        "node/node-2 tainted dedicated=team-a:NoSchedule",
        "node/node-2 labeled dedicated=team-a",
        "namespace/team-a created",
        "namespace/team-a annotated: default toleration dedicated=team-a:NoSchedule, "
        "tolerations whitelist, node selector dedicated=team-a",
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
    assert kubectl("get", "node", "node-1", "-o", "jsonpath={.metadata.labels.dedicated}") == (
        "team-a"
    )
    annotations = json.loads(
        kubectl("get", "namespace", "team-a", "-o", "jsonpath={.metadata.annotations}")
    )
    assert annotations["scheduler.alpha.kubernetes.io/node-selector"] == "dedicated=team-a"
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
