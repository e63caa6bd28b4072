"""What the scheduler knows about nodes and pods, parsed once and kept current.

``NodeInfo`` holds a node's parsed taints, labels and allocatable resources and the sum of the
requests of the pods on it (assumed ones included). ``PodInfo`` holds a pod's parsed
tolerations, requests and affinity. Plugins read these, never the raw objects' strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import count
from typing import Any

from taintplane.api.field import Path
from taintplane.api.host_ports import BIND_ALL_HOST_IP, HostPort, host_ports
from taintplane.api.resources import amount as _quantity
from taintplane.api.resources import pod_requests
from taintplane.api.taints import Taint, parse_taints
from taintplane.api.tolerations import Toleration, parse_tolerations

__all__ = [
    "BIND_ALL_HOST_IP",
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "NodeInfo",
    "PodInfo",
    "pod_key",
]

#: Requests assumed for scoring when a container sets none (upstream's non-zero defaults).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

#: Stamps for NodeInfo.pods_changed: unique over every node, so a stamp kept for a table row
#: never matches a different NodeInfo's (or a later state of the same one).
_POD_CHANGES = count(1)


def pod_key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


@dataclass
class PodInfo:
    pod: dict[str, Any]
    key: str
    namespace: str
    name: str
    tolerations: tuple[Toleration, ...]
    requests: dict[str, int]
    #: Requests with upstream's non-zero defaults for cpu and memory (used for scoring).
    score_requests: tuple[int, int]
    priority: int
    scheduler_name: str
    node_name: str
    host_ports: tuple[HostPort, ...] = ()
    #: ``podAffinity`` or ``podAntiAffinity`` set (upstream's PodsWithAffinity).
    has_pod_affinity: bool = False
    #: Required anti-affinity terms (upstream's PodsWithRequiredAntiAffinity).
    has_required_anti_affinity: bool = False
    #: The parsed inter-pod affinity terms, cached by the InterPodAffinity plugin.
    affinity_terms: object = None

    @property
    def terminating(self) -> bool:
        """Deleted and waiting out its grace period (it still holds its node's room)."""
        return bool((self.pod.get("metadata") or {}).get("deletionTimestamp"))

    @classmethod
    def of(cls, pod: dict[str, Any]) -> PodInfo:
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        try:
            tolerations = tuple(
                parse_tolerations(spec.get("tolerations"), Path.root("spec", "tolerations"))
            )
        except ValueError:
            tolerations = ()
        requests = pod_requests(spec)
        affinity = spec.get("affinity") or {}
        pod_affinity, anti_affinity = affinity.get("podAffinity"), affinity.get("podAntiAffinity")
        cpu = requests.get("cpu") or DEFAULT_MILLI_CPU_REQUEST
        memory = requests.get("memory") or DEFAULT_MEMORY_REQUEST
        return cls(
            pod=pod,
            key=pod_key(pod),
            namespace=str(meta.get("namespace", "")),
            name=str(meta.get("name", "")),
            tolerations=tolerations,
            requests=requests,
            score_requests=(cpu, memory),
            priority=int(spec.get("priority") or 0),
            scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
            node_name=str(spec.get("nodeName") or ""),
            host_ports=host_ports(spec),
            has_pod_affinity=bool(pod_affinity or anti_affinity),
            has_required_anti_affinity=bool(
                (anti_affinity or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
            ),
        )


@dataclass
class NodeInfo:
    name: str
    node: dict[str, Any]
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool
    allocatable: dict[str, int]
    requested: dict[str, int] = field(default_factory=dict)
    #: Sum of the pods' score requests (cpu millis, memory bytes).
    score_requested: list[int] = field(default_factory=lambda: [0, 0])
    pods: dict[str, PodInfo] = field(default_factory=dict)
    #: ``UsedPorts``: (protocol, port) -> hostIP -> how many pods hold it.
    used_ports: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    #: How many of the pods have inter-pod affinity, and required anti-affinity.
    affinity_pods: int = 0
    anti_affinity_pods: int = 0
    #: ``status.images``: each name an image is known by -> its size in bytes.
    images: dict[str, int] = field(default_factory=dict)
    #: Counts of the pods matching a (namespace, selector), as PodTopologySpread asks of
    #: every node for every pod it scores; forgotten whenever a pod comes or goes.
    matching: dict[Any, int] = field(default_factory=dict, repr=False, compare=False)
    #: A new stamp whenever a pod comes or goes (and for every new NodeInfo): the node table
    #: copies it, so per-row results about the pods are redone only where it moved.
    pods_changed: int = field(default_factory=lambda: next(_POD_CHANGES), repr=False, compare=False)

    @classmethod
    def of(cls, node: dict[str, Any]) -> NodeInfo:
        meta = node.get("metadata") or {}
        spec = node.get("spec") or {}
        try:
            taints = tuple(parse_taints(spec.get("taints"), Path.root("spec", "taints")))
        except ValueError:
            taints = ()
        allocatable = {
            resource: _quantity(resource, quantity)
            for resource, quantity in ((node.get("status") or {}).get("allocatable") or {}).items()
        }
        return cls(
            name=str(meta.get("name", "")),
            node=node,
            labels=dict(meta.get("labels") or {}),
            taints=taints,
            unschedulable=bool(spec.get("unschedulable")),
            allocatable=allocatable,
            images={
                str(name): int(image.get("sizeBytes") or 0)
                for image in (node.get("status") or {}).get("images") or []
                for name in image.get("names") or []
            },
        )

    def add_pod(self, pod: PodInfo) -> None:
        if pod.key in self.pods:
            self.remove_pod(pod.key)
        self.matching.clear()
        self.pods_changed = next(_POD_CHANGES)
        self.pods[pod.key] = pod
        for resource, amount in pod.requests.items():
            self.requested[resource] = self.requested.get(resource, 0) + amount
        self.score_requested[0] += pod.score_requests[0]
        self.score_requested[1] += pod.score_requests[1]
        self.affinity_pods += pod.has_pod_affinity
        self.anti_affinity_pods += pod.has_required_anti_affinity
        for protocol, port, ip in pod.host_ports:
            holders = self.used_ports.setdefault((protocol, port), {})
            holders[ip] = holders.get(ip, 0) + 1

    def remove_pod(self, key: str) -> None:
        pod = self.pods.pop(key, None)
        if pod is None:
            return
        self.matching.clear()
        self.pods_changed = next(_POD_CHANGES)
        for resource, amount in pod.requests.items():
            self.requested[resource] = self.requested.get(resource, 0) - amount
        self.score_requested[0] -= pod.score_requests[0]
        self.score_requested[1] -= pod.score_requests[1]
        self.affinity_pods -= pod.has_pod_affinity
        self.anti_affinity_pods -= pod.has_required_anti_affinity
        for protocol, port, ip in pod.host_ports:
            holders = self.used_ports[(protocol, port)]
            holders[ip] -= 1
            if not holders[ip]:
                del holders[ip]
                if not holders:
                    del self.used_ports[(protocol, port)]

    def with_node(self, node: dict[str, Any]) -> NodeInfo:
        """This node's accounting under an updated Node object."""
        fresh = NodeInfo.of(node)
        fresh.requested = self.requested
        fresh.score_requested = self.score_requested
        fresh.pods = self.pods
        fresh.matching = self.matching  # the same pods: the same counts, forgotten together
        fresh.used_ports = self.used_ports
        fresh.affinity_pods = self.affinity_pods
        fresh.anti_affinity_pods = self.anti_affinity_pods
        return fresh
