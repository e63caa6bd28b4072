"""The DaemonSet controller remembers ``NodeShouldRunDaemonPod`` per DaemonSet and node, and
asks again when the template (generation) or the node (resourceVersion) changes."""

from __future__ import annotations

from typing import Any, cast

from taintplane.client import Client
from taintplane.client.shared import SharedInformers
from taintplane.clock import VirtualClock
from taintplane.controllers.daemonset import DaemonSetController


def daemonset(generation: int, role: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "agent",
            "namespace": "default",
            "uid": "u1",
            "generation": generation,
        },
        "spec": {"template": {"spec": {"nodeSelector": {"role": role}}}},
    }


def node(
    version: str, labels: dict[str, str], taints: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {"name": "n1", "resourceVersion": version, "labels": labels},
        "spec": {"taints": taints or []},
    }


def test_should_run_follows_node_and_template_changes() -> None:
    client = cast(Client, None)  # never used: nothing runs
    controller = DaemonSetController(client, VirtualClock(), SharedInformers(client))
    assert controller.should_run(node("1", {}), daemonset(1, "x")) == (False, False)
    assert controller.should_run(node("2", {"role": "x"}), daemonset(1, "x")) == (True, True)
    assert controller.should_run(node("2", {"role": "x"}), daemonset(2, "y")) == (False, False)
    evicting = [{"key": "k", "effect": "NoExecute"}]
    assert controller.should_run(node("3", {"role": "y"}, evicting), daemonset(2, "y")) == (
        False,
        False,
    )
    blocking = [{"key": "k", "effect": "NoSchedule"}]
    assert controller.should_run(node("4", {"role": "y"}, blocking), daemonset(2, "y")) == (
        False,
        True,
    )
    controller._daemonset_deleted(daemonset(2, "y"))
    assert controller._should_run == {}
