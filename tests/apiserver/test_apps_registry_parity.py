"""What kube-apiserver does with apps objects that clients rely on: the status fields that
are not omitempty on create (the Python client refuses objects without them), a DaemonSet's
template generation, and what a status write may change."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s

from taintplane.sim.cluster import Cluster

APPS = "/apis/apps/v1/namespaces/default"
GENERATION = "deprecated.daemonset.template.generation"


@pytest.fixture(scope="module")
def api(cluster: Cluster) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.url, timeout=30) as http:
        yield http


def workload(name: str, **spec: Any) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
            **spec,
        },
    }


def merge(api: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = api.patch(path, json=body, headers={"Content-Type": "application/merge-patch+json"})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def test_new_replicasets_and_daemonsets_carry_their_required_status_counts(
    cluster: Cluster,
) -> None:
    config = k8s.Configuration()
    config.host = cluster.url
    with k8s.ApiClient(config) as api_client:
        apps = k8s.AppsV1Api(api_client)
        rs = apps.create_namespaced_replica_set("default", workload("rs-new", replicas=1))
        assert rs.status.replicas == 0
        ds = apps.create_namespaced_daemon_set("default", workload("ds-new"))
        counts = (
            ds.status.current_number_scheduled,
            ds.status.number_misscheduled,
            ds.status.desired_number_scheduled,
            ds.status.number_ready,
        )
        assert counts == (0, 0, 0, 0)


def test_a_daemonsets_template_generation_counts_template_changes(api: httpx.Client) -> None:
    forged = workload("ds-gen")
    forged["metadata"]["annotations"] = {GENERATION: "7"}
    created = api.post(f"{APPS}/daemonsets", json=forged).json()
    assert created["metadata"]["annotations"] == {GENERATION: "1"}
    relabelled = merge(api, f"{APPS}/daemonsets/ds-gen", {"metadata": {"labels": {"a": "b"}}})
    assert relabelled["metadata"]["annotations"][GENERATION] == "1"
    image = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "httpd"}]}}}}
    changed = api.patch(
        f"{APPS}/daemonsets/ds-gen",
        json=image,
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    ).json()
    assert changed["metadata"]["annotations"][GENERATION] == "2"
    assert changed["metadata"]["generation"] == 2


def test_a_status_write_keeps_the_metadata_it_carries(api: httpx.Client) -> None:
    api.post(f"{APPS}/replicasets", json=workload("rs-status", replicas=1))
    body = {"metadata": {"labels": {"via": "status"}, "annotations": {"a": "b"}}}
    patched = merge(api, f"{APPS}/replicasets/rs-status/status", body)
    assert patched["metadata"]["labels"] == {"via": "status"}
    assert patched["metadata"]["annotations"] == {"a": "b"}
    api.post(f"{APPS}/deployments", json=workload("deploy-status"))
    body = {"metadata": {"labels": {"via": "status"}, "annotations": {"a": "b"}}}
    deployment = merge(api, f"{APPS}/deployments/deploy-status/status", body)
    assert "labels" not in deployment["metadata"]  # deploymentStatusStrategy resets labels
    assert deployment["metadata"]["annotations"] == {"a": "b"}
