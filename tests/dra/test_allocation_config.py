"""``status.allocation.devices.config`` through the scheduler, as 1.35's allocator writes it
(kubernetes#134793): a class's configurations once, naming the requests that use the class
(``req/sub`` for a chosen subrequest), then the claim's, their ``requests`` as written, each
once per request of the claim it names — none for a subrequest that was not chosen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.controllers.harness import Sim
from tests.dra.live import (
    allocation,
    claim,
    device,
    device_class,
    exactly,
    first_available,
    node_with_devices,
    opaque,
    run,
    schedule,
)


async def config_of(sim: Sim, name: str) -> list[dict[str, Any]]:
    allocated = await allocation(sim, name)
    assert allocated is not None, f"claim {name} is not allocated"
    return list(allocated["devices"].get("config") or [])


def test_class_configs_once_per_class_naming_its_requests_then_the_claims(
    tmp_path: Path,
) -> None:
    async def scenario(sim: Sim) -> None:
        await device_class(sim, "gpu", config=[opaque(gpu=1), opaque(gpu=2)])
        await device_class(sim, "nic", config=[opaque(nic=1)])
        await node_with_devices(sim, "n1", [device(f"dev-{i}") for i in range(3)])
        spec = {
            "requests": [exactly("a", "gpu"), exactly("b", "nic"), exactly("c", "gpu")],
            "config": [
                {"requests": ["c"], **opaque(claim="c")},
                opaque(claim="all"),
                {"requests": ["a", "b", "c"], **opaque(claim="every")},
            ],
        }
        await claim(sim, "c", spec)
        assert await schedule(sim, "p", "c") == "n1"
        every = {"source": "FromClaim", "requests": ["a", "b", "c"], **opaque(claim="every")}
        assert await config_of(sim, "c") == [
            {"source": "FromClass", "requests": ["a", "c"], **opaque(gpu=1)},
            {"source": "FromClass", "requests": ["a", "c"], **opaque(gpu=2)},
            {"source": "FromClass", "requests": ["b"], **opaque(nic=1)},
            {"source": "FromClaim", "requests": ["c"], **opaque(claim="c")},
            {"source": "FromClaim", **opaque(claim="all")},
            # 1.35 copies a claim's configuration once for every request it names.
            every,
            every,
            every,
        ]

    run(tmp_path, scenario)


def test_a_single_request_keeps_its_name_in_the_class_config(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await device_class(sim, "gpu", config=[opaque(gpu=1)])
        await node_with_devices(sim, "n1", [device("dev-0")])
        await claim(sim, "c", {"requests": [exactly("gpu", "gpu")]})
        assert await schedule(sim, "p", "c") == "n1"
        assert await config_of(sim, "c") == [
            {"source": "FromClass", "requests": ["gpu"], **opaque(gpu=1)}
        ]

    run(tmp_path, scenario)


def test_only_the_chosen_subrequests_configs_are_copied(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await device_class(sim, "gpu", config=[opaque(gpu=1)])
        await device_class(
            sim, "big", selector='device.driver == "other.example.com"', config=[opaque(big=1)]
        )
        await node_with_devices(sim, "n1", [device("dev-0")])
        spec = {
            "requests": [first_available("g", ("large", "big"), ("small", "gpu"))],
            "config": [
                {"requests": ["g/large"], **opaque(claim="large")},
                {"requests": ["g/small"], **opaque(claim="small")},
                {"requests": ["g"], **opaque(claim="g")},
            ],
        }
        await claim(sim, "c", spec)
        assert await schedule(sim, "p", "c") == "n1"
        assert await config_of(sim, "c") == [
            {"source": "FromClass", "requests": ["g/small"], **opaque(gpu=1)},
            {"source": "FromClaim", "requests": ["g/small"], **opaque(claim="small")},
            {"source": "FromClaim", "requests": ["g"], **opaque(claim="g")},
        ]

    run(tmp_path, scenario)
