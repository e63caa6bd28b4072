"""DaemonSet rolling updates with ``maxSurge`` on virtual time: the new pod starts next to the
old one, which goes only once the new one is available."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from taintplane.api.decoding import format_time
from tests.controllers.harness import PODS, Sim
from tests.controllers.test_daemonset import (
    DAEMONSETS,
    add_node,
    create_ds,
    daemon_pods,
    ds_status,
    make_ds,
    run,
)
from tests.scheduler.builders import make_node

HASH = "controller-revision-hash"


def surging(**spec: Any) -> dict[str, Any]:
    ds = make_ds(terminationGracePeriodSeconds=0)
    ds["spec"]["updateStrategy"] = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
    }
    ds["spec"].update(spec)
    return ds


async def mark_ready(sim: Sim, name: str) -> None:
    """Running and Ready from now (availability counts from the condition's transition)."""
    condition = {
        "type": "Ready",
        "status": "True",
        "lastTransitionTime": format_time(sim.clock.now()),
    }
    await sim.client.patch(
        PODS,
        name,
        {"status": {"phase": "Running", "conditions": [condition]}},
        namespace="default",
        patch_type="strategic",
        subresource="status",
    )
    await sim.advance(0)


async def by_node(sim: Sim) -> dict[str, list[tuple[str, str]]]:
    """node -> [(pod, image)] of live pods, oldest first."""
    found: dict[str, list[tuple[str, str]]] = {}
    for pod in await daemon_pods(sim):
        if pod["metadata"].get("deletionTimestamp"):
            continue
        node = pod["spec"].get("nodeName") or "<unbound>"
        found.setdefault(node, []).append(
            (pod["metadata"]["name"], pod["spec"]["containers"][0]["image"])
        )
    return {node: sorted(pods, key=lambda p: p[1]) for node, pods in sorted(found.items())}


def images(layout: dict[str, list[tuple[str, str]]]) -> dict[str, list[str]]:
    return {node: [image for _, image in pods] for node, pods in layout.items()}


async def set_image(sim: Sim, image: str) -> None:
    ds = await sim.client.get(DAEMONSETS, "agent", "default")
    ds["spec"]["template"]["spec"]["containers"][0]["image"] = image
    await sim.client.update(DAEMONSETS, ds)
    await sim.advance(0)


def test_surge_starts_the_new_pod_before_the_old_one_goes(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        for name in ("n1", "n2", "n3"):
            await add_node(sim, make_node(name))
        await create_ds(sim, surging(minReadySeconds=10))
        await sim.advance(1)
        for pods in (await by_node(sim)).values():
            await mark_ready(sim, pods[0][0])
        await sim.advance_to(20)
        assert (await ds_status(sim))["numberAvailable"] == 3

        await set_image(sim, "agent:2")  # t=20
        # One surge pod, on the first node; every old pod still runs.
        assert images(await by_node(sim)) == {
            "n1": ["agent:1", "agent:2"],
            "n2": ["agent:1"],
            "n3": ["agent:1"],
        }
        status = await ds_status(sim)
        # Zero updated pods: omitempty, so absent, as kube-apiserver encodes it.
        assert "updatedNumberScheduled" not in status
        assert status["numberAvailable"] == 3

        layout = await by_node(sim)
        old_n1, new_n1 = layout["n1"][0][0], layout["n1"][1][0]
        await sim.advance_to(25)
        await mark_ready(sim, new_n1)  # ready at t=25: available once 10 s have passed
        await sim.advance_to(35.999)
        assert images(await by_node(sim))["n1"] == ["agent:1", "agent:2"]
        assert await sim.pod(old_n1) is not None
        # The controller looks again 11 s after readiness: the old pod goes, and the
        # next node surges at the same instant.
        await sim.advance_to(36)
        assert await sim.pod(old_n1) is None
        assert images(await by_node(sim)) == {
            "n1": ["agent:2"],
            "n2": ["agent:1", "agent:2"],
            "n3": ["agent:1"],
        }
        status = await ds_status(sim)
        assert (status["updatedNumberScheduled"], status["numberAvailable"]) == (1, 3)

        for node in ("n2", "n3"):
            new = (await by_node(sim))[node][1][0]
            ready_at = sim.elapsed
            await mark_ready(sim, new)
            await sim.advance_to(ready_at + 11)
        assert images(await by_node(sim)) == {
            "n1": ["agent:2"],
            "n2": ["agent:2"],
            "n3": ["agent:2"],
        }
        assert sim.elapsed == 58
        status = await ds_status(sim)
        assert (status["updatedNumberScheduled"], status["numberAvailable"]) == (3, 3)
        deleted = await sim.events("SuccessfulDelete")
        assert len(deleted) == 3
        assert [e["lastTimestamp"] for e in deleted] == [
            "2026-01-01T00:00:36Z",
            "2026-01-01T00:00:47Z",
            "2026-01-01T00:00:58Z",
        ]

    run(tmp_path, scenario)


def test_unavailable_old_pods_are_replaced_at_once_beyond_max_surge(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        for name in ("n1", "n2", "n3"):
            await add_node(sim, make_node(name))
        await create_ds(sim, surging())
        await sim.advance(1)
        await mark_ready(sim, (await by_node(sim))["n3"][0][0])
        # n1 and n2 never got ready: their new pods need not wait for the surge budget, and
        # an old pod that is not ready is not kept next to its replacement. n3 surges.
        await set_image(sim, "agent:2")
        assert images(await by_node(sim)) == {
            "n1": ["agent:2"],
            "n2": ["agent:2"],
            "n3": ["agent:1", "agent:2"],
        }
        assert sim.elapsed == 1

    run(tmp_path, scenario)


def test_a_surge_pod_replaces_an_old_pod_that_stops_being_ready(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await add_node(sim, make_node("n1"))
        await create_ds(sim, surging(minReadySeconds=30))
        await sim.advance(1)
        old = (await by_node(sim))["n1"][0][0]
        await mark_ready(sim, old)
        await sim.advance_to(40)
        await set_image(sim, "agent:2")
        assert images(await by_node(sim)) == {"n1": ["agent:1", "agent:2"]}
        # Both pods stay while the old one serves and the new one is not available…
        await mark_ready(sim, (await by_node(sim))["n1"][1][0])
        assert images(await by_node(sim)) == {"n1": ["agent:1", "agent:2"]}
        # …but an old pod that stops being ready is not worth keeping.
        await sim.client.patch(
            PODS,
            old,
            {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
            namespace="default",
            patch_type="strategic",
            subresource="status",
        )
        await sim.advance(0)
        assert images(await by_node(sim)) == {"n1": ["agent:2"]}
        assert sim.elapsed == 40

    run(tmp_path, scenario)
