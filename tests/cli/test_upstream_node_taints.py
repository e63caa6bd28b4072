"""Upstream's integration tests of node taints, ported black-box: `taintplane up --clock
virtual --nodes 0 --enable-admission-plugins PodTolerationRestriction`, nodes and pods written
with the official Python client as those tests write them (no kubelet behind the nodes).

Sources (Kubernetes v1.35): test/integration/scheduler/taint/taint_test.go
(TestTaintNodeByCondition, whose API server runs PodTolerationRestriction: pods that are not
BestEffort tolerate memory-pressure) and test/integration/node/lifecycle_test.go
(TestEvictionForNoExecuteTaintAddedByUser, TestTaintBasedEvictions with DefaultTolerationSeconds).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config

from tests.cli.test_virtual_cluster_cli import Running, stop, up

NODE_RES = {"cpu": "4000m", "memory": "16Gi", "pods": "110"}
POD_RES = {"cpu": "100m", "memory": "100Mi"}


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    cluster = up(
        tmp_path_factory.mktemp("upstream-nodes"),
        tmp_path_factory.mktemp("home"),
        "--clock",
        "virtual",
        "--nodes",
        "0",
        "--enable-admission-plugins",
        "PodTolerationRestriction",
    )
    try:
        yield cluster
    finally:
        stop(cluster)


@pytest.fixture(scope="module")
def core(running: Running) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=str(running.kubeconfig)))


def advance(running: Running, duration: str) -> None:
    running.ok("clock", "advance", duration)


def no_schedule(key: str) -> dict[str, str]:
    return {"key": f"node.kubernetes.io/{key}", "operator": "Exists", "effect": "NoSchedule"}


def taints_of(core: client.CoreV1Api, node: str) -> set[tuple[str, str]]:
    return {(t.key, t.effect) for t in core.read_node(node).spec.taints or []}


BE, BU, GU = "besteffort-pod", "burstable-pod", "guarantee-pod"

# name, conditions, unschedulable, expected taints, [(pod, tolerations, fits)]
BY_CONDITION: list[tuple[str, list[tuple[str, str]], bool, set[str], list[Any]]] = [
    (
        "not-ready",
        [("Ready", "False")],
        False,
        {"not-ready"},
        [(BE, [], False), (BU, [], False), (GU, [], False), (BE, ["not-ready"], True)],
    ),
    (
        "unschedulable",
        [("Ready", "True")],
        True,
        {"unschedulable"},
        [(BE, [], False), (BU, [], False), (GU, [], False), (BE, ["unschedulable"], True)],
    ),
    (
        "memory-pressure",
        [("MemoryPressure", "True"), ("Ready", "True")],
        False,
        {"memory-pressure"},
        [
            (BE, [], False),
            (BE, ["memory-pressure"], True),
            (BE, ["disk-pressure"], False),
            (BU, [], True),
            (GU, [], True),
        ],
    ),
    (
        "disk-pressure",
        [("DiskPressure", "True"), ("Ready", "True")],
        False,
        {"disk-pressure"},
        [
            (BE, [], False),
            (BU, [], False),
            (GU, [], False),
            (BE, ["disk-pressure"], True),
            (BE, ["memory-pressure"], False),
        ],
    ),
    (
        "network-unavailable-ready",
        [("NetworkUnavailable", "True"), ("Ready", "True")],
        False,
        {"network-unavailable"},
        [(BE, [], False), (BU, [], False), (GU, [], False), (BU, ["network-unavailable"], True)],
    ),
    (
        "network-unavailable-not-ready",
        [("NetworkUnavailable", "True"), ("Ready", "False")],
        False,
        {"network-unavailable", "not-ready"},
        [
            (BE, [], False),
            (BU, [], False),
            (GU, [], False),
            (BU, ["network-unavailable"], False),
            (BU, ["network-unavailable", "not-ready"], True),
        ],
    ),
    (
        "pid-pressure",
        [("PIDPressure", "True"), ("Ready", "True")],
        False,
        {"pid-pressure"},
        [(BE, [], False), (BU, [], False), (GU, [], False), (BE, ["pid-pressure"], True)],
    ),
    (
        "multi",
        [
            ("PIDPressure", "True"),
            ("MemoryPressure", "True"),
            ("DiskPressure", "True"),
            ("Ready", "True"),
        ],
        False,
        {"disk-pressure", "memory-pressure", "pid-pressure"},
        [],
    ),
]


@pytest.mark.parametrize(
    ("name", "conditions", "unschedulable", "expected", "pods"),
    BY_CONDITION,
    ids=[case[0] for case in BY_CONDITION],
)
def test_taint_node_by_condition(
    running: Running,
    core: client.CoreV1Api,
    name: str,
    conditions: list[tuple[str, str]],
    unschedulable: bool,
    expected: set[str],
    pods: list[tuple[str, list[str], bool]],
) -> None:
    node = f"node-{name}"
    ns = f"taint-node-by-condition-{name}"
    core.create_namespace({"metadata": {"name": ns}})
    core.create_node(
        {
            "metadata": {"name": node},
            "spec": {"unschedulable": unschedulable},
            "status": {
                "capacity": NODE_RES,
                "allocatable": NODE_RES,
                "conditions": [{"type": t, "status": s} for t, s in conditions],
            },
        }
    )
    try:
        advance(running, "0s")
        want = {(f"node.kubernetes.io/{key}", "NoSchedule") for key in expected}
        assert want <= taints_of(core, node)
        created = []
        for i, (kind, tolerations, _) in enumerate(pods):
            resources = {
                BE: {},
                BU: {"requests": POD_RES},
                GU: {"requests": POD_RES, "limits": POD_RES},
            }
            pod = {
                "metadata": {"name": f"{kind}-{i}"},
                "spec": {
                    "containers": [
                        {"name": "busybox", "image": "busybox", "resources": resources[kind]}
                    ],
                    "tolerations": [no_schedule(key) for key in tolerations],
                },
            }
            created.append(core.create_namespaced_pod(ns, pod).metadata.name)
            advance(running, "0s")
        for (_, _, fits), pod_name in zip(pods, created, strict=True):
            pod = core.read_namespaced_pod(pod_name, ns)
            scheduled = next(c for c in pod.status.conditions if c.type == "PodScheduled")
            if fits:
                assert (pod.spec.node_name, scheduled.status) == (node, "True"), pod_name
            else:
                assert pod.spec.node_name is None, pod_name
                assert (scheduled.status, scheduled.reason) == ("False", "Unschedulable")
    finally:
        core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
        core.delete_node(node)
        core.delete_namespace(ns)
        advance(running, "0s")


def test_memory_pressure_toleration_is_added_to_pods_that_are_not_best_effort(
    running: Running, core: client.CoreV1Api
) -> None:
    """Why a Burstable pod fits a memory-pressure node in TestTaintNodeByCondition:
    PodTolerationRestriction's toleration, beside DefaultTolerationSeconds' two."""
    ns = "memory-pressure-toleration"
    core.create_namespace({"metadata": {"name": ns}})
    try:
        pod = core.create_namespaced_pod(
            ns,
            {
                "metadata": {"name": "burstable"},
                "spec": {
                    "containers": [
                        {"name": "busybox", "image": "busybox", "resources": {"requests": POD_RES}}
                    ]
                },
            },
        )
        assert [
            (t.key, t.operator, t.effect, t.toleration_seconds) for t in pod.spec.tolerations
        ] == [
            ("node.kubernetes.io/not-ready", "Exists", "NoExecute", 300),
            ("node.kubernetes.io/unreachable", "Exists", "NoExecute", 300),
            ("node.kubernetes.io/memory-pressure", "Exists", "NoSchedule", None),
        ]
    finally:
        core.delete_namespace(ns)


def lifecycle_nodes(core: client.CoreV1Api, zone: str, conditions: list[dict[str, str]]) -> None:
    """Three nodes excluded from disruption checks; node 1 has the case's conditions."""
    for i in range(3):
        core.create_node(
            {
                "metadata": {
                    "name": f"{zone}-{i}",
                    "labels": {
                        "topology.kubernetes.io/region": "region1",
                        "topology.kubernetes.io/zone": zone,
                        "node.kubernetes.io/exclude-disruption": "true",
                    },
                },
                "status": {
                    "capacity": NODE_RES,
                    "allocatable": NODE_RES,
                    "conditions": conditions if i == 1 else [{"type": "Ready", "status": "True"}],
                },
            }
        )


