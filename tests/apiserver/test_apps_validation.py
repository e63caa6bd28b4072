"""apps/v1 validation with upstream's paths and messages, through the API and kubectl."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from taintplane.sim.cluster import Cluster
from tests.conftest import Kubectl

BASE = "/apis/apps/v1/namespaces/default"


def workload(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        },
    }
    body.update(spec)
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": body}


def refused(cluster: Cluster, plural: str, obj: dict[str, Any]) -> str:
    with httpx.Client(base_url=cluster.url) as api:
        response = api.post(f"{BASE}/{plural}", json=obj)
    assert response.status_code == 422, response.text
    return str(response.json()["message"])


@pytest.mark.parametrize(
    ("kind", "plural", "change", "message"),
    [
        (
            "Deployment",
            "deployments",
            {
                "template": {
                    "metadata": {"labels": {"app": "other"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                }
            },
            'Deployment.apps "x" is invalid: spec.template.metadata.labels: Invalid value: '
            '{"app":"other"}: `selector` does not match template `labels`',
        ),
        (
            "Deployment",
            "deployments",
            {"replicas": -1},
            'Deployment.apps "x" is invalid: spec.replicas: Invalid value: -1: must be greater '
            "than or equal to 0",
        ),
        (
            "ReplicaSet",
            "replicasets",
            {"selector": {}},
            'ReplicaSet.apps "x" is invalid: spec.selector: Invalid value: {}: empty selector is '
            "invalid for deployment",
        ),
        (
            "DaemonSet",
            "daemonsets",
            {"selector": {}},
            'DaemonSet.apps "x" is invalid: spec.selector: Invalid value: {}: empty selector is '
            "invalid for daemonset",
        ),
        (
            "Deployment",
            "deployments",
            {
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0},
                }
            },
            'Deployment.apps "x" is invalid: spec.strategy.rollingUpdate.maxUnavailable: Invalid '
            "value: 0: may not be 0 when `maxSurge` is 0",
        ),
        (
            "Deployment",
            "deployments",
            {"minReadySeconds": 600},
            'Deployment.apps "x" is invalid: spec.progressDeadlineSeconds: Invalid value: 600: '
            "must be greater than minReadySeconds",
        ),
        (
            "Deployment",
            "deployments",
            {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "lots"}}},
            'Deployment.apps "x" is invalid: spec.strategy.rollingUpdate.maxSurge: Invalid value: '
            "\"lots\": a valid percent string must be a numeric string followed by an ending '%' "
            "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
        ),
    ],
)
def test_invalid_workloads_are_refused_with_upstreams_message(
    cluster: Cluster, kind: str, plural: str, change: dict[str, Any], message: str
) -> None:
    assert refused(cluster, plural, workload(kind, "x", **change)) == message


def test_template_restart_policy_must_be_always(cluster: Cluster) -> None:
    obj = workload("ReplicaSet", "x")
    obj["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    assert refused(cluster, "replicasets", obj) == (
        'ReplicaSet.apps "x" is invalid: spec.template.spec.restartPolicy: Unsupported value: '
        '"Never": supported values: "Always"'
    )


def test_kubectl_shows_the_selector_mismatch(kubectl: Kubectl) -> None:
    manifest = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: mismatch}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: other}}
    spec: {containers: [{name: c, image: nginx}]}
"""
    done = kubectl.run("apply", "-f", "-", stdin=manifest)
    assert done.returncode == 1
    assert done.stderr == (
        'The Deployment "mismatch" is invalid: spec.template.metadata.labels: Invalid value: '
        '{"app":"other"}: `selector` does not match template `labels`\n'
    )


def test_daemonset_collision_count_cannot_go_down(cluster: Cluster) -> None:
    with httpx.Client(base_url=cluster.url) as api:
        created = api.post(f"{BASE}/daemonsets", json=workload("DaemonSet", "collide"))
        assert created.status_code == 201, created.text
        status_url = f"{BASE}/daemonsets/collide/status"
        merge = {"Content-Type": "application/merge-patch+json"}
        raised = api.patch(status_url, json={"status": {"collisionCount": 2}}, headers=merge)
        assert raised.status_code == 200, raised.text
        lowered = api.patch(status_url, json={"status": {"collisionCount": 1}}, headers=merge)
        removed = api.patch(status_url, json={"status": {"collisionCount": None}}, headers=merge)
        negative = api.patch(status_url, json={"status": {"numberReady": -1}}, headers=merge)
    assert lowered.status_code == 422, lowered.text
    assert lowered.json()["message"] == (
        'DaemonSet.apps "collide" is invalid: status.collisionCount: Invalid value: 1: cannot '
        "be decremented"
    )
    assert removed.json()["message"] == (
        'DaemonSet.apps "collide" is invalid: status.collisionCount: Invalid value: 0: cannot '
        "be decremented"
    )
    assert negative.json()["message"] == (
        'DaemonSet.apps "collide" is invalid: status.numberReady: Invalid value: -1: must be '
        "greater than or equal to 0"
    )


@pytest.mark.parametrize(
    ("rolling", "message"),
    [
        pytest.param(
            {"maxSurge": 0, "maxUnavailable": 0},
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 "
            "when maxSurge is 0",
            id="neither",
        ),
        pytest.param(
            {"maxSurge": 1, "maxUnavailable": "10%"},
            "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when "
            "maxUnavailable is non-zero",
            id="both",
        ),
        pytest.param(
            {"maxSurge": "150%", "maxUnavailable": 0},
            'spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: "150%": must not be '
            "greater than 100%",
            id="over-100",
        ),
    ],
)
def test_daemonset_surges_or_leaves_nodes_short_never_both_nor_neither(
    cluster: Cluster, rolling: dict[str, Any], message: str
) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": rolling}
    obj = workload("DaemonSet", "x", updateStrategy=strategy)
    assert refused(cluster, "daemonsets", obj) == f'DaemonSet.apps "x" is invalid: {message}'
