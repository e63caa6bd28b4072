"""The node lifecycle controller keeps the beta OS and architecture labels equal to the
stable ones on every node add and update (upstream's reconcileNodeLabels): added when
missing, overwritten when different, and nothing when the stable label is absent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from taintplane.agents.nodes import NodeShape
from tests.controllers.harness import NODES, Sim, simulate

LIFECYCLE = ("node-lifecycle-controller",)
OS, ARCH = "kubernetes.io/os", "kubernetes.io/arch"
BETA_OS, BETA_ARCH = "beta.kubernetes.io/os", "beta.kubernetes.io/arch"


def _bare_node(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A Node as ``kubectl create`` sends it: no kubelet behind it."""
    metadata: dict[str, Any] = {"name": name}
    if labels is not None:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "Node", "metadata": metadata}


async def _labels(sim: Sim, name: str) -> dict[str, str]:
    return dict((await sim.node(name))["metadata"].get("labels") or {})


async def _relabel(sim: Sim, name: str, labels: dict[str, str | None]) -> None:
    await sim.client.patch(NODES, name, {"metadata": {"labels": labels}})
    await sim.advance(0)


def test_beta_labels_follow_the_stable_ones(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.advance(0)
        await sim.create_node(_bare_node("n1", {OS: "linux", ARCH: "arm64", "team": "a"}))
        assert await _labels(sim, "n1") == {
            OS: "linux",
            ARCH: "arm64",
            "team": "a",
            BETA_OS: "linux",
            BETA_ARCH: "arm64",
        }
        await _relabel(sim, "n1", {BETA_OS: "windows"})
        assert (await _labels(sim, "n1"))[BETA_OS] == "linux"
        await _relabel(sim, "n1", {BETA_ARCH: None})
        assert (await _labels(sim, "n1"))[BETA_ARCH] == "arm64"
        await _relabel(sim, "n1", {ARCH: "amd64"})
        assert (await _labels(sim, "n1"))[BETA_ARCH] == "amd64"
        # Without the stable label the beta one is left as it is, however it is set.
        await _relabel(sim, "n1", {OS: None, BETA_OS: "plan9"})
        labels = await _labels(sim, "n1")
        assert (OS in labels, labels[BETA_OS]) == (False, "plan9")

    simulate(tmp_path, scenario, controllers=LIFECYCLE)


def test_nodes_without_stable_labels_are_left_alone(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.advance(0)
        await sim.create_node(_bare_node("bare"))
        await sim.create_node(_bare_node("other", {"team": "a"}))
        assert await _labels(sim, "bare") == {}
        assert await _labels(sim, "other") == {"team": "a"}

    simulate(tmp_path, scenario, controllers=LIFECYCLE)


def test_a_kubelet_registered_with_another_arch_gets_its_beta_label(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.advance(0)
        labels = await _labels(sim, "arm-1")
        assert (labels[ARCH], labels[BETA_ARCH]) == ("arm64", "arm64")

    simulate(
        tmp_path,
        scenario,
        components=("controller-manager", "agents"),
        controllers=LIFECYCLE,
        nodes=[NodeShape("arm-1", labels={ARCH: "arm64"})],
    )
