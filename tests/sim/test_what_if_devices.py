"""``what-if taint devices`` against what the same DeviceTaintRule does to the cluster itself:
which pods using the devices are evicted and when, where the replacements' claims are
allocated, which stay Pending with the scheduler's message."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from taintplane.agents.nodes import DeviceSet, NodeShape
from taintplane.cli.main import cli
from taintplane.client import Client, resource
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster
from taintplane.sim.recorder import Recorder
from taintplane.sim.snapshot import read_live
from taintplane.sim.whatif_devices import (
    RULES,
    DevicePlan,
    claim_devices,
    default_device_window,
    run_device_what_if,
)
from tests.controllers.harness import START
from tests.controllers.workload_builders import DEPLOYMENTS, make_deployment

DRIVER = "gpu.example.com"
TEMPLATES = resource("resource.k8s.io", "v1", "resourceclaimtemplates")
CLAIMS = resource("resource.k8s.io", "v1", "resourceclaims")
PODS = resource("", "v1", "pods")
WINDOW = 120.0
UNSCHEDULABLE = (
    "0/2 nodes are available: 1 cannot allocate all claims, 1 node(s) didn't match Pod's node "
    "affinity/selector. still not schedulable, preemption: 0/2 nodes are available: 2 "
    "Preemption is not helpful for scheduling."
)
RULE = {
    "apiVersion": "resource.k8s.io/v1alpha3",
    "kind": "DeviceTaintRule",
    "metadata": {"name": "gpu-1-overheating"},
    "spec": {
        "deviceSelector": {"driver": DRIVER, "pool": "gpu-1"},
        "taint": {"key": "overheating", "value": "true", "effect": "NoExecute"},
    },
}
PREFER_GPU_1 = {
    "nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 100,
                "preference": {
                    "matchExpressions": [
                        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["gpu-1"]}
                    ]
                },
            }
        ]
    }
}


def gpu_deployment(name: str, **pod_spec: Any) -> dict[str, Any]:
    deployment = make_deployment(name, 1, {"app": name})
    spec = deployment["spec"]["template"]["spec"]
    spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    spec["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    spec.update(pod_spec)
    return deployment


async def build(client: Client, clock: VirtualClock) -> None:
    """gpu-1 (three devices) and gpu-2 (two), the driver's class; ``pinned`` may only run on
    gpu-1, ``mobile`` prefers it, ``patient`` is a pod of its own on gpu-1; all start there."""
    template = {
        "metadata": {"name": "one-gpu", "namespace": "default"},
        "spec": {
            "spec": {
                "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}
            }
        },
    }
    await client.create(TEMPLATES, template, "default")
    pinned = gpu_deployment("pinned", nodeSelector={"kubernetes.io/hostname": "gpu-1"})
    await client.create(DEPLOYMENTS, pinned, "default")
    await client.create(DEPLOYMENTS, gpu_deployment("mobile", affinity=PREFER_GPU_1), "default")
    # A pod of its own (nothing replaces it) whose claim tolerates the taint for 60 s.
    patient = {
        "metadata": {"name": "patient", "namespace": "default"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": DRIVER,
                            "tolerations": [
                                {
                                    "key": "overheating",
                                    "operator": "Exists",
                                    "effect": "NoExecute",
                                    "tolerationSeconds": 60,
                                }
                            ],
                        },
                    }
                ]
            }
        },
    }
    await client.create(CLAIMS, patient, "default")
    pod = {
        "metadata": {"name": "patient", "namespace": "default", "labels": {"app": "patient"}},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": "gpu-1"},
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "patient"}],
            "containers": [
                {"name": "c", "image": "nginx", "resources": {"claims": [{"name": "gpu"}]}}
            ],
        },
    }
    await client.create(PODS, pod, "default")
    await clock.advance(10)


def nodes() -> list[NodeShape]:
    return [
        NodeShape("gpu-1", devices=[DeviceSet(DRIVER, 3)]),
        NodeShape("gpu-2", devices=[DeviceSet(DRIVER, 2)]),
    ]


async def placements(client: Client) -> dict[str, tuple[str, list[str]]]:
    """Pod owner app -> (node, devices of its claims) of the pods not being deleted."""
    pods, _ = await client.list(PODS, "default")
    claims, _ = await client.list(CLAIMS, "default")
    out: dict[str, tuple[str, list[str]]] = {}
    for pod in pods:
        if pod["metadata"].get("deletionTimestamp"):
            continue
        held = [
            "/".join(d)
            for c in claims
            for r in (c.get("status") or {}).get("reservedFor") or []
            if r.get("uid") == pod["metadata"]["uid"]
            for d in claim_devices(c)
        ]
        out[pod["metadata"]["labels"]["app"]] = (pod["spec"].get("nodeName") or "", held)
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The snapshot before the rule, the what-if report on it, and what the rule did to the
    cluster itself over the same window."""
    base = tmp_path_factory.mktemp("devices")

    async def main() -> dict[str, Any]:
        clock = VirtualClock(START)
        async with in_process_cluster(base / "real", clock, nodes=nodes()) as cluster:
            client = cluster.client
            assert client is not None
            await build(client, clock)
            before = await placements(client)
            snapshot = await read_live(client)
            report = await run_device_what_if(
                snapshot, DevicePlan(RULE), start=clock.now(), window=WINDOW
            )
            recorder = Recorder(client, clock)
            await recorder.start()
            began = clock.now()
            await client.create(RULES, dict(RULE))
            await clock.advance(WINDOW)
            after = await placements(client)
            real = {
                "evicted": {
                    key: (at - began).total_seconds()
                    for key, (at, evicted, _) in recorder.deleting.items()
                    if evicted
                },
                "pending": dict(recorder.unschedulable),
            }
            await recorder.stop()
            return {
                "snapshot": snapshot,
                "before": before,
                "report": report,
                "after": after,
                "real": real,
            }

    return asyncio.run(main())


