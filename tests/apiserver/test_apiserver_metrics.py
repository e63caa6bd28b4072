"""kube-apiserver's apiserver_resource_objects and the controller manager's workqueue_* on the
cluster's /metrics, scraped over HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from taintplane.api.scheme import SCHEME
from taintplane.apiserver.metrics import (
    RESOURCE_OBJECTS_HELP,
    count_resource_objects,
    stored_resources,
)
from taintplane.sim.cluster import Cluster, running_cluster
from taintplane.store.errors import StoreError

RULES = "/apis/resource.k8s.io/v1alpha3/devicetaintrules"


def rule(name: str) -> dict[str, object]:
    return {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "DeviceTaintRule",
        "metadata": {"name": name},
        "spec": {
            "deviceSelector": {"driver": "gpu.example.com"},
            "taint": {"key": "example.com/unhealthy", "effect": "NoSchedule"},
        },
    }


def samples(text: str) -> dict[str, float]:
    found = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, _, value = line.rpartition(" ")
            found[series] = float(value)
    return found


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    data_dir: Path = tmp_path_factory.mktemp("apiserver-metrics")
    with running_cluster(data_dir, components=("controller-manager",)) as running:
        yield running


def scrape(cluster: Cluster) -> str:
    response = httpx.get(f"{cluster.url}/metrics", timeout=30)
    assert response.status_code == 200
    return response.text


def test_resource_objects_counts_what_is_stored_when_scraped(cluster: Cluster) -> None:
    series = 'apiserver_resource_objects{group="resource.k8s.io",resource="devicetaintrules"}'
    assert samples(scrape(cluster))[series] == 0
    for name in ("gpu-0", "gpu-1"):
        created = httpx.post(f"{cluster.url}{RULES}", json=rule(name), timeout=30)
        assert created.status_code == 201, created.text
    assert samples(scrape(cluster))[series] == 2
    assert httpx.delete(f"{cluster.url}{RULES}/gpu-0", timeout=30).status_code == 200
    assert samples(scrape(cluster))[series] == 1


def test_resource_objects_has_one_series_per_stored_resource(cluster: Cluster) -> None:
    text = scrape(cluster)
    assert f"# HELP apiserver_resource_objects {RESOURCE_OBJECTS_HELP}" in text
    assert "# TYPE apiserver_resource_objects gauge" in text
    labelled = sorted(
        series.removeprefix("apiserver_resource_objects")
        for series in samples(text)
        if series.startswith("apiserver_resource_objects{")
    )
    assert labelled == sorted(
        f'{{group="{r.group}",resource="{r.plural}"}}' for r in stored_resources(SCHEME)
    )
    # Core Events once (events.k8s.io serves the same objects); reviews are never stored.
    assert '{group="",resource="events"}' in labelled
    assert not [s for s in labelled if "events.k8s.io" in s or "reviews" in s]
    assert samples(text)['apiserver_resource_objects{group="",resource="namespaces"}'] >= 4


def test_controller_queues_are_on_the_same_page(cluster: Cluster) -> None:
    found = samples(scrape(cluster))
    assert 'workqueue_depth{name="replicaset"}' in found
    assert 'workqueue_adds_total{name="namespace"}' in found
    assert 'workqueue_queue_duration_seconds_bucket{le="+Inf",name="deployment"}' in found


def test_families_are_sorted_by_name_and_have_no_created_series(cluster: Cluster) -> None:
    text = scrape(cluster)
    names = [line.split(" ")[2] for line in text.splitlines() if line.startswith("# HELP ")]
    assert names == sorted(names)
    assert [line for line in text.splitlines() if "_created" in line] == []


class _Unreachable:
    async def count(self, prefix: str) -> int:
        raise StoreError("etcd is unreachable")


def test_a_failed_count_is_minus_one() -> None:
    counted = asyncio.run(count_resource_objects(_Unreachable(), SCHEME))  # type: ignore[arg-type]
    assert set(counted.counts.values()) == {-1}
