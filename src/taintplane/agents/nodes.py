"""What a simulated node is: its shape (labels, capacity, taints, zone) and the Node object
and conditions its kubelet writes, as a real kubelet would."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from taintplane.api.decoding import format_time

__all__ = [
    "CONDITION_ORDER",
    "HEALTHY",
    "KUBELET_VERSION",
    "DeviceSet",
    "NodeShape",
    "condition",
    "machine_resources",
    "node_address",
    "node_capacity",
    "node_object",
    "node_status",
    "resources_changed",
    "set_conditions",
    "status_changed",
]

KUBELET_VERSION = "v1.35.0"

#: The kubelet's node conditions, in the order it reports them.
CONDITION_ORDER = ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")

# (status -> reason, message) for each condition the kubelet sets, as upstream words them.
_CONDITION_TEXT: dict[str, dict[str, tuple[str, str]]] = {
    "MemoryPressure": {
        "False": ("KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        "True": ("KubeletHasInsufficientMemory", "kubelet has insufficient memory available"),
    },
    "DiskPressure": {
        "False": ("KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        "True": ("KubeletHasDiskPressure", "kubelet has disk pressure"),
    },
    "PIDPressure": {
        "False": ("KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        "True": ("KubeletHasInsufficientPID", "kubelet has insufficient PID available"),
    },
    "Ready": {
        "True": ("KubeletReady", "kubelet is posting ready status"),
        "False": ("KubeletNotReady", "container runtime is down"),
    },
    # Set by the cloud's route controller in real clusters; here by fault injection.
    "NetworkUnavailable": {
        "False": ("RouteCreated", "RouteController created a route"),
        "True": ("NoRouteCreated", "Node created without a route"),
    },
}

#: The status each condition has on a healthy node.
HEALTHY = {
    "MemoryPressure": "False",
    "DiskPressure": "False",
    "PIDPressure": "False",
    "Ready": "True",
}


# The event the kubelet records when a condition changes to a status (upstream's setters).
_CONDITION_EVENTS = {
    ("Ready", "True"): "NodeReady",
    ("Ready", "False"): "NodeNotReady",
    ("MemoryPressure", "True"): "NodeHasInsufficientMemory",
    ("MemoryPressure", "False"): "NodeHasSufficientMemory",
    ("DiskPressure", "True"): "NodeHasDiskPressure",
    ("DiskPressure", "False"): "NodeHasNoDiskPressure",
    ("PIDPressure", "True"): "NodeHasInsufficientPID",
    ("PIDPressure", "False"): "NodeHasSufficientPID",
}


def condition(
    type_: str, status: str, now: datetime, transition: datetime | None = None
) -> dict[str, Any]:
    reason, message = _CONDITION_TEXT.get(type_, {}).get(status, ("", ""))
    return {
        "type": type_,
        "status": status,
        "lastHeartbeatTime": format_time(now),
        "lastTransitionTime": format_time(transition or now),
        "reason": reason,
        "message": message,
    }


def set_conditions(
    stored: list[dict[str, Any]], wanted: dict[str, str], now: datetime
) -> tuple[list[dict[str, Any]], list[str]]:
    """Upstream's condition setters, run on the node as read from the API server: the
    conditions to post, and the reasons of the events they tell.

    A condition whose status differs from the stored one transitions now and is told; the
    stored one may be the node lifecycle controller's Unknown, written while the kubelet was
    silent. A missing pressure condition counts as Unknown (so a new node tells "sufficient
    memory" and so on); a missing Ready condition is added without an event. Ready always
    takes the kubelet's reason and message; an unchanged pressure condition keeps its own.
    """
    by_type = {c.get("type"): c for c in stored}
    stamp = format_time(now)
    ordered = [t for t in ("NetworkUnavailable",) if t in wanted] + list(CONDITION_ORDER)
    conditions, events = [], []
    for type_ in ordered:
        status = wanted[type_]
        old = by_type.get(type_)
        new = condition(type_, status, now)
        if old is not None and old.get("status") == status:
            new["lastTransitionTime"] = old.get("lastTransitionTime", stamp)
            if type_ != "Ready":
                new["reason"] = old.get("reason", "")
                new["message"] = old.get("message", "")
        elif old is not None or type_ != "Ready":
            reason = _CONDITION_EVENTS.get((type_, status))
            if reason:
                events.append(reason)
        conditions.append(new)
    return conditions, events


def status_changed(stored: list[dict[str, Any]], posted: list[dict[str, Any]]) -> bool:
    """Upstream's nodeStatusHasChanged for conditions: heartbeats alone are no change."""

    def essence(conditions: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
        return {
            c.get("type"): {k: v for k, v in c.items() if k != "lastHeartbeatTime"}
            for c in conditions
        }

    return essence(stored) != essence(posted)


@dataclass
class DeviceSet:
    """Devices of one DRA driver on a node, published by the simulated driver as one
    ResourceSlice (pool = node name): ``count`` devices ``<name>-0`` … with these attributes
    (bool, int or string values) and capacities (quantities)."""

    driver: str
    count: int
    name: str = "gpu"
    attributes: dict[str, bool | int | str] = field(default_factory=dict)
    capacity: dict[str, str] = field(default_factory=dict)


@dataclass
class NodeShape:
    """One simulated node: what ``--nodes N`` or a ``--cluster`` pool describes."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    capacity: dict[str, str] = field(
        default_factory=lambda: {"cpu": "4", "memory": "16Gi", "pods": "110"}
    )
    #: Taints registered with the node (kubelet's ``--register-with-taints``).
    taints: list[dict[str, Any]] = field(default_factory=list)
    zone: str = ""
    region: str = ""
    address: str = ""
    #: DRA devices the node's simulated driver publishes in ResourceSlices.
    devices: list[DeviceSet] = field(default_factory=list)

    def all_labels(self) -> dict[str, str]:
        # The kubelet registers both the stable and the beta OS and architecture labels
        # (initialNode); the node lifecycle controller keeps the beta ones equal afterwards.
        labels = {
            "beta.kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/hostname": self.name,
            "kubernetes.io/os": "linux",
        }
        if self.zone:
            labels["topology.kubernetes.io/zone"] = self.zone
        if self.region:
            labels["topology.kubernetes.io/region"] = self.region
        labels.update(self.labels)
        return labels


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def node_object(shape: NodeShape) -> dict[str, Any]:
    """The Node a kubelet registers (metadata and spec; status is posted afterwards)."""
    spec: dict[str, Any] = {}
    if shape.taints:
        spec["taints"] = [dict(t) for t in shape.taints]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": shape.name,
            "labels": shape.all_labels(),
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": spec,
    }


def node_address(shape: NodeShape, index: int) -> str:
    """The node's InternalIP (and its pods' hostIP): the pool's, or one derived from its index."""
    return shape.address or f"10.{(index >> 16) & 255}.{(index >> 8) & 255}.{index & 255}"


def _is_extended(resource: str) -> bool:
    """``IsExtendedResourceName``: a domain-prefixed name outside kubernetes.io."""
    domain, slash, _ = resource.partition("/")
    return (
        bool(slash)
        and domain != "kubernetes.io"
        and not domain.endswith(".kubernetes.io")
        and not resource.startswith("requests.")
    )


def machine_resources(
    own: dict[str, str], stored: dict[str, Any] | None
) -> tuple[dict[str, str], dict[str, str | None]]:
    """Upstream's MachineInfo status setter: capacity is the node's as stored with the
    kubelet's own resources written over it (an extended resource advertised through the API,
    as the docs' "Advertise Extended Resources for a Node" does, is kept), and allocatable
    follows capacity key by key (a simulated node reserves nothing); an extended resource gone
    from capacity leaves allocatable too (None: removed by the merge patch)."""
    status = (stored or {}).get("status") or {}
    capacity = {**(status.get("capacity") or {}), **own}
    allocatable: dict[str, str | None] = {
        key: None
        for key in status.get("allocatable") or {}
        if key not in capacity and _is_extended(key)
    }
    allocatable.update(capacity)
    return capacity, allocatable


def resources_changed(
    capacity: dict[str, str], allocatable: dict[str, str | None], stored: dict[str, Any] | None
) -> bool:
    """Whether the stored node's capacity or allocatable differs from the setter's."""
    status = (stored or {}).get("status") or {}
    wanted = {key: value for key, value in allocatable.items() if value is not None}
    return status.get("capacity") != capacity or status.get("allocatable") != wanted


def node_capacity(shape: NodeShape) -> dict[str, str]:
    """What the simulated machine has: the defaults, then the shape's own."""
    return {
        "cpu": "4",
        "ephemeral-storage": "100Gi",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": "16Gi",
        "pods": "110",
        **shape.capacity,
    }


def node_status(shape: NodeShape, index: int, conditions: list[dict[str, Any]]) -> dict[str, Any]:
    capacity = node_capacity(shape)
    digest = _digest(shape.name)
    address = node_address(shape, index)
    return {
        "capacity": capacity,
        "allocatable": dict(capacity),
        "conditions": conditions,
        "addresses": [
            {"type": "InternalIP", "address": address},
            {"type": "Hostname", "address": shape.name},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": digest[:32],
            "systemUUID": f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-"
            f"{digest[20:32]}",
            "bootID": digest[32:64],
            "kernelVersion": "6.8.0-taintplane",
            "osImage": "taintplane simulated node",
            "containerRuntimeVersion": "containerd://2.1.0",
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": "",
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
    }
