"""Well-known taint keys and the tolerations every DaemonSet pod receives.

The node lifecycle controller and the kubelet put these taints on nodes; the DaemonSet
controller gives its pods tolerations for them so that node problems do not evict or block
daemons (``AddOrUpdateDaemonPodTolerations``).
"""

from __future__ import annotations

from collections.abc import Sequence

from taintplane.api.taints import TaintEffect
from taintplane.api.toleration_algebra import add_or_update
from taintplane.api.tolerations import Toleration, TolerationOperator

__all__ = [
    "TAINT_EXTERNAL_CLOUD_PROVIDER",
    "TAINT_NODE_DISK_PRESSURE",
    "TAINT_NODE_MEMORY_PRESSURE",
    "TAINT_NODE_NETWORK_UNAVAILABLE",
    "TAINT_NODE_NOT_READY",
    "TAINT_NODE_OUT_OF_SERVICE",
    "TAINT_NODE_PID_PRESSURE",
    "TAINT_NODE_SHUTDOWN",
    "TAINT_NODE_UNREACHABLE",
    "TAINT_NODE_UNSCHEDULABLE",
    "daemon_pod_tolerations",
]

TAINT_NODE_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_NODE_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
TAINT_NODE_MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"
TAINT_NODE_DISK_PRESSURE = "node.kubernetes.io/disk-pressure"
TAINT_NODE_NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"
TAINT_NODE_PID_PRESSURE = "node.kubernetes.io/pid-pressure"
TAINT_NODE_OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
#: Set by the kubelet when started with an external cloud provider, removed by the cloud
#: controller manager once it has initialised the node.
TAINT_EXTERNAL_CLOUD_PROVIDER = "node.cloudprovider.kubernetes.io/uninitialized"
TAINT_NODE_SHUTDOWN = "node.cloudprovider.kubernetes.io/shutdown"


def _exists(key: str, effect: str) -> Toleration:
    return Toleration(key=key, operator=TolerationOperator.EXISTS, effect=effect)


_DAEMON_TOLERATIONS = (
    # Survive taint-based eviction when the node turns not-ready or unreachable.
    _exists(TAINT_NODE_NOT_READY, TaintEffect.NO_EXECUTE),
    _exists(TAINT_NODE_UNREACHABLE, TaintEffect.NO_EXECUTE),
    # Taints by condition must not keep daemons off their node.
    _exists(TAINT_NODE_DISK_PRESSURE, TaintEffect.NO_SCHEDULE),
    _exists(TAINT_NODE_MEMORY_PRESSURE, TaintEffect.NO_SCHEDULE),
    _exists(TAINT_NODE_PID_PRESSURE, TaintEffect.NO_SCHEDULE),
    _exists(TAINT_NODE_UNSCHEDULABLE, TaintEffect.NO_SCHEDULE),
)
# Only host-network daemons can work without the node's pod network.
_HOST_NETWORK_TOLERATION = _exists(TAINT_NODE_NETWORK_UNAVAILABLE, TaintEffect.NO_SCHEDULE)


def daemon_pod_tolerations(
    tolerations: Sequence[Toleration], *, host_network: bool = False
) -> list[Toleration]:
    """The pod template's tolerations with the DaemonSet controller's additions, in order."""
    result = list(tolerations)
    wanted = [*_DAEMON_TOLERATIONS, *((_HOST_NETWORK_TOLERATION,) if host_network else ())]
    for toleration in wanted:
        result, _ = add_or_update(result, toleration)
    return result
