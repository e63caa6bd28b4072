"""The simulated DRA driver on virtual time: slices published at registration, health changes
published as taints stamped with the clock, the admin endpoint, the CLI and kubectl."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from taintplane.agents.dra_driver import RESOURCE_SLICES, UnknownDeviceError
from taintplane.agents.nodes import DeviceSet, NodeShape
from taintplane.cli.main import cli
from taintplane.client import resource
from taintplane.sim.cluster import running_cluster
from taintplane.sim.clusterfile import ClusterFileError, parse_pools
from tests.conftest import Kubectl
from tests.controllers.harness import Sim, simulate

DEVICE_CLASSES = resource("resource.k8s.io", "v1", "deviceclasses")
GPUS = DeviceSet(
    "gpu.example.com",
    count=8,
    attributes={"model": "a100", "memoryGB": 80, "mig": False},
    capacity={"memory": "80Gi"},
)


def gpu_nodes(*names: str) -> list[NodeShape]:
    return [NodeShape(name, devices=[GPUS]) for name in names]


async def slice_of(sim: Sim, name: str) -> dict[str, Any]:
    return await sim.client.get(RESOURCE_SLICES, name)


def test_each_node_publishes_a_slice_of_its_devices(tmp_path):
    async def scenario(sim: Sim) -> None:
        items, _ = await sim.client.list(RESOURCE_SLICES, "")
        assert sorted(i["metadata"]["name"] for i in items) == [
            "gpu-1-gpu.example.com",
            "gpu-2-gpu.example.com",
        ]
        published = await slice_of(sim, "gpu-1-gpu.example.com")
        assert published["spec"]["driver"] == "gpu.example.com"
        assert published["spec"]["nodeName"] == "gpu-1"
        assert published["spec"]["pool"] == {
            "name": "gpu-1",
            "generation": 1,
            "resourceSliceCount": 1,
        }
        owner = published["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"]) == ("Node", "gpu-1")
        devices = published["spec"]["devices"]
        assert [d["name"] for d in devices] == [f"gpu-{i}" for i in range(8)]
        assert devices[3] == {
            "name": "gpu-3",
            "attributes": {
                "index": {"int": 3},
                "model": {"string": "a100"},
                "memoryGB": {"int": 80},
                "mig": {"bool": False},
            },
            "capacity": {"memory": {"value": "80Gi"}},
        }
        assert not any("taints" in d for d in devices)

    simulate(
        tmp_path,
        scenario,
        components=("agents",),
        nodes=[*gpu_nodes("gpu-1", "gpu-2"), NodeShape("cpu-1")],
    )


def test_the_driver_installs_its_device_class_and_leaves_an_admins_own(tmp_path):
    async def scenario(sim: Sim) -> None:
        items, _ = await sim.client.list(DEVICE_CLASSES, "")
        assert [i["metadata"]["name"] for i in items] == ["gpu.example.com"]
        assert items[0]["spec"]["selectors"] == [
            {"cel": {"expression": 'device.driver == "gpu.example.com"'}}
        ]
        # An admin's class of a driver's name, made before the driver comes, stays as it is.
        mine = {"metadata": {"name": "tpu.example.com"}, "spec": {}}
        created = await sim.client.create(DEVICE_CLASSES, mine)
        await sim.kubelets.add([NodeShape("tpu-1", devices=[DeviceSet("tpu.example.com", 2)])])
        kept = await sim.client.get(DEVICE_CLASSES, "tpu.example.com")
        assert kept["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
        assert "selectors" not in kept["spec"]
        assert (await slice_of(sim, "tpu-1-tpu.example.com"))["spec"]["driver"] == (
            "tpu.example.com"
        )

    simulate(tmp_path, scenario, components=("agents",), nodes=gpu_nodes("gpu-1", "gpu-2"))


def test_health_changes_become_taints_with_time_from_the_clock(tmp_path):
    async def scenario(sim: Sim) -> None:
        driver = sim.kubelets.dra
        await sim.advance(120)
        await driver.set_health("gpu.example.com", "gpu-1", "gpu-3", "degraded")
        published = await slice_of(sim, "gpu-1-gpu.example.com")
        assert published["spec"]["devices"][3]["taints"] == [
            {
                "key": "gpu.example.com/degraded",
                "value": "overheating",
                "effect": "None",
                "timeAdded": "2026-01-01T00:02:00Z",
            }
        ]
        assert published["metadata"]["generation"] == 2
        # Republishing the same state keeps the time; a worse state is a new taint.
        await sim.advance(60)
        await driver.set_health("gpu.example.com", "gpu-1", "gpu-3", "degraded")
        again = await slice_of(sim, "gpu-1-gpu.example.com")
        assert again["spec"]["devices"][3]["taints"][0]["timeAdded"] == "2026-01-01T00:02:00Z"
        await driver.set_health("gpu.example.com", "gpu-1", "gpu-3", "failed")
        failed = await slice_of(sim, "gpu-1-gpu.example.com")
        assert failed["spec"]["devices"][3]["taints"] == [
            {
                "key": "gpu.example.com/failed",
                "value": "unresponsive",
                "effect": "NoExecute",
                "timeAdded": "2026-01-01T00:03:00Z",
            }
        ]
        await driver.set_health("gpu.example.com", "gpu-1", "gpu-4", "degraded", "NoSchedule")
        await driver.set_health("gpu.example.com", "gpu-1", "gpu-3", "healthy")
        healed = (await slice_of(sim, "gpu-1-gpu.example.com"))["spec"]["devices"]
        assert "taints" not in healed[3]
        assert healed[4]["taints"][0]["effect"] == "NoSchedule"
        # The other node's slice is untouched.
        other = await slice_of(sim, "gpu-2-gpu.example.com")
        assert other["metadata"]["generation"] == 1
        with pytest.raises(UnknownDeviceError):
            await driver.set_health("gpu.example.com", "gpu-1", "gpu-9", "failed")
        with pytest.raises(ValueError, match="health must be one of healthy, degraded, failed"):
            await driver.set_health("gpu.example.com", "gpu-1", "gpu-1", "sick")

    simulate(tmp_path, scenario, components=("agents",), nodes=gpu_nodes("gpu-1", "gpu-2"))


def test_cluster_file_devices():
    shapes = parse_pools(
        {
            "pools": [
                {
                    "name": "gpu",
                    "count": 2,
                    "devices": {
                        "driver": "gpu.example.com",
                        "count": 8,
                        "attributes": {"model": "a100"},
                        "capacity": {"memory": "80Gi"},
                    },
                },
                {"name": "cpu", "count": 1},
            ]
        }
    )
    assert shapes[0].devices == [
        DeviceSet("gpu.example.com", 8, "gpu", {"model": "a100"}, {"memory": "80Gi"})
    ]
    assert shapes[2].devices == []
    for devices, message in (
        ({"driver": "Not_A_Driver"}, "pools[0].devices[0].driver must be a driver name"),
        ({"driver": "gpu.example.com", "count": 65}, "count must be a whole number from 0 to 64"),
        ({"driver": "gpu.example.com", "colour": 1}, "unknown field(s) colour"),
        ({"driver": "gpu.example.com", "attributes": {"a": [1]}}, "attributes must map"),
    ):
        with pytest.raises(ClusterFileError, match=re.escape(message)):
            parse_pools({"pools": [{"name": "gpu", "devices": devices}]})


def test_cli_and_kubectl(tmp_path: Path):
    with running_cluster(tmp_path, components=("agents",), nodes=gpu_nodes("gpu-1")) as cluster:
        (tmp_path / "home").mkdir()
        kubectl = Kubectl(cluster.kubeconfig_path, tmp_path / "home")
        env = {"KUBECONFIG": str(cluster.kubeconfig_path)}
        done = CliRunner().invoke(
            cli, ["device", "health", "gpu.example.com/gpu-1/gpu-3", "failed"], env=env
        )
        assert done.exit_code == 0, done.output
        assert done.output == (
            "device/gpu.example.com/gpu-1/gpu-3 failed (resourceslice/gpu-1-gpu.example.com: "
            "gpu.example.com/failed=unresponsive:NoExecute)\n"
        )
        missing = CliRunner().invoke(
            cli, ["device", "health", "gpu.example.com/gpu-1/gpu-99", "failed"], env=env
        )
        assert missing.exit_code == 1
        assert "'gpu.example.com/gpu-1/gpu-99' is not a device of a simulated DRA driver" in (
            missing.output
        )
        lines = kubectl("get", "resourceslices").splitlines()
        assert lines[0].split() == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
        assert lines[1].split()[:4] == [
            "gpu-1-gpu.example.com",
            "gpu-1",
            "gpu.example.com",
            "gpu-1",
        ]
        jsonpath = "{.spec.devices[3].taints[0].key}={.spec.devices[3].taints[0].effect}"
        assert (
            kubectl("get", "resourceslice", "gpu-1-gpu.example.com", "-o", f"jsonpath={jsonpath}")
            == "gpu.example.com/failed=NoExecute"
        )
