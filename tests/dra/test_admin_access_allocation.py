"""``adminAccess`` in the allocator, through the scheduler: an admin request may get devices
other claims hold (but not one its own claim already has), its results say
``adminAccess: true``, and they take no device from later claims — while, in one pod's
scheduling, a device an admin request was just given is not given to a normal request of
another claim (``allocateDevice``, ``deviceInUse``, ``allocatingDeviceForClaim``)."""

from __future__ import annotations

from pathlib import Path

from taintplane.client import resource
from tests.controllers.harness import Sim
from tests.dra.live import (
    allocation,
    claim,
    device,
    device_class,
    exactly,
    node_with_devices,
    result,
    results,
    run,
    schedule,
)

NAMESPACES = resource("", "v1", "namespaces")


async def setup(sim: Sim, count: int) -> None:
    # Upstream admits admin-access claims only in namespaces labelled so.
    await sim.client.patch(
        NAMESPACES,
        "default",
        {"metadata": {"labels": {"resource.kubernetes.io/admin-access": "true"}}},
    )
    await device_class(sim, "gpu")
    await node_with_devices(sim, "n1", [device(f"gpu-{i}") for i in range(count)])


def test_admin_access_gets_held_devices_and_leaves_them_to_others(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await setup(sim, 3)
        await claim(sim, "held", {"requests": [exactly("gpu", "gpu")]})
        assert await schedule(sim, "holder", "held") == "n1"
        assert await results(sim, "held") == [("gpu", "gpu-0")]

        admin = exactly("gpu", "gpu", adminAccess=True, allocationMode="All")
        await claim(sim, "admin", {"requests": [admin]})
        assert await schedule(sim, "monitor", "admin") == "n1"
        allocated = await allocation(sim, "admin")
        assert allocated is not None
        assert allocated["devices"] == {
            "results": [result("gpu", "n1", f"gpu-{i}", adminAccess=True) for i in range(3)]
        }

        # The admin results hold nothing: the two devices "held" does not have are free.
        await claim(sim, "two", {"requests": [exactly("gpu", "gpu", count=2)]})
        assert await schedule(sim, "worker", "two") == "n1"
        assert await results(sim, "two") == [("gpu", "gpu-1"), ("gpu", "gpu-2")]

    run(tmp_path, scenario)


def test_an_admin_request_does_not_get_a_device_of_its_own_claim_twice(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await setup(sim, 2)
        requests = [
            exactly("first", "gpu", adminAccess=True),
            exactly("second", "gpu", adminAccess=True),
        ]
        await claim(sim, "admin", {"requests": requests})
        assert await schedule(sim, "monitor", "admin") == "n1"
        allocated = await allocation(sim, "admin")
        assert allocated is not None
        assert allocated["devices"]["results"] == [
            result("first", "n1", "gpu-0", adminAccess=True),
            result("second", "n1", "gpu-1", adminAccess=True),
        ]

    run(tmp_path, scenario)


def test_within_one_pod_admin_shares_a_new_device_but_normal_requests_do_not(
    tmp_path: Path,
) -> None:
    async def scenario(sim: Sim) -> None:
        await setup(sim, 2)
        await claim(sim, "admin", {"requests": [exactly("gpu", "gpu", adminAccess=True)]})
        await claim(sim, "normal", {"requests": [exactly("gpu", "gpu")]})
        # The admin claim first: the device it is given in this attempt is not free for the
        # normal claim, which gets the other one.
        assert await schedule(sim, "p1", "admin", "normal") == "n1"
        assert await results(sim, "admin") == [("gpu", "gpu-0")]
        assert await results(sim, "normal") == [("gpu", "gpu-1")]

        await claim(sim, "normal-2", {"requests": [exactly("gpu", "gpu")]})
        await claim(sim, "admin-2", {"requests": [exactly("gpu", "gpu", adminAccess=True)]})
        # The normal claim first: gpu-0 is free (an admin result holds nothing); the admin
        # request may then have the device just given to another claim.
        assert await schedule(sim, "p2", "normal-2", "admin-2") == "n1"
        assert await results(sim, "normal-2") == [("gpu", "gpu-0")]
        assert await results(sim, "admin-2") == [("gpu", "gpu-0")]

    run(tmp_path, scenario)