def test_both_start_on_the_tainted_pool(world: dict[str, Any]) -> None:
    assert {app: node for app, (node, _) in world["before"].items()} == {
        "pinned": "gpu-1",
        "mobile": "gpu-1",
        "patient": "gpu-1",
    }


def test_the_evictions_are_those_of_the_real_run(world: dict[str, Any]) -> None:
    report = world["report"]
    predicted = {
        f"{p.namespace}/{p.name}": report.offset(p.at)
        for p in report.affected
        if p.outcome == "evicted"
    }
    assert predicted == world["real"]["evicted"]
    # Without a toleration at timeAdded; the patient claim's after its tolerationSeconds.
    assert predicted == {
        **{f"default/{p.name}": 0.0 for p in report.affected if p.name != "patient"},
        "default/patient": 60.0,
    }
    assert all("DeletionByDeviceTaintManager" in p.detail for p in report.affected)
    assert report.devices == [(DRIVER, "gpu-1", f"gpu-{i}") for i in range(3)]


def test_replacements_go_where_they_went_and_pending_says_why(world: dict[str, Any]) -> None:
    report = world["report"]
    by_owner = {r.owner.split("/")[1].rsplit("-", 1)[0]: r for r in report.replacements}
    mobile, pinned = by_owner["mobile"], by_owner["pinned"]
    assert mobile.node == world["after"]["mobile"][0] == "gpu-2"
    [claim] = report.allocations[f"default/{mobile.name}"]
    assert claim.endswith(f": {DRIVER}/gpu-2/" + world["after"]["mobile"][1][0].rsplit("/", 1)[1])
    assert pinned.pending
    assert world["after"]["pinned"] == ("", [])
    assert pinned.detail == UNSCHEDULABLE
    assert UNSCHEDULABLE in world["real"]["pending"].values()


def test_the_default_window_covers_the_evictions(world: dict[str, Any]) -> None:
    # The patient pod's 60 s, its grace period, and time for replacements.
    assert default_device_window(world["snapshot"], DevicePlan(RULE)) == 60 + 30 + 300


def test_the_cli_on_a_snapshot_file(world: dict[str, Any], tmp_path: Path) -> None:
    import yaml

    path = tmp_path / "snapshot.yaml"
    path.write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": world["snapshot"]})
    )
    result = CliRunner().invoke(
        cli,
        [
            "what-if",
            "taint",
            "devices",
            f"{DRIVER}/gpu-1",
            "overheating=true:NoExecute",
            "--snapshot",
            str(path),
            "--until",
            "2m",
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == (
        f"What if: taintplane what-if taint devices {DRIVER}/gpu-1 overheating=true:NoExecute"
    )
    assert lines[1] == (
        f"DeviceTaintRule taintplane-gpu.example.com-gpu-1-overheating: "
        f"overheating=true:NoExecute on {DRIVER}/gpu-1/gpu-0, {DRIVER}/gpu-1/gpu-1, "
        f"{DRIVER}/gpu-1/gpu-2"
    )
    assert lines[-1] == (
        "Summary: 3 device(s) selected, 3 pod(s) using them, 3 evicted; 2 pod(s) created, "
        "1 scheduled (gpu-2: 1), 1 pending."
    )


def test_the_cli_with_a_rule_file_as_json(world: dict[str, Any], tmp_path: Path) -> None:
    import json

    import yaml

    path = tmp_path / "snapshot.yaml"
    path.write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": world["snapshot"]})
    )
    rule = tmp_path / "rule.yaml"
    rule.write_text(yaml.safe_dump(RULE))
    args = ["what-if", "taint", "devices", "-f", str(rule), "overheating:NoSchedule"]
    result = CliRunner().invoke(cli, [*args, "--snapshot", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["rule"]["spec"]["taint"] == {"key": "overheating", "effect": "NoSchedule"}
    assert report["devices"] == [f"{DRIVER}/gpu-1/gpu-{i}" for i in range(3)]
    assert {p["name"].split("-")[0]: p["outcome"] for p in report["pods"]} == {
        "mobile": "stays",
        "patient": "stays",
        "pinned": "stays",
    }
    assert all("effect NoSchedule evicts no pod" in p["detail"] for p in report["pods"])
    assert report["replacements"] == []
