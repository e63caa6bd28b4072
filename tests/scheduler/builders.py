"""Pure builders for nodes and pods (k8s testutil style)."""

from typing import Any


def make_node(
    name: str,
    *,
    taints: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    unschedulable: bool = False,
    extra: dict[str, str] | None = None,
) -> dict[str, Any]:
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def make_pod(
    name: str,
    *,
    tolerations: list[dict[str, Any]] | None = None,
    node_selector: dict[str, str] | None = None,
    requests: dict[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    priority: int | None = None,
    node_name: str = "",
    namespace: str = "default",
    **spec: Any,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "nginx"}
    if requests:
        container["resources"] = {"requests": requests}
    pod_spec: dict[str, Any] = {"containers": [container], **spec}
    if tolerations:
        pod_spec["tolerations"] = tolerations
    if node_selector:
        pod_spec["nodeSelector"] = node_selector
    if affinity:
        pod_spec["affinity"] = affinity
    if priority is not None:
        pod_spec["priority"] = priority
    if node_name:
        pod_spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": pod_spec,
    }


def taint(key: str, effect: str = "NoSchedule", value: str = "") -> dict[str, Any]:
    out = {"key": key, "effect": effect}
    if value:
        out["value"] = value
    return out
