"""``pods/binding`` as 1.35's setPodNodeAndMetadata, through the official Python client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from taintplane.testing import LocalCluster, local_cluster


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with local_cluster(nodes=2) as running:
        yield running


@pytest.fixture(scope="module")
def v1(cluster: LocalCluster) -> client.CoreV1Api:
    return client.CoreV1Api(cluster.kubernetes_client())


def unscheduled(v1: client.CoreV1Api, name: str, **spec: Any) -> client.V1Pod:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        # Nobody schedules it: the tests bind it themselves.
        "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "nginx"}]} | spec,
    }
    return v1.create_namespaced_pod("default", body)


def bind(v1: client.CoreV1Api, name: str, node: str, **metadata: Any) -> tuple[int, Any]:
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, **metadata},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    try:
        v1.api_client.call_api(
            f"/api/v1/namespaces/default/pods/{name}/binding",
            "POST",
            body=body,
            response_type="object",
            auth_settings=["BearerToken"],
            _return_http_data_only=True,
        )
    except ApiException as error:
        return error.status, json.loads(error.body)
    return 201, None


def test_binding_copies_annotations_labels_and_node_topology_and_clears_the_nomination(
    v1: client.CoreV1Api, cluster: LocalCluster
) -> None:
    topology = {"topology.kubernetes.io/zone": "z1", "topology.kubernetes.io/region": "r1"}
    v1.patch_node("node-2", {"metadata": {"labels": {**topology, "team": "a"}}})
    unscheduled(v1, "b1")
    v1.patch_namespaced_pod_status("b1", "default", {"status": {"nominatedNodeName": "node-1"}})
    labels = {"l": "v", "topology.kubernetes.io/zone": "from-binding"}
    assert bind(v1, "b1", "node-2", annotations={"x": "y"}, labels=labels) == (201, None)
    pod = v1.read_namespaced_pod("b1", "default")
    assert pod.spec.node_name == "node-2"
    assert pod.metadata.annotations == {"x": "y"}
    # The Binding's labels, and the node's topology labels over them (not its other labels).
    assert pod.metadata.labels == {"l": "v", **topology}
    assert pod.status.nominated_node_name is None
    scheduled = [c for c in pod.status.conditions if c.type == "PodScheduled"]
    assert [(c.status, c.reason, c.message) for c in scheduled] == [("True", None, None)]


def test_binding_uid_and_resource_version_are_preconditions(v1: client.CoreV1Api) -> None:
    pod = unscheduled(v1, "b2")
    uid, version = pod.metadata.uid, pod.metadata.resource_version
    code, status = bind(v1, "b2", "node-1", uid="not-the-uid")
    assert (code, status["reason"]) == (409, "Conflict")
    assert status["message"] == (
        'Operation cannot be fulfilled on pods "b2": Precondition failed: '
        f"UID in precondition: not-the-uid, UID in object meta: {uid}"
    )
    v1.patch_namespaced_pod("b2", "default", {"metadata": {"labels": {"touched": "yes"}}})
    current = v1.read_namespaced_pod("b2", "default").metadata.resource_version
    code, status = bind(v1, "b2", "node-1", uid=uid, resourceVersion=version)
    assert code == 409
    assert status["message"] == (
        'Operation cannot be fulfilled on pods "b2": Precondition failed: ResourceVersion in '
        f"precondition: {version}, ResourceVersion in object meta: {current}"
    )
    assert bind(v1, "b2", "node-1", uid=uid, resourceVersion=current) == (201, None)
    assert v1.read_namespaced_pod("b2", "default").spec.node_name == "node-1"


def test_a_gated_pod_cannot_be_bound(v1: client.CoreV1Api) -> None:
    unscheduled(v1, "b3", schedulingGates=[{"name": "example.com/quota"}])
    code, status = bind(v1, "b3", "node-1")
    assert code == 409
    assert status["message"] == (
        'Operation cannot be fulfilled on pods/binding "b3": '
        "pod b3 has non-empty .spec.schedulingGates"
    )
    assert v1.read_namespaced_pod("b3", "default").spec.node_name is None
