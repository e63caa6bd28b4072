"""Scheduling gates (``spec.schedulingGates``) end to end, through the official Python client
and kubectl, on a virtual clock."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from taintplane.testing import LocalCluster, local_cluster
from tests.conftest import Kubectl

GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with local_cluster(nodes=1) as running:
        yield running


@pytest.fixture(scope="module")
def v1(cluster: LocalCluster) -> client.CoreV1Api:
    return client.CoreV1Api(cluster.kubernetes_client())


def create(v1: client.CoreV1Api, name: str, **spec: Any) -> client.V1Pod:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec},
    }
    return v1.create_namespaced_pod("default", body)


def refusal(call: Any, *args: Any, **kwargs: Any) -> tuple[int, str]:
    with pytest.raises(ApiException) as caught:
        call(*args, **kwargs)
    return caught.value.status, json.loads(caught.value.body)["message"]


def scheduled(pod: client.V1Pod) -> client.V1PodCondition:
    return next(c for c in pod.status.conditions if c.type == "PodScheduled")


def gates(*names: str) -> dict[str, Any]:
    return {"spec": {"schedulingGates": [{"name": n} for n in names]}}


def test_a_gated_pod_waits_with_the_gated_condition_until_its_last_gate_goes(
    v1: client.CoreV1Api, cluster: LocalCluster, tmp_path: Path
) -> None:
    created = create(v1, "gated", schedulingGates=[{"name": "example.com/a"}, {"name": "b"}])
    condition = scheduled(created)
    assert (condition.status, condition.reason, condition.message) == (
        "False",
        "SchedulingGated",
        GATED_MESSAGE,
    )
    assert condition.last_transition_time == created.metadata.creation_timestamp
    assert condition.observed_generation is None  # applySchedulingGatedCondition sets none

    cluster.advance(60)
    pod = v1.read_namespaced_pod("gated", "default")
    assert pod.spec.node_name is None
    assert scheduled(pod).reason == "SchedulingGated"
    events = v1.list_namespaced_event("default", field_selector="involvedObject.name=gated")
    assert [e.reason for e in events.items] == []  # never tried: no FailedScheduling
    kubectl = Kubectl(cluster.kubeconfig, tmp_path)
    assert kubectl("get", "pod", "gated", "--no-headers").split()[2] == "SchedulingGated"

    v1.patch_namespaced_pod("gated", "default", gates("b"))
    cluster.advance(0)
    assert v1.read_namespaced_pod("gated", "default").spec.node_name is None
    v1.patch_namespaced_pod("gated", "default", {"spec": {"schedulingGates": None}})
    cluster.advance(0)
    pod = v1.read_namespaced_pod("gated", "default")
    assert pod.spec.node_name == "node-1"
    assert (scheduled(pod).status, scheduled(pod).reason) == ("True", None)


def test_an_ungated_pod_that_does_not_fit_gets_the_schedulers_condition(
    v1: client.CoreV1Api, cluster: LocalCluster
) -> None:
    created = create(v1, "too-big", schedulingGates=[{"name": "g"}], nodeSelector={"x": "y"})
    v1.patch_namespaced_pod("too-big", "default", {"spec": {"schedulingGates": None}})
    cluster.advance(0)
    pod = v1.read_namespaced_pod("too-big", "default")
    assert pod.metadata.generation == 2  # removing a gate is a spec change
    condition = scheduled(pod)
    assert (condition.status, condition.reason) == ("False", "Unschedulable")
    assert condition.message.startswith("0/1 nodes are available:")
    assert condition.observed_generation == 2
    # Still False: UpdatePodCondition keeps the transition time of the gated condition.
    assert condition.last_transition_time == scheduled(created).last_transition_time


def test_gates_may_only_be_removed(v1: client.CoreV1Api) -> None:
    create(v1, "keep", schedulingGates=[{"name": "x"}])
    code, message = refusal(v1.patch_namespaced_pod, "keep", "default", gates("x", "y"))
    assert (code, message) == (
        422,
        'Pod "keep" is invalid: spec.schedulingGates[1].name: Forbidden: '
        "only deletion is allowed, but found new scheduling gate 'y'",
    )


def test_a_gated_pod_cannot_be_created_on_a_node(v1: client.CoreV1Api) -> None:
    code, message = refusal(
        create, v1, "placed", nodeName="node-1", schedulingGates=[{"name": "x"}]
    )
    assert (code, message) == (
        422,
        'Pod "placed" is invalid: spec.nodeName: Forbidden: '
        "cannot be set until all schedulingGates have been cleared",
    )


def test_gate_names_are_qualified_names_without_duplicates(v1: client.CoreV1Api) -> None:
    code, message = refusal(
        create, v1, "bad-gates", schedulingGates=[{"name": "a"}, {"name": "a"}, {"name": "-b"}]
    )
    assert code == 422
    assert message.startswith('Pod "bad-gates" is invalid: [spec.schedulingGates[1]: ')
    assert 'spec.schedulingGates[1]: Duplicate value: "a"' in message
    assert 'spec.schedulingGates[2]: Invalid value: "-b": name part must consist of' in message
