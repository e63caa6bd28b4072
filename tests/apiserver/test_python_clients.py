"""The official kubernetes client and lightkube, unchanged, against a real server."""

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch
from kubernetes.client.rest import ApiException
from lightkube import Client as LightClient
from lightkube import KubeConfig
from lightkube.models.core_v1 import Container, PodSpec, Toleration
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Node, Pod
from lightkube.types import PatchType


@pytest.fixture(scope="module")
def core(cluster):
    api_client = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig_path))
    yield k8s.CoreV1Api(api_client)
    api_client.close()


def test_official_client_create_list_patch_watch(core):
    start = core.list_namespaced_pod("default").metadata.resource_version
    pod = k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name="official", labels={"via": "kubernetes"}),
        spec=k8s.V1PodSpec(
            containers=[k8s.V1Container(name="c", image="nginx")],
            tolerations=[k8s.V1Toleration(key="gpu", operator="Exists", effect="NoSchedule")],
        ),
    )
    created = core.create_namespaced_pod("default", pod)
    assert created.metadata.uid
    assert created.spec.tolerations[0].key == "gpu"
    listed = core.list_namespaced_pod("default", label_selector="via=kubernetes")
    assert [p.metadata.name for p in listed.items] == ["official"]

    core.create_node(k8s.V1Node(metadata=k8s.V1ObjectMeta(name="py-node")))
    patched = core.patch_node(
        "py-node", {"spec": {"taints": [{"key": "k", "value": "v", "effect": "NoExecute"}]}}
    )
    assert [(t.key, t.value, t.effect) for t in patched.spec.taints] == [("k", "v", "NoExecute")]

    events = []
    for event in k8s_watch.Watch().stream(
        core.list_namespaced_pod, "default", resource_version=start, timeout_seconds=10
    ):
        events.append((event["type"], event["object"].metadata.name))
        if len(events) == 1:
            core.delete_namespaced_pod("official", "default")
        if len(events) == 2:
            break
    assert events == [("ADDED", "official"), ("DELETED", "official")]

    with pytest.raises(ApiException) as caught:
        core.read_namespaced_pod("official", "default")
    assert caught.value.status == 404


def test_official_client_sees_conflicts_as_409(core):
    core.create_node(k8s.V1Node(metadata=k8s.V1ObjectMeta(name="cas")))
    node = core.read_node("cas")
    core.patch_node("cas", {"metadata": {"labels": {"a": "b"}}})
    node.metadata.labels = {"x": "y"}
    with pytest.raises(ApiException) as caught:
        core.replace_node("cas", node)
    assert caught.value.status == 409


def test_lightkube_create_list_patch_watch(cluster):
    light = LightClient(config=KubeConfig.from_file(str(cluster.kubeconfig_path)))
    try:
        exercise_lightkube(light)
    finally:
        light.close()


def exercise_lightkube(light):
    pod = Pod(
        metadata=ObjectMeta(name="light", namespace="default"),
        spec=PodSpec(
            containers=[Container(name="c", image="nginx")],
            tolerations=[Toleration(key="gpu", operator="Exists")],
        ),
    )
    created = light.create(pod)
    assert created.metadata.name == "light"
    assert "light" in [p.metadata.name for p in light.list(Pod, namespace="default")]
    light.create(Node(metadata=ObjectMeta(name="light-node")))
    patched = light.patch(
        Node, "light-node", {"spec": {"unschedulable": True}}, patch_type=PatchType.STRATEGIC
    )
    assert patched.spec.unschedulable is True
    seen = []
    for kind, obj in light.watch(Pod, namespace="default", resource_version="0"):
        seen.append((kind, obj.metadata.name))
        if obj.metadata.name == "light":
            break
    assert ("ADDED", "light") in seen
    light.delete(Pod, "light", namespace="default")
