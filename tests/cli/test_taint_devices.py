"""`taintplane taint devices` against a running cluster (real clock), and the real kubectl
showing and waiting on the DeviceTaintRules it manages."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from taintplane.agents.nodes import DeviceSet, NodeShape
from taintplane.cli import taint_devices
from taintplane.cli.kubeconfig import load_target
from taintplane.cli.main import cli
from taintplane.cli.taint_devices import Selection, rule_name
from taintplane.client import Client, HTTPTransport, resource
from taintplane.sim.cluster import Cluster, running_cluster
from tests.conftest import Kubectl

RULE = "taintplane-gpu.example.com-node-1-gpu-3-overheating"
KIND = "devicetaintrule.resource.k8s.io"
CLAIMS = resource("resource.k8s.io", "v1", "resourceclaims")
PODS = resource("", "v1", "pods")
NOT_AGAIN = (
    " if the effect was NoExecute. This information will not be updated again. "
    "Recreate the DeviceTaintRule to trigger an update."
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(
        tmp_path_factory.mktemp("taint-devices"),
        components=("controller-manager", "agents"),
        nodes=[
            NodeShape(name, devices=[DeviceSet("gpu.example.com", 8)])
            for name in ("node-1", "node-2")
        ],
    ) as running:
        yield running


def taint(cluster: Cluster, *args: str, stdin: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli,
        ["taint", "devices", *args, "--kubeconfig", str(cluster.kubeconfig_path)],
        input=stdin,
    )
    return result.exit_code, result.output


def call(cluster: Cluster, work: Any) -> Any:
    async def run() -> Any:
        target = load_target(str(cluster.kubeconfig_path))
        transport = HTTPTransport(target.server, token=target.token, verify=target.verify)
        try:
            return await work(Client(transport))
        finally:
            await transport.close()

    return asyncio.run(run())


def gpu_pod(cluster: Cluster, name: str, pool: str, device: str) -> None:
    """A running pod with an allocated, reserved claim for one device (status written as
    the scheduler would)."""

    async def work(client: Client) -> None:
        claim = {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}
            },
        }
        await client.create(CLAIMS, claim, namespace="default")
        pod = {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "nodeName": pool,
                "containers": [{"name": "c", "image": "cuda"}],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
            },
        }
        created = await client.create(PODS, pod, namespace="default")
        result = {"request": "gpu", "driver": "gpu.example.com", "pool": pool, "device": device}
        status = {
            "allocation": {"devices": {"results": [result]}},
            "reservedFor": [{"resource": "pods", "name": name, "uid": created["metadata"]["uid"]}],
        }
        await client.patch(
            CLAIMS, name, {"status": status}, namespace="default", subresource="status"
        )

    call(cluster, work)


def test_rule_names_are_deterministic_and_valid() -> None:
    assert rule_name(Selection.parse("gpu.example.com/node-1/gpu-3"), "overheating") == RULE
    assert (
        rule_name(Selection.parse("gpu.example.com"), "example.com/Maintenance")
        == "taintplane-gpu.example.com-example.com-maintenance"
    )
    long = rule_name(Selection.parse("d/" + "p" * 300), "k")
    assert len(long) == 253
    assert long == rule_name(Selection.parse("d/" + "p" * 300), "k")


def test_taint_a_device_then_remove_it(cluster: Cluster, tmp_path: Path) -> None:
    code, output = taint(cluster, "gpu.example.com/node-1/gpu-3", "overheating=true:NoExecute")
    assert code == 0, output
    assert output.splitlines() == [
        f"{KIND}/{RULE} created",
        "device gpu.example.com/node-1/gpu-3 tainted",
    ]
    kubectl = Kubectl(cluster.kubeconfig_path, tmp_path)
    table = kubectl("get", "devicetaintrules").splitlines()
    assert table[0].split() == ["NAME", "KEY", "VALUE", "EFFECT", "TIMEADDED", "AGE"]
    assert table[1].split()[0] == RULE
    assert kubectl("get", "devicetaintrule", RULE, "-o", "jsonpath={.spec.deviceSelector}") == (
        '{"device":"gpu-3","driver":"gpu.example.com","pool":"node-1"}'
    )
    # No pod uses the device: nothing to evict, the condition says so at once.
    waited = kubectl(
        "wait", "--for=condition=EvictionInProgress=false", f"devicetaintrule/{RULE}",
        "--timeout=20s",
    )  # fmt: skip
    assert waited == f"{KIND}/{RULE} condition met\n"
    assert kubectl(
        "get", "devicetaintrule", RULE,
        "-o", "jsonpath={.status.conditions[0].reason}",
    ) == "NotStarted"  # fmt: skip

    code, output = taint(cluster, "gpu.example.com/node-1/gpu-3", "overheating=true:NoExecute")
    assert (code, output.splitlines()[-1]) == (
        1,
        f"Error: device gpu.example.com/node-1/gpu-3 already has taint "
        f"overheating=true:NoExecute in {KIND}/{RULE}",
    )
    code, output = taint(cluster, "gpu.example.com/node-1/gpu-3", "overheating=true:NoSchedule")
    assert code == 1
    assert "use --overwrite to replace it" in output
    code, output = taint(
        cluster, "gpu.example.com/node-1/gpu-3", "overheating=true:NoSchedule", "--overwrite"
    )
    assert (code, output.splitlines()) == (
        0,
        [f"{KIND}/{RULE} configured", "device gpu.example.com/node-1/gpu-3 modified"],
    )
    code, output = taint(cluster, "--rule", RULE, "overheating=false:NoSchedule")
    assert (code, output.splitlines()) == (0, [f"{KIND}/{RULE} modified"])
    assert kubectl("get", "devicetaintrule", RULE, "-o", "jsonpath={.spec.taint.value}") == (
        "false"
    )

    code, output = taint(cluster, "gpu.example.com/node-1/gpu-3", "overheating-")
    assert (code, output.splitlines()) == (
        0,
        [f"{KIND}/{RULE} deleted", "device gpu.example.com/node-1/gpu-3 untainted"],
    )
    code, output = taint(cluster, "gpu.example.com/node-1/gpu-3", "overheating:NoExecute-")
    assert (code, output.splitlines()[-1]) == (1, 'Error: taint "overheating:NoExecute" not found')


def test_dry_run_reports_then_applies_and_kubectl_waits(cluster: Cluster, tmp_path: Path) -> None:
    gpu_pod(cluster, "trainer", "node-2", "gpu-5")
    code, output = taint(
        cluster, "gpu.example.com/node-2", "example.com/drain:NoExecute", "--dry-run", "--yes"
    )
    name = "taintplane-gpu.example.com-node-2-example.com-drain"
    assert code == 0, output
    assert output.splitlines() == [
        f"{KIND}/{name} created with effect None (dry run)",
        "8 published devices selected. 1 allocated device selected. 1 pod would be evicted in "
        "1 namespace" + NOT_AGAIN,
        f"{KIND}/{name} configured: effect NoExecute",
        "pool gpu.example.com/node-2 tainted",
    ]
    kubectl = Kubectl(cluster.kubeconfig_path, tmp_path)
    # Done once the pod is evicted and the controller's next status update (10 s) says so.
    waited = kubectl(
        "wait", "--for=condition=EvictionInProgress=false", f"devicetaintrule/{name}",
        "--timeout=40s",
    )  # fmt: skip
    assert waited == f"{KIND}/{name} condition met\n"
    message = kubectl(
        "get", "devicetaintrule", name, "-o", "jsonpath={.status.conditions[0].message}"
    )
    assert message == "1 pod evicted since starting the controller."
    code, output = taint(cluster, "gpu.example.com/node-2", "example.com/drain-")
    assert output.splitlines() == [
        f"{KIND}/{name} deleted",
        "pool gpu.example.com/node-2 untainted",
    ]


def test_dry_run_without_a_terminal_or_when_declined_leaves_nothing(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "taintplane-gpu.example.com-node-1-gpu-0-danger"
    code, output = taint(cluster, "gpu.example.com/node-1/gpu-0", "danger:NoExecute", "--dry-run")
    assert code == 1
    lines = output.splitlines()
    assert lines[0] == f"{KIND}/{name} created with effect None (dry run)"
    assert lines[1].startswith("1 published device selected. 0 allocated devices selected. ")
    assert lines[2:] == [
        f"{KIND}/{name} deleted",
        "Error: not a terminal, cannot ask whether to apply NoExecute: run with --yes to "
        "apply it without asking",
    ]
    monkeypatch.setattr(taint_devices, "_interactive", lambda: True)
    code, output = taint(
        cluster, "gpu.example.com/node-1/gpu-0", "danger:NoExecute", "--dry-run", stdin="n\n"
    )
    assert code == 0, output
    assert output.splitlines()[2:] == [
        "Apply danger:NoExecute to gpu.example.com/node-1/gpu-0? [y/N]: n",
        f"{KIND}/{name} deleted",
    ]


def test_usage_errors(cluster: Cluster) -> None:
    code, output = taint(cluster, "gpu.example.com/a/b/c", "k:NoExecute")
    assert code == 2
    assert 'invalid device selection "gpu.example.com/a/b/c"' in output
    code, output = taint(cluster, "gpu.example.com", "k:PreferNoSchedule")
    assert code == 2
    assert "invalid taint effect: PreferNoSchedule, unsupported taint effect" in output
    code, output = taint(cluster, "--rule", "nope", "k:NoExecute")
    assert (code, output.splitlines()[-1]) == (1, f'Error: {KIND} "nope" not found')
