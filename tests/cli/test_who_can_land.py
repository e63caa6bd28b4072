"""`taintplane policy who-can-land`: dedicated nodes under a cluster whitelist, scheduled and by
spec.nodeName, and what `dedicate --evict` changes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from taintplane.admission.plugins import ALL_ORDERED_PLUGINS, DEFAULT_ON_PLUGINS, AdmissionSetup
from taintplane.admission.pod_toleration_restriction import PodTolerationRestrictionConfig
from taintplane.agents.nodes import NodeShape
from taintplane.api.tolerations import Toleration
from taintplane.cli.main import cli
from taintplane.sim.cluster import Cluster, running_cluster
from tests.conftest import Kubectl

ENABLED = tuple(
    p
    for p in ALL_ORDERED_PLUGINS
    if p in DEFAULT_ON_PLUGINS or p in ("PodTolerationRestriction", "PodNodeSelector")
)
# The cluster lets pods tolerate only the node-condition taints admission itself adds.
CLUSTER_WHITELIST = [
    Toleration(key="node.kubernetes.io/not-ready", operator="Exists", effect="NoExecute"),
    Toleration(key="node.kubernetes.io/unreachable", operator="Exists", effect="NoExecute"),
    Toleration(key="node.kubernetes.io/memory-pressure", operator="Exists", effect="NoSchedule"),
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    setup = AdmissionSetup(
        enabled=ENABLED,
        toleration_restriction=PodTolerationRestrictionConfig(whitelist=CLUSTER_WHITELIST),
    )
    with running_cluster(
        tmp_path_factory.mktemp("who"),
        components=("controller-manager", "agents"),
        nodes=[NodeShape("node-1"), NodeShape("node-2")],
        admission=setup,
    ) as running:
        yield running


def invoke(cluster: Cluster, *args: str) -> str:
    result = CliRunner().invoke(cli, [*args, "--kubeconfig", str(cluster.kubeconfig_path)])
    assert result.exit_code == 0, result.output
    return result.output


def rows(cluster: Cluster, node: str) -> dict[str, tuple[bool, bool, str]]:
    report = json.loads(invoke(cluster, "policy", "who-can-land", node, "-o", "json"))
    return {r["namespace"]: (r["scheduled"], r["direct"], r["why"]) for r in report["namespaces"]}


def test_a_dedicated_node_is_reachable_by_its_namespace_only(cluster: Cluster) -> None:
    invoke(cluster, "dedicate", "nodes", "node-1", "--to-namespace", "team-a")
    found = rows(cluster, "node-1")
    assert found["team-a"] == (True, True, "taints tolerable (namespace whitelist)")
    assert found["default"] == (
        False,
        True,
        "dedicated=team-a:NoSchedule is not tolerated by the cluster whitelist; only "
        "NoSchedule taints: spec.nodeName bypasses them",
    )
    # team-a's pods are held to their own nodes by the namespace node selector.
    assert rows(cluster, "node-2")["team-a"] == (
        False,
        False,
        "node selector node-restriction.kubernetes.io/dedicated=team-a does not match the node",
    )
    assert rows(cluster, "node-2")["default"] == (True, True, "nothing restricts it")


def test_evict_closes_the_spec_node_name_door(cluster: Cluster) -> None:
    invoke(cluster, "dedicate", "nodes", "node-1", "--to-namespace", "team-a", "--evict")
    found = rows(cluster, "node-1")
    assert found["default"] == (
        False,
        False,
        "dedicated=team-a:NoExecute is not tolerated by the cluster whitelist",
    )
    assert found["team-a"][:2] == (True, True)
    table = invoke(cluster, "policy", "who-can-land", "node-1").splitlines()
    assert table[0].split() == ["NAMESPACE", "SCHEDULED", "DIRECT", "WHY"]
    team = next(line for line in table if line.startswith("team-a"))
    assert team.split()[:3] == ["team-a", "yes", "yes"]


def test_an_old_dedication_is_pointed_out_with_its_move(cluster: Cluster, tmp_path: Path) -> None:
    kubectl = Kubectl(cluster.kubeconfig_path, tmp_path)
    # node-2 dedicated to team-z the old way: the taint, the label dedicated=team-z (which a
    # node may set on itself) and team-z's pods selecting it.
    kubectl("taint", "nodes", "node-2", "dedicated=team-z:NoSchedule")
    kubectl("label", "nodes", "node-2", "dedicated=team-z")
    kubectl("create", "namespace", "team-z")
    kubectl(
        "annotate",
        "namespace",
        "team-z",
        "scheduler.alpha.kubernetes.io/node-selector=dedicated=team-z",
    )
    try:
        result = CliRunner().invoke(
            cli, ["policy", "who-can-land", "node-2", "--kubeconfig", str(cluster.kubeconfig_path)]
        )
        assert result.exit_code == 0, result.output
        assert result.stderr == (
            "warning: node-2 is dedicated to team-z by the label dedicated=team-z, which "
            "NodeRestriction lets a node set on itself: any node that labels itself so draws "
            "team-z's pods. Move the dedication to node-restriction.kubernetes.io/dedicated, "
            "which nodes cannot set: taintplane dedicate nodes node-2 --to-namespace team-z\n"
        )
        assert rows(cluster, "node-2")["team-z"] == (
            False,
            True,
            "node selector dedicated=team-z is a label the node may set on itself; "
            "dedicated=team-z:NoSchedule is not tolerated by the cluster whitelist; only "
            "NoSchedule taints: spec.nodeName bypasses them",
        )
        # Any other node is one self-applied label away from team-z's pods.
        assert rows(cluster, "node-1")["team-z"][2].startswith(
            "node selector dedicated=team-z does not match the node (but the node may set that "
            "label on itself)"
        )
        assert (
            json.loads(invoke(cluster, "policy", "who-can-land", "node-1", "-o", "json"))[
                "warnings"
            ]
            == []
        )
        # A node labelled so without the taint: it may have labelled itself.
        kubectl("taint", "nodes", "node-2", "dedicated-")
        report = json.loads(invoke(cluster, "policy", "who-can-land", "node-2", "-o", "json"))
        assert report["warnings"] == [
            "node-2 has the label dedicated=team-z but not the taint dedicated=team-z: it may "
            "have labelled itself; a namespace that selects that label lands there"
        ]
    finally:
        kubectl("label", "nodes", "node-2", "dedicated-")
        kubectl.run("taint", "nodes", "node-2", "dedicated-")
        kubectl("delete", "namespace", "team-z", "--wait=false")
