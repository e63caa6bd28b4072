"""/metrics as kube-controller-manager exposes it (component-base): each HELP text starts
with the stability level upstream declares for the metric, and there are no ``*_created``
series (the Go client has none)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from taintplane.sim.cluster import running_cluster
from tests.client.test_workqueue_metrics import EXPECTED_HELP as WORKQUEUE_HELP
from tests.controllers.test_queue_names import UPSTREAM_QUEUE_NAMES

EXPECTED_HELP = {
    # pkg/controller/tainteviction/metrics/metrics.go
    "taint_eviction_controller_pod_deletions_total": "[ALPHA] Total number of Pods deleted by "
    "TaintEvictionController since its start.",
    "taint_eviction_controller_pod_deletion_duration_seconds": "[ALPHA] Latency, in seconds, "
    "between the time when a taint effect has been activated for the Pod and its deletion via "
    "TaintEvictionController.",
    # pkg/controller/devicetainteviction/metrics/metrics.go
    "device_taint_eviction_controller_pod_deletions_total": "[ALPHA] Total number of Pods "
    "deleted by DeviceTaintEvictionController since its start.",
    "device_taint_eviction_controller_pod_deletion_duration_seconds": "[ALPHA] Latency, in "
    "seconds, between the time when a device taint effect has been activated and a Pod's "
    "deletion via DeviceTaintEvictionController.",
    # pkg/controller/nodelifecycle/metrics.go
    "node_collector_zone_health": "[ALPHA] Gauge measuring percentage of healthy nodes per zone.",
    "node_collector_zone_size": "[ALPHA] Gauge measuring number of registered Nodes per zones.",
    "node_collector_unhealthy_nodes_in_zone": "[ALPHA] Gauge measuring number of not Ready Nodes "
    "per zones.",
    "node_collector_evictions_total": "[STABLE] Number of Node evictions that happened since "
    "current instance of NodeController started.",
    # pkg/controller/podgc/metrics/metrics.go
    "pod_gc_collector_force_delete_pods_total": "[ALPHA] Number of pods that are being "
    "forcefully deleted since the Pod GC Controller started.",
    "pod_gc_collector_force_delete_pod_errors_total": "[ALPHA] Number of errors encountered "
    "when forcefully deleting the pods since the Pod GC Controller started.",
    # staging/src/k8s.io/apiserver/pkg/storage/etcd3/metrics/metrics.go
    "apiserver_resource_objects": "[ALPHA] Number of stored objects at the time of last check "
    "split by kind. In case of a fetching error, the value will be -1.",
    **WORKQUEUE_HELP,
}


@pytest.fixture(scope="module")
def metrics(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data_dir: Path = tmp_path_factory.mktemp("metrics")
    with running_cluster(data_dir, components=("controller-manager",)) as cluster:
        response = httpx.get(f"{cluster.url}/metrics", timeout=30)
        assert response.status_code == 200
        yield response.text


def test_every_metric_has_its_upstream_stability_level(metrics: str) -> None:
    helps = {
        name: text
        for name, _, text in (
            line.removeprefix("# HELP ").partition(" ")
            for line in metrics.splitlines()
            if line.startswith("# HELP ")
        )
    }
    assert helps == EXPECTED_HELP


def test_no_created_series(metrics: str) -> None:
    assert [line for line in metrics.splitlines() if "_created" in line] == []
    assert "taint_eviction_controller_pod_deletions_total 0.0" in metrics


def test_work_queues_are_named_as_upstreams(metrics: str) -> None:
    names = {
        line.partition('{name="')[2].partition('"')[0]
        for line in metrics.splitlines()
        if line.startswith("workqueue_adds_total{")
    }
    assert names == UPSTREAM_QUEUE_NAMES