def cleanup(running: Running, core: client.CoreV1Api, zone: str, ns: str) -> None:
    core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
    for i in range(3):
        core.delete_node(f"{zone}-{i}")
    core.delete_namespace(ns)
    advance(running, "0s")


def test_eviction_for_no_execute_taint_added_by_user(
    running: Running, core: client.CoreV1Api
) -> None:
    """TestEvictionForNoExecuteTaintAddedByUser: the pod on the node a user taints NoExecute
    is being deleted, with the DisruptionTarget condition."""
    zone, ns = "by-user", "taint-no-execute"
    core.create_namespace({"metadata": {"name": ns}})
    lifecycle_nodes(core, zone, [{"type": "Ready", "status": "True"}])
    try:
        core.create_namespaced_pod(
            ns,
            {
                "metadata": {"name": "testpod"},
                "spec": {
                    "nodeName": f"{zone}-1",
                    "containers": [{"name": "container", "image": "registry.k8s.io/pause:3.10"}],
                },
            },
        )
        node = core.read_node(f"{zone}-1")
        node.spec.taints = [client.V1Taint(key="CustomTaintByUser", effect="NoExecute")]
        core.replace_node(f"{zone}-1", node)
        advance(running, "0s")
        pod = core.read_namespaced_pod("testpod", ns)
        assert pod.metadata.deletion_timestamp is not None
        assert [
            (c.status, c.reason) for c in pod.status.conditions if c.type == "DisruptionTarget"
        ] == [("True", "DeletionByTaintManager")]
    finally:
        cleanup(running, core, zone, ns)


