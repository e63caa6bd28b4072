"""Upstream's RuntimeClass e2e tests, ported black-box: `taintplane up --clock virtual`, the
official Python client as the e2e framework's clientset, instants off the virtual clock.

Sources (Kubernetes v1.35): test/e2e/common/node/runtimeclass.go (the Conformance cases: a
non-existent or deleted RuntimeClass is Forbidden, a pod with a RuntimeClass without or with
Overhead is scheduled, the RuntimeClasses API operations) and test/e2e/node/runtimeclass.go
("should reject a Pod requesting a RuntimeClass with conflicting node selector", "should run a
Pod requesting a RuntimeClass with scheduling with taints [Serial]" and "… without taints").
The [Feature:RuntimeHandler] cases need a container runtime and are not ported: simulated
nodes accept any handler.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from tests.cli.test_virtual_cluster_cli import Running, module_cluster

HANDLER = "test-handler"  # e2enode.PreconfiguredRuntimeClassHandler


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    yield from module_cluster(tmp_path_factory, "rc")


@pytest.fixture(scope="module")
def api(running: Running) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(running.kubeconfig))


@pytest.fixture(scope="module")
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture(scope="module")
def node_api(api: client.ApiClient) -> client.NodeV1Api:
    return client.NodeV1Api(api)


def advance(running: Running, duration: str) -> None:
    running.ok("clock", "advance", duration)


def namespace(core: client.CoreV1Api, name: str) -> str:
    core.create_namespace({"metadata": {"name": name}})
    return name


def runtime_class(node_api: client.NodeV1Api, name: str, **fields: Any) -> str:
    """createRuntimeClass / newRuntimeClass: the preconfigured handler, a namespaced name."""
    body = {"metadata": {"name": name}, "handler": HANDLER, **fields}
    return str(node_api.create_runtime_class(body).metadata.name)


def runtime_class_pod(class_name: str, **spec: Any) -> dict[str, Any]:
    """e2enode.NewRuntimeClassPod."""
    return {
        "metadata": {"generateName": "test-runtimeclass-"},
        "spec": {
            "runtimeClassName": class_name,
            "containers": [{"name": "test", "image": "busybox", "command": ["true"]}],
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            **spec,
        },
    }


def forbidden(error: ApiException) -> tuple[int, str, str]:
    body = json.loads(error.body)
    return error.status, body["reason"], body["message"]


def test_a_pod_requesting_a_missing_or_deleted_runtime_class_is_forbidden(
    core: client.CoreV1Api, node_api: client.NodeV1Api
) -> None:
    """Conformance: "should reject a Pod requesting a non-existent RuntimeClass" and "… a
    deleted RuntimeClass" (expectPodRejection: a server dry run, IsForbidden)."""
    ns = namespace(core, "rc-missing")
    deleted = runtime_class(node_api, f"{ns}-delete-me", handler="runc")
    node_api.delete_runtime_class(deleted)
    for name in (f"{ns}-nonexistent", deleted):
        message = (
            f'pods "test-runtimeclass-" is forbidden: pod rejected: RuntimeClass "{name}" not found'
        )
        with pytest.raises(ApiException) as refused:
            core.create_namespaced_pod(ns, runtime_class_pod(name), dry_run="All")
        assert forbidden(refused.value) == (403, "Forbidden", message)
        # Without the dry run, the same refusal and nothing stored.
        with pytest.raises(ApiException) as again:
            core.create_namespaced_pod(ns, runtime_class_pod(name))
        assert forbidden(again.value) == (403, "Forbidden", message)
    assert core.list_namespaced_pod(ns).items == []


