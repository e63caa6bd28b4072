"""A simulated DRA driver: each node's devices in a ResourceSlice, and their health as taints.

For every :class:`~taintplane.agents.nodes.DeviceSet` of a node the driver publishes one
ResourceSlice named ``<node>-<driver>`` (``nodeName`` and pool name = the node, one slice in
the pool, owned by the Node) listing devices ``<name>-0`` … with their attributes and
capacity, as a kubelet plugin does. Before its first slice it installs a DeviceClass named
after the driver selecting its devices (``device.driver == "<driver>"``), as real drivers'
Helm charts do, so that claims have a class to name; one that exists already (the admin's own,
or from an earlier start) is left as it is.

A device's health is set with ``taintplane device health DRIVER/POOL/DEVICE STATE`` and the
driver publishes it as seed 004's "degraded devices" story describes — taints with documented
keys in the driver's domain (simple values, one key per problem) that the control plane and
admins decide how to react to:

==========  ==========================================  =========================================
state       taint                                       meaning
==========  ==========================================  =========================================
healthy     none
degraded    ``<driver>/degraded=overheating:None``      informational: no effect on scheduling
                                                        or running pods until an admin (or a
                                                        controller) adds a DeviceTaintRule
failed      ``<driver>/failed=unresponsive:NoExecute``  the device is gone: new pods must not
                                                        get it, pods using it are evicted
==========  ==========================================  =========================================

The effect can be chosen per change (e.g. ``degraded`` with ``NoSchedule``). ``timeAdded`` is
the driver's clock at the change and stays while the state does, so republishing the slice
never moves it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from taintplane.agents.nodes import DeviceSet, NodeShape
from taintplane.api.decoding import format_time
from taintplane.client import ApiError, Client, resource
from taintplane.clock import Clock

__all__ = [
    "DEVICE_CLASSES",
    "HEALTH_STATES",
    "HEALTH_TAINTS",
    "RESOURCE_SLICES",
    "DraDriver",
    "UnknownDeviceError",
    "device_class",
    "device_objects",
]

log = logging.getLogger(__name__)

RESOURCE_SLICES = resource("resource.k8s.io", "v1", "resourceslices")
DEVICE_CLASSES = resource("resource.k8s.io", "v1", "deviceclasses")
HEALTH_STATES = ("healthy", "degraded", "failed")
#: state -> (key suffix in the driver's domain, value, default effect)
HEALTH_TAINTS: dict[str, tuple[str, str, str]] = {
    "degraded": ("degraded", "overheating", "None"),
    "failed": ("failed", "unresponsive", "NoExecute"),
}
EFFECTS = ("None", "NoSchedule", "NoExecute")


class UnknownDeviceError(KeyError):
    pass


@dataclass
class _Health:
    state: str = "healthy"
    effect: str = ""
    since: datetime | None = None


@dataclass
class _Pool:
    """One published slice: a node's devices of one driver."""

    node: str
    node_uid: str
    devices: DeviceSet
    health: dict[str, _Health] = field(default_factory=dict)

    @property
    def slice_name(self) -> str:
        return f"{self.node}-{self.devices.driver}"

    def device_names(self) -> list[str]:
        return [f"{self.devices.name}-{i}" for i in range(self.devices.count)]


def _attribute(value: bool | int | str) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    return {"string": str(value)}


def device_objects(pool: _Pool) -> list[dict[str, Any]]:
    """The slice's ``spec.devices``: attributes (``index`` unless configured), capacity and
    the taints of unhealthy devices."""
    devices = []
    for index, name in enumerate(pool.device_names()):
        attributes = {"index": index, **pool.devices.attributes}
        device: dict[str, Any] = {
            "name": name,
            "attributes": {k: _attribute(v) for k, v in attributes.items()},
        }
        if pool.devices.capacity:
            device["capacity"] = {k: {"value": v} for k, v in pool.devices.capacity.items()}
        health = pool.health.get(name)
        if health is not None and health.state in HEALTH_TAINTS and health.since is not None:
            suffix, value, _ = HEALTH_TAINTS[health.state]
            device["taints"] = [
                {
                    "key": f"{pool.devices.driver}/{suffix}",
                    "value": value,
                    "effect": health.effect,
                    "timeAdded": format_time(health.since),
                }
            ]
        devices.append(device)
    return devices


def device_class(driver: str) -> dict[str, Any]:
    """The DeviceClass a driver's chart installs: every device of the driver."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": driver},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


class DraDriver:
    """Publishes the ResourceSlices of the simulated nodes' devices and their health."""

    def __init__(self, client: Client, clock: Clock) -> None:
        self.client = client
        self.clock = clock
        #: (driver, pool) -> what is published there.
        self.pools: dict[tuple[str, str], _Pool] = {}
        #: Drivers whose DeviceClass was installed (or found) by this driver.
        self.classes: set[str] = set()

    async def install_class(self, driver: str) -> None:
        """Create the driver's DeviceClass unless one of that name exists (never replaced)."""
        if driver in self.classes:
            return
        self.classes.add(driver)  # before the await: nodes register concurrently
        try:
            await self.client.create(DEVICE_CLASSES, device_class(driver))
        except ApiError as error:
            if error.code != 409:
                self.classes.discard(driver)
                log.info("dra driver %s: installing its DeviceClass failed: %s", driver, error)

    async def publish_node(self, shape: NodeShape, node_uid: str) -> None:
        """Publish one slice per device set of a (newly registered) node."""
        for devices in shape.devices:
            await self.install_class(devices.driver)
            pool = _Pool(shape.name, node_uid, devices)
            self.pools[(devices.driver, shape.name)] = pool
            await self._publish(pool)

    def _slice(self, pool: _Pool) -> dict[str, Any]:
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {
                "name": pool.slice_name,
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Node", "name": pool.node, "uid": pool.node_uid}
                ],
            },
            "spec": {
                "driver": pool.devices.driver,
                "nodeName": pool.node,
                "pool": {"name": pool.node, "generation": 1, "resourceSliceCount": 1},
                "devices": device_objects(pool),
            },
        }

    async def _publish(self, pool: _Pool) -> dict[str, Any]:
        wanted = self._slice(pool)
        try:
            return await self.client.create(RESOURCE_SLICES, wanted)
        except ApiError as error:
            if error.code != 409:
                raise
        # Published before (a restart): bring the slice's spec to what the driver has now.
        patch = {"spec": {"devices": wanted["spec"]["devices"]}}
        return await self.client.patch(RESOURCE_SLICES, pool.slice_name, patch)

    async def set_health(
        self, driver: str, pool_name: str, device: str, state: str, effect: str | None = None
    ) -> dict[str, Any]:
        """Change a device's health and republish its slice; returns the slice."""
        if state not in HEALTH_STATES:
            raise ValueError(f"health must be one of {', '.join(HEALTH_STATES)}")
        if effect is not None and effect not in EFFECTS:
            raise ValueError(f"effect must be one of {', '.join(EFFECTS)}")
        pool = self.pools.get((driver, pool_name))
        if pool is None or device not in pool.device_names():
            raise UnknownDeviceError(f"{driver}/{pool_name}/{device}")
        chosen = effect or HEALTH_TAINTS.get(state, ("", "", ""))[2]
        current = pool.health.get(device, _Health())
        if (current.state, current.effect) != (state, chosen):
            pool.health[device] = _Health(state, chosen, self.clock.now())
            log.info("dra driver %s: %s/%s is %s", driver, pool_name, device, state)
        return await self._publish(pool)
