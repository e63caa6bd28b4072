"""The admin endpoints a running cluster serves beside the Kubernetes API.

``/taintplane/v1/clock`` (read, and ``advance`` under virtual time, its progress streamed as
lines of JSON when the body asks for it with ``"progress": true``), fault injection on
simulated nodes (``/taintplane/v1/nodes/NAME/stop|start|condition``, and ``zones/ZONE/...``
for partitions), the health of simulated DRA devices
(``/taintplane/v1/devices/DRIVER/POOL/DEVICE/health``), and ``/metrics`` in the Prometheus
text format (kube-apiserver's and kube-controller-manager's families on one page, sorted by
name as the Go client gathers them). They are what ``taintplane clock``, ``taintplane node``
and ``taintplane device`` call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import orjson
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Receive, Scope, Send

from taintplane.admission.dedication import node_warnings
from taintplane.admission.policy import who_can_land
from taintplane.agents.dra_driver import UnknownDeviceError
from taintplane.agents.kubelet import UnknownNodeError
from taintplane.api.decoding import format_time
from taintplane.apiserver.metrics import count_resource_objects
from taintplane.apiserver.status import APIError
from taintplane.client.queue_metrics import WorkQueueCollector, queue_metrics_of
from taintplane.clock import VirtualClock
from taintplane.controllers.stability import WithoutCreated
from taintplane.sim.progress import WorkMeter

if TYPE_CHECKING:
    from taintplane.sim.cluster import Cluster

__all__ = ["ADMIN_PREFIX", "AdminApp"]

ADMIN_PREFIX = "/taintplane/v1/"
#: Wall seconds between the progress lines of a streamed ``clock/advance``.
PROGRESS_INTERVAL = 0.25
CONDITION_TYPES = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable")
CONDITION_STATUSES = ("True", "False", "Unknown")
#: The kubelets answer to the process that runs them; a split `taintplane agents` has no
#: endpoint of its own, so the API server cannot reach its nodes.
NO_SIMULATED_NODES = (
    "this API server runs no simulated nodes: `taintplane node` and `taintplane device` act "
    "on the nodes of `taintplane up` only, not on those of a separate `taintplane agents` "
    "process; in a split deployment, stop that process to stop its nodes (one `agents` per "
    "pool or zone stops them apart), or run `taintplane up` for fault injection"
)


class _Refused(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class AdminApp:
    """Wraps the API server's ASGI app, answering admin paths itself."""

    def __init__(self, cluster: Cluster, api: ASGIApp) -> None:
        self.cluster = cluster
        self.api = api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path.startswith(ADMIN_PREFIX) or path == "/metrics"):
            await self.api(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        try:
            if path == "/metrics":
                await self._metrics(send)
                return
            payload = orjson.loads(body) if body else {}
            if path == f"{ADMIN_PREFIX}clock/advance" and payload.get("progress") is True:
                await self._advance_streaming(payload, send)
                return
            result = await self._route(scope["method"], path[len(ADMIN_PREFIX) :], payload)
            await _json(send, 200, result)
        except _Refused as refusal:
            await _json(send, refusal.code, {"error": refusal.message})
        except orjson.JSONDecodeError:
            await _json(send, 400, {"error": "the request body is not JSON"})

    async def _metrics(self, send: Send) -> None:
        collectors: list[Collector] = []
        apiserver = self.cluster.apiserver
        if apiserver is not None:
            collectors.append(await count_resource_objects(apiserver.store, apiserver.scheme))
        manager = self.cluster.controller_manager
        if manager is not None:
            queues = queue_metrics_of(manager.controllers.values())
            collectors += [WithoutCreated(manager.registry), WorkQueueCollector(queues)]
        text = generate_latest(_ByName(collectors))
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", CONTENT_TYPE_LATEST.encode())],
            }
        )
        await send({"type": "http.response.body", "body": text})

    def _clock_state(self) -> dict[str, Any]:
        clock = self.cluster.clock
        return {"now": format_time(clock.now()), "virtual": isinstance(clock, VirtualClock)}

    async def _route(self, method: str, rest: str, payload: dict[str, Any]) -> dict[str, Any]:
        parts = rest.strip("/").split("/")
        if parts == ["clock"] and method == "GET":
            return self._clock_state()
        if parts == ["clock", "advance"] and method == "POST":
            return await self._advance(payload)
        if len(parts) == 3 and parts[0] in ("nodes", "zones") and method == "POST":
            return await self._fault(parts[0], parts[1], parts[2], payload)
        if len(parts) == 5 and parts[0] == "devices" and parts[4] == "health" and method == "POST":
            return await self._device_health(parts[1], parts[2], parts[3], payload)
        if len(parts) == 3 and parts[:2] == ["policy", "who-can-land"] and method == "GET":
            return await self._who_can_land(parts[2])
        raise _Refused(404, f"no admin endpoint {method} {ADMIN_PREFIX}{rest}")

    async def _who_can_land(self, node_name: str) -> dict[str, Any]:
        apiserver = self.cluster.apiserver
        assert apiserver is not None
        scheme = apiserver.scheme
        nodes, namespaces = scheme.lookup("", "v1", "nodes"), scheme.lookup("", "v1", "namespaces")
        assert nodes is not None
        assert namespaces is not None
        try:
            node = await apiserver.registry.get(nodes, "", node_name)
        except APIError as error:
            raise _Refused(404, f'nodes "{node_name}" not found') from error
        listed = (await apiserver.registry.list(namespaces, "")).items
        rows = who_can_land(node, listed, apiserver.admission_setup)
        return {
            "node": node_name,
            "namespaces": [row.to_dict() for row in rows],
            "warnings": node_warnings(node),
        }

    async def _advance_streaming(self, payload: dict[str, Any], send: Send) -> None:
        """``{"seconds": S, "progress": true}``: the same advance, answered as lines of JSON
        (``application/x-ndjson``), a ``{"progress": …}`` line every ``PROGRESS_INTERVAL``
        seconds of wall time while it runs, then the clock's state with the ``totals``. The
        clock advances in one go, as without progress: the lines are read beside it."""
        clock, seconds = self._advancing(payload)
        meter = WorkMeter(self.cluster)
        await meter.start()
        start = clock.monotonic()
        advancing = asyncio.ensure_future(clock.advance(seconds))
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/x-ndjson")],
            }
        )
        while True:
            finished, _ = await asyncio.wait({advancing}, timeout=PROGRESS_INTERVAL)
            work = await meter.read(clock.monotonic() - start, seconds)
            if finished:
                break
            line = orjson.dumps({"progress": work.to_json()}) + b"\n"
            await send({"type": "http.response.body", "body": line, "more_body": True})
        advancing.result()
        final = {**self._clock_state(), "totals": work.to_json()}
        await send({"type": "http.response.body", "body": orjson.dumps(final) + b"\n"})

    def _advancing(self, payload: dict[str, Any]) -> tuple[VirtualClock, float]:
        clock = self.cluster.clock
        if not isinstance(clock, VirtualClock):
            raise _Refused(
                409,
                "this cluster runs on the real clock, which cannot be advanced; "
                "start it with `taintplane up --clock virtual`",
            )
        seconds = payload.get("seconds")
        if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0:
            raise _Refused(400, "seconds must be a number of seconds, zero or more")
        return clock, float(seconds)

    async def _advance(self, payload: dict[str, Any]) -> dict[str, Any]:
        clock, seconds = self._advancing(payload)
        await clock.advance(seconds)
        return self._clock_state()

    async def _fault(
        self, kind: str, name: str, action: str, payload: dict[str, Any]
    ) -> dict[str, Any]:
        kubelets = self.cluster.kubelets
        if kubelets is None:
            raise _Refused(409, NO_SIMULATED_NODES)
        names = kubelets.zone_nodes(name) if kind == "zones" else [name]
        if kind == "zones" and not names:
            raise _Refused(404, f"no simulated node is in zone {name!r}")
        try:
            for node in names:
                if action == "stop":
                    kubelets.stop(node)
                elif action == "start":
                    await kubelets.start(node)
                elif action == "condition" and kind == "nodes":
                    type_, status = payload.get("type"), payload.get("status")
                    if type_ not in CONDITION_TYPES:
                        raise _Refused(
                            400, f"condition type must be one of {', '.join(CONDITION_TYPES)}"
                        )
                    if status not in CONDITION_STATUSES:
                        raise _Refused(
                            400, f"condition status must be one of {', '.join(CONDITION_STATUSES)}"
                        )
                    await kubelets.set_condition(node, str(type_), str(status))
                else:
                    raise _Refused(404, f"no admin action {action!r} for {kind}")
        except UnknownNodeError as error:
            raise _Refused(404, f"node {error.args[0]!r} is not a simulated node") from error
        return {"nodes": names, "action": action, **self._clock_state()}

    async def _device_health(
        self, driver: str, pool: str, device: str, payload: dict[str, Any]
    ) -> dict[str, Any]:
        kubelets = self.cluster.kubelets
        if kubelets is None:
            raise _Refused(409, NO_SIMULATED_NODES)
        health, effect = payload.get("health"), payload.get("effect")
        try:
            published = await kubelets.dra.set_health(
                driver, pool, device, str(health), None if effect is None else str(effect)
            )
        except UnknownDeviceError as error:
            raise _Refused(
                404, f"device {error.args[0]!r} is not a device of a simulated DRA driver"
            ) from error
        except ValueError as error:
            raise _Refused(400, str(error)) from error
        found = [d for d in published["spec"]["devices"] if d["name"] == device]
        return {
            "device": f"{driver}/{pool}/{device}",
            "health": health,
            "slice": published["metadata"]["name"],
            "taints": found[0].get("taints", []) if found else [],
            **self._clock_state(),
        }


class _ByName(Collector):
    def __init__(self, collectors: list[Collector]) -> None:
        self.collectors = collectors

    def collect(self) -> Iterator[Metric]:
        families = [family for collector in self.collectors for family in collector.collect()]
        return iter(sorted(families, key=lambda family: family.name))


async def _json(send: Send, status: int, body: dict[str, Any]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": orjson.dumps(body)})