def test_a_pod_is_scheduled_without_and_with_overhead(
    running: Running, core: client.CoreV1Api, node_api: client.NodeV1Api
) -> None:
    """Conformance: "should schedule a Pod requesting a RuntimeClass without PodOverhead" (no
    overhead set) and "… and initialize its Overhead" (10m CPU and 1Mi from the class)."""
    ns = namespace(core, "rc-overhead")
    plain = runtime_class(node_api, f"{ns}-preconfigured-handler")
    heavy = runtime_class(
        node_api,
        f"{ns}-overhead-handler",
        overhead={"podFixed": {"cpu": "10m", "memory": "1Mi"}},
    )
    first = core.create_namespaced_pod(ns, runtime_class_pod(plain)).metadata.name
    second = core.create_namespaced_pod(ns, runtime_class_pod(heavy)).metadata.name
    advance(running, "0s")
    pods = {p.metadata.name: p for p in core.list_namespaced_pod(ns).items}
    assert sorted(pods) == sorted([first, second])
    assert all(p.spec.node_name for p in pods.values())
    assert pods[first].spec.overhead is None
    assert pods[second].spec.overhead == {"cpu": "10m", "memory": "1Mi"}


def test_overhead_counts_when_the_pod_is_fitted_to_a_node(
    running: Running, core: client.CoreV1Api, node_api: client.NodeV1Api
) -> None:
    """The pod's overhead is added to its requests by NodeResourcesFit (KEP-688): a pod that
    would fit without it is Insufficient cpu with it, in the scheduler's exact words."""
    ns = namespace(core, "rc-overhead-fit")
    allocatable = core.read_node("node-1").status.allocatable["cpu"]
    cpu = int(allocatable.rstrip("m")) * (1 if allocatable.endswith("m") else 1000)
    heavy = runtime_class(
        node_api, f"{ns}-big", overhead={"podFixed": {"cpu": "1m", "memory": "1Mi"}}
    )
    containers = [
        {"name": "test", "image": "busybox", "resources": {"requests": {"cpu": f"{cpu}m"}}}
    ]
    core.create_namespaced_pod(
        ns, {"metadata": {"name": "fits"}, "spec": {"containers": containers}}
    )
    core.create_namespaced_pod(
        ns,
        {
            "metadata": {"name": "too-big"},
            "spec": {"runtimeClassName": heavy, "containers": containers},
        },
    )
    advance(running, "0s")
    assert core.read_namespaced_pod("fits", ns).spec.node_name
    pod = core.read_namespaced_pod("too-big", ns)
    assert pod.spec.node_name is None
    scheduled = next(c for c in pod.status.conditions if c.type == "PodScheduled")
    assert (scheduled.status, scheduled.reason) == ("False", "Unschedulable")
    assert scheduled.message == (
        "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, preemption: "
        "0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )
    core.delete_namespaced_pod("fits", ns, grace_period_seconds=0)
    advance(running, "0s")


def test_conflicting_node_selector_is_forbidden(
    core: client.CoreV1Api, node_api: client.NodeV1Api
) -> None:
    """node/runtimeclass.go: "should reject a Pod requesting a RuntimeClass with conflicting
    node selector" (IsForbidden), with the admission plugin's message."""
    ns = namespace(core, "rc-conflict")
    label = "foo-7a4c1e2b-0b8f-4a0e-9d7c-2f6b1c0e5a11"
    name = runtime_class(
        node_api, f"{ns}-conflict-runtimeclass", scheduling={"nodeSelector": {label: "conflict"}}
    )
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod(ns, runtime_class_pod(name, nodeSelector={label: "bar"}))
    assert forbidden(refused.value) == (
        403,
        "Forbidden",
        f'pods "test-runtimeclass-" is forbidden: conflict: '
        f"runtimeClass.scheduling.nodeSelector[{label}] = conflict; "
        f"pod.spec.nodeSelector[{label}] = bar",
    )


@pytest.mark.parametrize("tainted", [True, False], ids=["with-taints", "without-taints"])
def test_a_pod_runs_with_the_runtime_class_scheduling(
    running: Running, core: client.CoreV1Api, node_api: client.NodeV1Api, tainted: bool
) -> None:
    """node/runtimeclass.go: "should run a Pod requesting a RuntimeClass with scheduling with
    taints [Serial]" and "… without taints": the class's node selector (two labels put on one
    node) and toleration (for the node's NoSchedule taint) are merged into the pod, which lands
    on that node."""
    suffix = "taints" if tainted else "no-taints"
    ns = namespace(core, f"rc-scheduling-{suffix}")
    foo, fizz = f"foo-{suffix}", f"fizz-{suffix}"
    node = "node-2"
    selector = {foo: "bar", fizz: "buzz"}
    toleration = {"key": foo, "operator": "Equal", "value": "bar", "effect": "NoSchedule"}
    core.patch_node(node, {"metadata": {"labels": selector}})
    scheduling: dict[str, Any] = {"nodeSelector": selector}
    if tainted:
        running.kubectl("taint", "nodes", node, f"{foo}=bar:NoSchedule")
        scheduling["tolerations"] = [toleration]
    try:
        name = runtime_class(node_api, f"{ns}-non-conflict-runtimeclass", scheduling=scheduling)
        pod = core.create_namespaced_pod(ns, runtime_class_pod(name, nodeSelector={foo: "bar"}))
        assert pod.spec.node_selector == selector
        if tainted:
            assert client.V1Toleration(**toleration) in pod.spec.tolerations
        advance(running, "0s")
        scheduled = core.read_namespaced_pod(pod.metadata.name, ns)
        assert scheduled.spec.node_name == node
        assert scheduled.status.phase != "Pending"
    finally:
        if tainted:
            running.kubectl("taint", "nodes", node, f"{foo}-")
        core.patch_node(node, {"metadata": {"labels": {foo: None, fizz: None}}})


def test_runtime_classes_api_operations(node_api: client.NodeV1Api, api: client.ApiClient) -> None:
    """Conformance: "should support RuntimeClasses API operations": discovery, create (409 the
    second time), watch, get, list by label, patch, update, delete, deletecollection."""
    groups = client.ApisApi(api).get_api_versions().groups
    assert "v1" in [v.version for g in groups if g.name == "node.k8s.io" for v in g.versions]
    resources = client.NodeV1Api(api).get_api_resources().resources
    assert "runtimeclasses" in [r.name for r in resources]
    unique = "runtimeclass-conformance"
    selector = f"test={unique}"

    def rc(n: str) -> dict[str, Any]:
        return {
            "metadata": {"name": f"{unique}-runtime-class{n}", "labels": {"test": unique}},
            "handler": f"{unique}-handler{n}",
        }

    created = node_api.create_runtime_class(rc(""))
    with pytest.raises(ApiException) as exists:
        node_api.create_runtime_class(rc(""))
    assert exists.value.status == 409
    node_api.create_runtime_class(rc("2"))
    seen: list[tuple[str, dict[str, str]]] = []
    started = threading.Event()

    def observe() -> None:
        w = watch.Watch()
        started.set()
        for event in w.stream(
            node_api.list_runtime_class, label_selector=selector, timeout_seconds=30
        ):
            obj = event["object"]
            seen.append((event["type"], dict(obj.metadata.annotations or {})))
            if event["type"] == "MODIFIED" and (obj.metadata.annotations or {}).get("updated"):
                w.stop()

    watcher = threading.Thread(target=observe)
    watcher.start()
    started.wait()
    node_api.create_runtime_class(rc("3"))
    assert node_api.read_runtime_class(created.metadata.name).metadata.uid == created.metadata.uid
    assert len(node_api.list_runtime_class(label_selector=selector).items) == 3
    patched = node_api.patch_runtime_class(
        created.metadata.name, {"metadata": {"annotations": {"patched": "true"}}}
    )
    assert patched.metadata.annotations["patched"] == "true"
    patched.metadata.annotations["updated"] = "true"
    updated = node_api.replace_runtime_class(created.metadata.name, patched)
    assert updated.metadata.annotations["updated"] == "true"
    watcher.join(timeout=30)
    assert ("MODIFIED", {"patched": "true"}) in seen
    assert ("MODIFIED", {"patched": "true", "updated": "true"}) in seen
    node_api.delete_runtime_class(created.metadata.name)
    with pytest.raises(ApiException) as missing:
        node_api.read_runtime_class(created.metadata.name)
    assert missing.value.status == 404
    assert len(node_api.list_runtime_class(label_selector=selector).items) == 2
    node_api.delete_collection_runtime_class(label_selector=selector)
    assert node_api.list_runtime_class(label_selector=selector).items == []
