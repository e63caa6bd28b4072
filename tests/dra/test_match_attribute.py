"""``spec.devices.constraints[].matchAttribute`` through the scheduler: the devices of the
requests a constraint covers share the attribute's value, the search backtracks to find them,
and a node with no such devices cannot take the pod (``matchAttributeConstraint``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.controllers.harness import Sim
from tests.dra.live import (
    DRIVER,
    allocation,
    claim,
    device,
    device_class,
    exactly,
    first_available,
    node_with_devices,
    result,
    results,
    run,
    schedule,
)

NUMA = f"{DRIVER}/numa"


def numa(value: int, key: str = NUMA) -> dict[str, Any]:
    return {key: {"int": value}}


def two_requests(*constraints: dict[str, Any]) -> dict[str, Any]:
    return {
        "requests": [exactly("a", "test"), exactly("b", "test")],
        "constraints": list(constraints),
    }


async def scheduled_condition(sim: Sim, pod: str) -> str:
    found = await sim.pod(pod)
    assert found is not None
    [condition] = [c for c in found["status"]["conditions"] if c["type"] == "PodScheduled"]
    return str(condition["message"])


def test_devices_of_constrained_requests_share_the_attribute(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await device_class(sim, "test")
        devices = [device("dev-0", numa(0)), device("dev-1", numa(1)), device("dev-2", numa(1))]
        await node_with_devices(sim, "n1", devices)
        await claim(sim, "c", two_requests({"matchAttribute": NUMA}))
        assert await schedule(sim, "p", "c") == "n1"
        allocated = await allocation(sim, "c")
        assert allocated is not None
        assert allocated["devices"] == {
            "results": [result("a", "n1", "dev-1"), result("b", "n1", "dev-2")]
        }

    run(tmp_path, scenario)


def test_no_matching_pair_leaves_the_pod_pending(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await device_class(sim, "test")
        await node_with_devices(sim, "n1", [device("dev-0", numa(0)), device("dev-1", numa(1))])
        await claim(sim, "c", two_requests({"matchAttribute": NUMA}))
        assert await schedule(sim, "p", "c") is None
        assert await allocation(sim, "c") is None
        assert (await scheduled_condition(sim, "p")).startswith(
            "0/1 nodes are available: 1 cannot allocate all claims."
        )

    run(tmp_path, scenario)


def test_devices_without_the_attribute_are_skipped_and_the_driver_may_omit_its_domain(
    tmp_path: Path,
) -> None:
    async def scenario(sim: Sim) -> None:
        await device_class(sim, "test")
        devices = [device("dev-0"), device("dev-1", numa(1, "numa")), device("dev-2", numa(1))]
        await node_with_devices(sim, "n1", devices)
        await claim(sim, "c", two_requests({"matchAttribute": NUMA}))
        assert await schedule(sim, "p", "c") == "n1"
        assert await results(sim, "c") == [("a", "dev-1"), ("b", "dev-2")]

    run(tmp_path, scenario)


def test_only_the_named_requests_are_constrained_and_earlier_ones_are_revisited(
    tmp_path: Path,
) -> None:
    async def scenario(sim: Sim) -> None:
        await device_class(sim, "test")
        devices = [device("dev-0", numa(0)), device("dev-1", numa(1)), device("dev-2", numa(0))]
        await node_with_devices(sim, "n1", devices)
        spec = {
            "requests": [exactly("a", "test"), exactly("b", "test"), exactly("c", "test")],
            "constraints": [{"requests": ["b", "c"], "matchAttribute": NUMA}],
        }
        await claim(sim, "c", spec)
        assert await schedule(sim, "p", "c") == "n1"
        # a's dev-0 left b and c no pair; with dev-1 for a, they get dev-0 and dev-2.
        assert await results(sim, "c") == [("a", "dev-1"), ("b", "dev-0"), ("c", "dev-2")]

    run(tmp_path, scenario)


def test_a_constraint_naming_a_subrequest_covers_it_when_chosen(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await device_class(sim, "test")
        await device_class(sim, "nothing", selector='device.driver == "other.example.com"')
        devices = [device("dev-0", numa(0)), device("dev-1", numa(1)), device("dev-2", numa(1))]
        await node_with_devices(sim, "n1", devices)
        spec = {
            "requests": [
                exactly("a", "test"),
                first_available("b", ("first", "nothing"), ("second", "test")),
            ],
            "constraints": [{"requests": ["a", "b/second"], "matchAttribute": NUMA}],
        }
        await claim(sim, "c", spec)
        assert await schedule(sim, "p", "c") == "n1"
        assert await results(sim, "c") == [("a", "dev-1"), ("b/second", "dev-2")]

    run(tmp_path, scenario)


def test_a_constraint_naming_an_unchosen_subrequest_does_not_apply(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await device_class(sim, "test")
        await device_class(sim, "nothing", selector='device.driver == "other.example.com"')
        await node_with_devices(sim, "n1", [device("dev-0", numa(0)), device("dev-1", numa(1))])
        spec = {
            "requests": [
                exactly("a", "test"),
                first_available("b", ("first", "nothing"), ("second", "test")),
            ],
            "constraints": [{"requests": ["a", "b/first"], "matchAttribute": NUMA}],
        }
        await claim(sim, "c", spec)
        assert await schedule(sim, "p", "c") == "n1"
        assert await results(sim, "c") == [("a", "dev-0"), ("b/second", "dev-1")]

    run(tmp_path, scenario)


def test_all_devices_that_break_a_constraint_are_an_error(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await device_class(sim, "test")
        await node_with_devices(sim, "n1", [device("dev-0", numa(0)), device("dev-1", numa(1))])
        spec = {
            "requests": [exactly("a", "test", allocationMode="All")],
            "constraints": [{"matchAttribute": NUMA}],
        }
        await claim(sim, "c", spec)
        assert await schedule(sim, "p", "c") is None
        assert await allocation(sim, "c") is None
        # The scheduler reports the Filter error in its own words around the allocator's.
        assert (
            "claim default/c, request a: cannot add device test.example.com/n1/dev-1 because "
            "a claim constraint would not be satisfied"
        ) in await scheduled_condition(sim, "p")

    run(tmp_path, scenario)
