"""Driving a whole in-process cluster on virtual time: no HTTP, no sleeps, exact instants."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from taintplane.agents.kubelet import Kubelets
from taintplane.agents.nodes import NodeShape
from taintplane.client import ApiError, Client, resource
from taintplane.clock import VirtualClock
from taintplane.controllers.manager import ControllerConfig
from taintplane.sim.cluster import Cluster, in_process_cluster

NODES = resource("", "v1", "nodes")
PODS = resource("", "v1", "pods")
EVENTS = resource("", "v1", "events")

START = datetime(2026, 1, 1, tzinfo=VirtualClock().now().tzinfo)


def at(seconds: float) -> datetime:
    return START + timedelta(seconds=seconds)


class Sim:
    """The cluster, its clock and a client, with the few verbs scenarios need."""

    def __init__(self, cluster: Cluster, clock: VirtualClock) -> None:
        self.cluster = cluster
        self.clock = clock
        assert cluster.client is not None
        self.client: Client = cluster.client

    @property
    def elapsed(self) -> float:
        return self.clock.monotonic()

    async def advance(self, seconds: float) -> None:
        await self.clock.advance(seconds)

    async def advance_to(self, seconds: float) -> None:
        await self.clock.advance(seconds - self.clock.monotonic())

    @property
    def kubelets(self) -> Kubelets:
        assert self.cluster.kubelets is not None, "run the agents component"
        return self.cluster.kubelets

    async def node(self, name: str) -> dict[str, Any]:
        return await self.client.get(NODES, name)

    async def node_condition(self, name: str, type_: str) -> dict[str, Any] | None:
        node = await self.node(name)
        found = [c for c in node["status"].get("conditions", []) if c["type"] == type_]
        return found[0] if found else None

    async def node_taints(self, name: str) -> list[dict[str, Any]]:
        node = await self.node(name)
        return list(node["spec"].get("taints") or [])

    async def create_node(self, node: dict[str, Any]) -> dict[str, Any]:
        status = node.pop("status", None)
        created = await self.client.create(NODES, node)
        if status:
            created = await self.client.patch(
                NODES, node["metadata"]["name"], {"status": status}, subresource="status"
            )
        await self.clock.advance(0)
        return created

    async def taint(self, node: str, taints: list[dict[str, Any]] | None) -> None:
        await self.client.patch(NODES, node, {"spec": {"taints": taints}})
        await self.clock.advance(0)

    async def create_pod(self, pod: dict[str, Any]) -> dict[str, Any]:
        namespace = pod["metadata"].get("namespace", "default")
        created = await self.client.create(PODS, pod, namespace=namespace)
        await self.clock.advance(0)
        return created

    async def pod(self, name: str, namespace: str = "default") -> dict[str, Any] | None:
        try:
            return await self.client.get(PODS, name, namespace)
        except ApiError as error:
            if error.code == 404:
                return None
            raise

    async def deletion(self, name: str, namespace: str = "default") -> str | None:
        """The pod's deletionTimestamp (None while it runs); the pod must exist."""
        pod = await self.pod(name, namespace)
        assert pod is not None, f"pod {namespace}/{name} is gone"
        stamp = pod["metadata"].get("deletionTimestamp")
        return None if stamp is None else str(stamp)

    async def events(self, reason: str, namespace: str = "default") -> list[dict[str, Any]]:
        items, _ = await self.client.list(EVENTS, namespace, field_selector=f"reason={reason}")
        return sorted(items, key=lambda e: (e["lastTimestamp"], e["metadata"]["name"]))


def simulate(
    tmp_path: Path,
    scenario: Callable[[Sim], Awaitable[None]],
    *,
    components: tuple[str, ...] = ("controller-manager",),
    controllers: tuple[str, ...] | None = None,
    nodes: list[NodeShape] | None = None,
    controller_config: ControllerConfig | None = None,
) -> None:
    async def main() -> None:
        clock = VirtualClock(START)
        kwargs: dict[str, Any] = {
            "components": components,
            "nodes": nodes,
            "controller_config": controller_config,
        }
        if controllers is not None:
            kwargs["controllers"] = controllers
        async with in_process_cluster(tmp_path, clock, **kwargs) as cluster:
            await scenario(Sim(cluster, clock))

    asyncio.run(main())
