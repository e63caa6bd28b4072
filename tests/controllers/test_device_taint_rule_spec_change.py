"""Editing a DeviceTaintRule's spec refreshes its ``EvictionInProgress`` condition at once,
for the new generation (the API: "set once for each change to the spec"), so that
``kubectl wait --for=condition=EvictionInProgress=false`` sees it; updates that leave the
spec alone (labels, our own status writes) change nothing."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from taintplane.agents.nodes import DeviceSet, NodeShape
from taintplane.cli.main import cli
from taintplane.sim.cluster import Cluster, running_cluster
from tests.conftest import Kubectl
from tests.controllers.device_taint_helpers import (
    RULES,
    allocated_claim,
    create_rule,
    publish,
    rule,
    rule_condition,
    running_pod,
    set_effect,
    toleration,
)
from tests.controllers.harness import Sim, simulate

ONLY = ("device-taint-eviction-controller",)
KEY = "example.com/overheating"
KIND = "devicetaintrule.resource.k8s.io"
NOT_AGAIN = (
    " if the effect was NoExecute. This information will not be updated again. "
    "Recreate the DeviceTaintRule to trigger an update."
)
EIGHT_GPUS_NO_POD = (
    "8 published devices selected. 0 allocated devices selected. 0 pods would be evicted in "
    "0 different namespaces" + NOT_AGAIN
)


def expected(status: str, reason: str, message: str, generation: int, since: str) -> dict[str, Any]:
    return {
        "type": "EvictionInProgress",
        "status": status,
        "observedGeneration": generation,
        "lastTransitionTime": f"2026-01-01T00:{since}Z",
        "reason": reason,
        "message": message,
    }


async def patch_spec(sim: Sim, name: str, taint: dict[str, Any]) -> dict[str, Any]:
    patched = await sim.client.patch(RULES, name, {"spec": {"taint": taint}})
    await sim.advance(0)
    return patched


def test_each_kind_of_spec_edit_rewrites_the_condition_for_the_new_generation(
    tmp_path: Path,
) -> None:
    async def scenario(sim: Sim) -> None:
        await publish(sim, "node-1", "node-2")
        await sim.advance_to(10)
        created = await create_rule(sim, rule("my-taint-rule", KEY, "None", pool="node-1"))
        assert created["metadata"]["generation"] == 1
        assert await rule_condition(sim, "my-taint-rule") == expected(
            "False", "NoEffect", EIGHT_GPUS_NO_POD, 1, "00:10"
        )

        # Only metadata changes: same generation, the condition (and its time) stays.
        await sim.advance_to(15)
        await sim.client.patch(RULES, "my-taint-rule", {"metadata": {"labels": {"a": "b"}}})
        await sim.advance(0)
        assert (await sim.client.get(RULES, "my-taint-rule"))["metadata"]["generation"] == 1
        assert await rule_condition(sim, "my-taint-rule") == expected(
            "False", "NoEffect", EIGHT_GPUS_NO_POD, 1, "00:10"
        )

        # Effect None, another value: the same report, again, for generation 2.
        await sim.advance_to(20)
        patched = await patch_spec(sim, "my-taint-rule", {"value": "high"})
        assert patched["metadata"]["generation"] == 2
        assert await rule_condition(sim, "my-taint-rule") == expected(
            "False", "NoEffect", EIGHT_GPUS_NO_POD, 2, "00:20"
        )

        # None -> NoSchedule: no eviction for that effect.
        await sim.advance_to(30)
        await set_effect(sim, "my-taint-rule", "NoSchedule")
        assert await rule_condition(sim, "my-taint-rule") == expected(
            "False", "OtherEffect", "Eviction only happens for the NoExecute effect.", 3, "00:30"
        )

        # NoSchedule -> NoExecute, no pod uses the devices: nothing to start.
        await sim.advance_to(40)
        await set_effect(sim, "my-taint-rule", "NoExecute")
        assert await rule_condition(sim, "my-taint-rule") == expected(
            "False", "NotStarted", "", 4, "00:40"
        )

        # Within the 10 s between two updates of one generation: a new one is not held back.
        await sim.advance_to(42)
        await patch_spec(sim, "my-taint-rule", {"value": "critical"})
        assert await rule_condition(sim, "my-taint-rule") == expected(
            "False", "NotStarted", "", 5, "00:42"
        )

        # Back to None: what NoExecute would do, reported for this spec.
        await sim.advance_to(50)
        await set_effect(sim, "my-taint-rule", "None")
        assert await rule_condition(sim, "my-taint-rule") == expected(
            "False", "NoEffect", EIGHT_GPUS_NO_POD, 6, "00:50"
        )
        await sim.advance_to(3600)  # our own status writes do not start it again
        assert await rule_condition(sim, "my-taint-rule") == expected(
            "False", "NoEffect", EIGHT_GPUS_NO_POD, 6, "00:50"
        )

    simulate(tmp_path, scenario, controllers=ONLY)


def test_the_seed_repro_patch_then_advance(tmp_path: Path) -> None:
    """None on the gpu pool, patched to NoExecute, 30 s later: generation 2 is observed."""

    async def scenario(sim: Sim) -> None:
        await publish(sim, "node-1")
        await create_rule(sim, rule("my-taint-rule", KEY, "None", pool="node-1"))
        await sim.client.patch(RULES, "my-taint-rule", {"spec": {"taint": {"effect": "NoExecute"}}})
        await sim.advance(30)
        obj = await sim.client.get(RULES, "my-taint-rule")
        assert obj["metadata"]["generation"] == 2
        assert obj["status"]["conditions"] == [
            expected("False", "NotStarted", "", 2, "00:00"),
        ]

    simulate(tmp_path, scenario, controllers=ONLY)


def test_editing_a_rule_with_pods_pending_eviction(tmp_path: Path) -> None:
    """Pods that tolerate the taint for a while: a None rule's report, then NoExecute with
    pods pending, then an edit of the value while they still are: rewritten at that instant,
    not 10 s after the previous update."""

    async def scenario(sim: Sim) -> None:
        await publish(sim, "node-1")
        for name, device in (("train-0", "gpu-0"), ("train-1", "gpu-1")):
            await allocated_claim(
                sim.client, name, [("node-1", device)], tolerations=[toleration(KEY, 300)]
            )
            await running_pod(sim, name, name)
        await sim.advance_to(10)
        await create_rule(sim, rule("my-taint-rule", KEY, "None", pool="node-1"))
        assert await rule_condition(sim, "my-taint-rule") == expected(
            "False",
            "NoEffect",
            "8 published devices selected. 2 allocated devices selected. 2 pods would be "
            "evicted in 1 namespace" + NOT_AGAIN,
            1,
            "00:10",
        )

        await sim.advance_to(20)
        patched = await set_effect(sim, "my-taint-rule", "NoExecute")
        assert patched["spec"]["taint"]["timeAdded"] == "2026-01-01T00:00:20Z"
        pending = expected(
            "True", "PodsPendingEviction", "2 pods need to be evicted in 1 namespace.", 2, "00:20"
        )
        assert await rule_condition(sim, "my-taint-rule") == pending

        await sim.advance_to(25)
        await patch_spec(sim, "my-taint-rule", {"value": "very"})
        assert await rule_condition(sim, "my-taint-rule") == {
            **pending,
            "observedGeneration": 3,
            "lastTransitionTime": "2026-01-01T00:00:25Z",
        }
        await sim.advance_to(319)
        assert await sim.deletion("train-0", "default") is None
        await sim.advance_to(320)  # timeAdded 00:00:20 plus 300 s; 30 s of grace
        assert await sim.deletion("train-0", "default") == "2026-01-01T00:05:50Z"
        await sim.advance_to(330)
        assert await rule_condition(sim, "my-taint-rule") == expected(
            "False", "Completed", "2 pods evicted since starting the controller.", 3, "05:30"
        )

    simulate(tmp_path, scenario, controllers=ONLY)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(
        tmp_path_factory.mktemp("rule-spec-change"),
        components=("controller-manager", "agents"),
        nodes=[NodeShape("node-1", devices=[DeviceSet("gpu.example.com", 8)])],
    ) as running:
        yield running


def test_kubectl_wait_returns_after_an_edit(cluster: Cluster, tmp_path: Path) -> None:
    """The KEP's "safe pod eviction" with the real kubectl (real clock): a dry run with
    effect None, then an edit; `kubectl wait` returns for the edited generation."""
    assert shutil.which("kubectl") is not None, "kubectl is on the CI image"
    kubectl = Kubectl(cluster.kubeconfig_path, tmp_path)
    manifest = (
        "apiVersion: resource.k8s.io/v1alpha3\nkind: DeviceTaintRule\n"
        "metadata: {name: my-taint-rule}\n"
        "spec:\n  deviceSelector: {driver: gpu.example.com, pool: node-1}\n"
        f"  taint: {{key: {KEY}, effect: None}}\n"
    )
    kubectl("create", "-f", "-", stdin=manifest)
    wait = (
        "wait", "--for=condition=EvictionInProgress=false", "devicetaintrule/my-taint-rule",
        "--timeout=20s",
    )  # fmt: skip
    assert kubectl(*wait) == f"{KIND}/my-taint-rule condition met\n"

    for effect, reason, generation in (
        ("NoSchedule", "OtherEffect", "2"),
        ("NoExecute", "NotStarted", "3"),
    ):
        patch = json.dumps({"spec": {"taint": {"effect": effect}}})
        kubectl("patch", "devicetaintrule", "my-taint-rule", "--type=merge", "-p", patch)
        assert kubectl(*wait) == f"{KIND}/my-taint-rule condition met\n"
        observed = kubectl(
            "get", "devicetaintrule", "my-taint-rule", "-o",
            "jsonpath={.metadata.generation} {.status.conditions[0].observedGeneration} "
            "{.status.conditions[0].reason}",
        )  # fmt: skip
        assert observed == f"{generation} {generation} {reason}"

    # `taintplane taint devices --rule` edits the rule the same way.
    result = CliRunner().invoke(
        cli,
        ["taint", "devices", "--rule", "my-taint-rule", f"{KEY}=high:NoSchedule",
         "--kubeconfig", str(cluster.kubeconfig_path)],
    )  # fmt: skip
    assert (result.exit_code, result.output) == (0, f"{KIND}/my-taint-rule modified\n")
    assert kubectl(*wait) == f"{KIND}/my-taint-rule condition met\n"
    observed = kubectl(
        "get", "devicetaintrule", "my-taint-rule", "-o",
        "jsonpath={.status.conditions[0].observedGeneration} {.status.conditions[0].reason}",
    )  # fmt: skip
    assert observed == "4 OtherEffect"
    kubectl("delete", "devicetaintrule", "my-taint-rule")
