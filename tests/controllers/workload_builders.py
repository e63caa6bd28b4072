"""Builders and verbs for ReplicaSet and Deployment scenarios."""

from __future__ import annotations

from typing import Any

from taintplane.api.decoding import format_time
from taintplane.client import resource
from tests.controllers.harness import PODS, Sim

REPLICASETS = resource("apps", "v1", "replicasets")
DEPLOYMENTS = resource("apps", "v1", "deployments")


def template(labels: dict[str, str], image: str = "nginx:1.27") -> dict[str, Any]:
    return {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "c", "image": image}]},
    }


def make_rs(
    name: str, replicas: int, labels: dict[str, str], *, min_ready: int = 0
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": labels},
        "template": template(labels),
    }
    if min_ready:
        spec["minReadySeconds"] = min_ready
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def make_deployment(
    name: str, replicas: int, labels: dict[str, str], *, image: str = "nginx:1.27", **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": template(labels, image),
            **spec,
        },
    }


def make_daemonset(name: str, image: str = "agent") -> dict[str, Any]:
    """A DaemonSet of one container, its pods labelled ``app: NAME``."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
        },
    }


def make_orphan(name: str, labels: dict[str, str], node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx:1.27"}]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": spec,
    }


async def warm_up(sim: Sim) -> None:
    """Let start-up work (informers syncing, the first PriorityClass list) settle."""
    await sim.advance(0)


async def pods(sim: Sim, selector: str = "") -> list[dict[str, Any]]:
    items, _ = await sim.client.list(PODS, "default", label_selector=selector)
    return sorted(items, key=lambda p: p["metadata"]["name"])


async def set_phase(sim: Sim, pod: dict[str, Any], phase: str, *, ready: bool = False) -> None:
    """What a kubelet would report: the phase and the Ready condition, stamped now."""
    now = format_time(sim.clock.now())
    status: dict[str, Any] = {"phase": phase}
    if phase == "Running":
        status["conditions"] = [
            {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": now}
        ]
    await sim.client.patch(
        PODS,
        pod["metadata"]["name"],
        {"status": status},
        namespace="default",
        subresource="status",
    )


async def run_all(sim: Sim, selector: str = "", *, ready: bool = True) -> None:
    """Every live pod matching ``selector`` Running (and Ready), then let controllers react."""
    for pod in await pods(sim, selector):
        if pod["metadata"].get("deletionTimestamp"):
            continue
        if (pod.get("status") or {}).get("phase") != "Running":
            await set_phase(sim, pod, "Running", ready=ready)
    await sim.advance(0)


async def bind(sim: Sim, pod: dict[str, Any], node: str) -> None:
    """What the scheduler does: bind the pod to ``node`` through the binding subresource."""
    name = pod["metadata"]["name"]
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": "default"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    await sim.client.post_subresource(PODS, name, "default", "binding", body)
