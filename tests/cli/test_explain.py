"""``taintplane explain pod`` against a running server, via its kubeconfig."""

import json

import httpx
import pytest
from click.testing import CliRunner

from taintplane.cli.main import cli
from taintplane.sim.cluster import running_cluster
from tests.scheduler.builders import make_node, make_pod, taint

MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("explain"), components=()) as running:
        with httpx.Client(base_url=running.url) as api:
            nodes = [
                make_node("foo", taints=[taint("dedicated", value="banana")]),
                make_node("bar", taints=[taint("spot", "PreferNoSchedule", "true")]),
                make_node("small", cpu="500m"),
                make_node("cordoned", unschedulable=True),
            ]
            for node in nodes:
                status = node.pop("status")
                api.post("/api/v1/nodes", json=node)
                # Replace the not-ready taint TaintNodesByCondition added (this cluster has
                # no node lifecycle controller to lift it) with the node's own taints.
                api.patch(
                    f"/api/v1/nodes/{node['metadata']['name']}",
                    json={"spec": {"taints": node["spec"].get("taints")}},
                    headers=MERGE,
                )
                api.patch(
                    f"/api/v1/nodes/{node['metadata']['name']}/status",
                    json={"status": status},
                    headers=MERGE,
                )
            api.post("/api/v1/namespaces/default/pods", json=make_pod("web", requests={"cpu": "1"}))
        yield running


def run(cluster, *args):
    result = CliRunner().invoke(
        cli, ["explain", "pod", *args, "--kubeconfig", str(cluster.kubeconfig_path)]
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_explain_names_each_nodes_verdict_and_the_fixing_toleration(cluster):
    report = json.loads(run(cluster, "web", "-o", "json"))
    assert report["pod"] == "default/web"
    assert report["message"] is None
    assert report["choice"] == "bar"
    rows = {row["node"]: row for row in report["nodes"]}
    assert rows["foo"]["plugin"] == "TaintToleration"
    assert rows["foo"]["reason"] == "node(s) had untolerated taint(s)"
    assert rows["foo"]["detail"] == "untolerated dedicated=banana:NoSchedule"
    assert rows["foo"]["tolerations"] == [
        {"key": "dedicated", "operator": "Equal", "value": "banana", "effect": "NoSchedule"}
    ]
    assert rows["small"]["plugin"] == "NodeResourcesFit"
    assert rows["small"]["reason"] == "Insufficient cpu"
    assert rows["small"]["detail"] == "cpu: requests 1000m, free 500m of 500m"
    assert rows["cordoned"]["plugin"] == "NodeUnschedulable"
    assert rows["bar"]["verdict"] == "fits"
    # The only feasible node has the most untolerated PreferNoSchedule taints: normalised in
    # reverse, that is the lowest score.
    assert rows["bar"]["scores"]["TaintToleration"] == 0
    assert rows["bar"]["total"] == sum(rows["bar"]["scores"].values())


def test_explain_table_and_the_upstream_message(cluster):
    with httpx.Client(base_url=cluster.url) as api:
        api.post(
            "/api/v1/namespaces/default/pods",
            json=make_pod("stuck", node_selector={"kubernetes.io/hostname": "foo"}),
        )
    text = run(cluster, "stuck", "-n", "default")
    lines = text.splitlines()
    assert lines[0] == "Pod default/stuck"
    assert lines[1] == (
        "Scheduler: 0/4 nodes are available: 1 node(s) had untolerated taint(s), "
        "1 node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector. "
        "no new claims to deallocate, preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    )
    assert lines[3].split() == ["NODE", "VERDICT", "PLUGIN", "WHY", "SCORE"]
    assert "Tolerations that would let the pod onto rejected nodes:" in lines
    assert (
        '  foo: {"key": "dedicated", "operator": "Equal", "value": "banana", "effect": "NoSchedule"}'
        in lines
    )


def test_explain_of_a_missing_pod_is_a_clear_error(cluster):
    result = CliRunner().invoke(
        cli, ["explain", "pod", "nope", "--kubeconfig", str(cluster.kubeconfig_path)]
    )
    assert result.exit_code == 1
    assert result.output == f'Error: pods "nope" not found (from {cluster.url})\n'


def test_explain_names_the_failing_requirement_of_each_required_affinity_term(cluster):
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "disktype", "operator": "In", "values": ["ssd"]}
                        ]
                    },
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["foo"]}
                        ]
                    },
                ]
            }
        }
    }
    with httpx.Client(base_url=cluster.url) as api:
        api.post(
            "/api/v1/namespaces/default/pods",
            json=make_pod("picky", affinity=affinity, node_selector={"zone": "z1"}),
        )
    report = json.loads(run(cluster, "picky", "-n", "default", "-o", "json"))
    bar = next(row for row in report["nodes"] if row["node"] == "bar")
    assert bar["plugin"] == "NodeAffinity"
    assert bar["detail"] == (
        "nodeSelector zone=z1 (node has <none>); required node affinity: "
        "term 0: disktype In [ssd] (node has <none>); term 1: metadata.name In [foo] "
        "(node has bar)"
    )


def test_explain_shows_the_preemption_it_would_do(cluster):
    with httpx.Client(base_url=cluster.url) as api:
        api.post(
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            json={"metadata": {"name": "urgent"}, "value": 1000},
        )
        api.post(
            "/api/v1/namespaces/default/pods",
            json=make_pod("filler", node_name="small", requests={"cpu": "400m"}),
        )
        api.post(
            "/api/v1/namespaces/default/pods",
            json=make_pod(
                "urgent",
                requests={"cpu": "300m"},
                node_selector={"kubernetes.io/hostname": "small"},
                priorityClassName="urgent",
            ),
        )
    report = json.loads(run(cluster, "urgent", "-n", "default", "-o", "json"))
    assert report["preemption"] == {"node": "small", "victims": ["default/filler"]}
    lines = run(cluster, "urgent", "-n", "default").splitlines()
    assert lines[2] == "Preemption would nominate small, evicting default/filler"
