"""A Node created without status reads as kube-apiserver serializes it: NodeStatus' two struct
fields without omitempty (daemonEndpoints, nodeInfo) with their zero values, on every write."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import Kubectl

MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture(scope="module")
def api(cluster: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


ZERO_NODE_INFO = {
    "machineID": "",
    "systemUUID": "",
    "bootID": "",
    "kernelVersion": "",
    "osImage": "",
    "containerRuntimeVersion": "",
    "kubeletVersion": "",
    "kubeProxyVersion": "",
    "operatingSystem": "",
    "architecture": "",
}


def test_node_created_without_status_shows_zero_value_structs(
    api: httpx.Client, kubectl: Kubectl
) -> None:
    created = api.post("/api/v1/nodes", json={"metadata": {"name": "bare"}})
    assert created.status_code == 201, created.text
    status = {"daemonEndpoints": {"kubeletEndpoint": {"Port": 0}}, "nodeInfo": ZERO_NODE_INFO}
    assert created.json()["status"] == status
    labelled = api.patch(
        "/api/v1/nodes/bare", json={"metadata": {"labels": {"a": "b"}}}, headers=MERGE
    )
    assert labelled.json()["status"] == status
    # A status write that names only part of nodeInfo still reads with every field.
    reported = api.patch(
        "/api/v1/nodes/bare/status",
        json={"status": {"nodeInfo": {"kubeletVersion": "v1.35.0"}}},
        headers=MERGE,
    )
    assert reported.json()["status"]["nodeInfo"] == ZERO_NODE_INFO | {"kubeletVersion": "v1.35.0"}
    shown = json.loads(kubectl("get", "node", "bare", "-o", "json"))
    assert shown["status"]["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 0}}