# name, Ready status, expected NoExecute taint, pod tolerationSeconds (None: no tolerations)
BASED: list[tuple[str, str, str, int | None]] = [
    ("not-ready-200", "False", "not-ready", 200),
    ("not-ready-default", "False", "not-ready", None),
    ("not-ready-0", "False", "not-ready", 0),
    ("unreachable", "Unknown", "unreachable", -1),
]


@pytest.mark.parametrize(("name", "ready", "key", "seconds"), BASED, ids=[b[0] for b in BASED])
def test_taint_based_evictions(
    running: Running, core: client.CoreV1Api, name: str, ready: str, key: str, seconds: int | None
) -> None:
    """TestTaintBasedEvictions: the node lifecycle controller taints the node NoExecute from
    its Ready condition within a monitor period (5 s); a pod's own not-ready toleration keeps
    its tolerationSeconds, a pod without one gets DefaultTolerationSeconds' 300 s, and 0 s
    means terminating at once."""
    zone, ns = f"tbe-{name}", f"taint-based-evictions-{name}"
    core.create_namespace({"metadata": {"name": ns}})
    lifecycle_nodes(core, zone, [{"type": "Ready", "status": ready}])
    try:
        if seconds is not None and seconds >= 0:
            spec: dict[str, Any] = {
                "nodeName": f"{zone}-1",
                "terminationGracePeriodSeconds": 1,
                "containers": [{"name": "container", "image": "registry.k8s.io/pause:3.10"}],
                "tolerations": [
                    {
                        "key": "node.kubernetes.io/not-ready",
                        "operator": "Exists",
                        "effect": "NoExecute",
                        "tolerationSeconds": seconds,
                    }
                ],
            }
            core.create_namespaced_pod(ns, {"metadata": {"name": "testpod"}, "spec": spec})
        elif seconds is None:
            core.create_namespaced_pod(
                ns,
                {
                    "metadata": {"name": "testpod"},
                    "spec": {
                        "nodeName": f"{zone}-1",
                        "containers": [
                            {"name": "container", "image": "registry.k8s.io/pause:3.10"}
                        ],
                    },
                },
            )
        advance(running, "5s")
        assert (f"node.kubernetes.io/{key}", "NoExecute") in taints_of(core, f"{zone}-1")
        if seconds is None or seconds < 0:
            if seconds is None:
                pod = core.read_namespaced_pod("testpod", ns)
                assert {
                    (t.key, t.toleration_seconds)
                    for t in pod.spec.tolerations
                    if t.effect == "NoExecute"
                } == {
                    ("node.kubernetes.io/not-ready", 300),
                    ("node.kubernetes.io/unreachable", 300),
                }
                assert pod.metadata.deletion_timestamp is None
            return
        pod = core.read_namespaced_pod("testpod", ns)
        not_ready = [t for t in pod.spec.tolerations if t.key == "node.kubernetes.io/not-ready"]
        assert [t.toleration_seconds for t in not_ready] == [seconds]
        if seconds == 0:
            assert pod.metadata.deletion_timestamp is not None
        else:
            assert pod.metadata.deletion_timestamp is None
    finally:
        cleanup(running, core, zone, ns)
