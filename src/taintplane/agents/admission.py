"""The kubelet's admission of a pod bound to its node (lifecycle/predicate.go ``Admit``): the
checks the scheduler would have made, for pods that reached the node without it (a
``spec.nodeName`` set by hand, a DaemonSet's pod racing a taint, a node that shrank).

In upstream's order: the OS label and the OS field; then ``generalFilter``: resources (every
insufficient one, in ``fitsRequest``'s order), the node's selector and affinity, free
host ports; then the node's NoExecute taints (static pods are exempt). The first failure is
the pod's reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from taintplane.api.host_ports import host_ports, port_conflict
from taintplane.api.nodeaffinity import pod_matches_node_selector_and_affinity
from taintplane.api.resources import amount, pod_requests
from taintplane.api.taints import Taint, TaintEffect
from taintplane.api.tolerations import Toleration, find_untolerated_taint

__all__ = ["NODE_OS", "admission_failure", "insufficient_resources", "is_static"]

CONFIG_SOURCE_ANNOTATION = "kubernetes.io/config.source"
TAINT_REASON = "TaintToleration"
TAINT_MESSAGE = "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"
PORTS_REASON = "NodePorts"
PORTS_MESSAGE = (
    "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
)
AFFINITY_REASON = "NodeAffinity"
AFFINITY_MESSAGE = (
    "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
)
OS_SELECTOR_REASON = "PodOSSelectorNodeLabelDoesNotMatch"
OS_SELECTOR_MESSAGE = "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
OS_FIELD_REASON = "PodOSNotSupported"
OS_FIELD_MESSAGE = "Failed to admit pod as the OS field doesn't match node OS"
OS_LABEL = "kubernetes.io/os"
#: The simulated kubelets run "on" Linux (a real kubelet compares with its runtime.GOOS).
NODE_OS = "linux"
#: ``OutOfcpu`` and the like: the reason of a pod refused for want of a resource.
OUT_OF = "OutOf"
_NATIVE = ("cpu", "memory", "ephemeral-storage")


def is_static(pod: dict[str, Any]) -> bool:
    """``IsStaticPod``: the pod came from a file or URL, not the API server."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    source = annotations.get(CONFIG_SOURCE_ANNOTATION)
    return source is not None and source != "api"


def _is_extended(resource: str) -> bool:
    """``IsExtendedResourceName``: a domain-prefixed name outside kubernetes.io."""
    domain, slash, _ = resource.partition("/")
    return (
        bool(slash)
        and domain != "kubernetes.io"
        and not domain.endswith(".kubernetes.io")
        and not resource.startswith("requests.")
    )


def _scalar(resource: str) -> bool:
    return _is_extended(resource) or resource.startswith(("hugepages-", "attachable-volumes-"))


def insufficient_resources(
    pod: dict[str, Any], node: dict[str, Any], others: Iterable[dict[str, Any]]
) -> list[tuple[str, int, int, int]]:
    """``noderesources.Fits`` as the kubelet calls it: (resource, requested, used, capacity)
    for each resource the node cannot give, counting the pods it already runs. Extended
    resources the node does not have at all are not counted (removeMissingExtendedResources:
    cluster-level resources)."""
    allocatable = {
        resource: amount(resource, quantity)
        for resource, quantity in ((node.get("status") or {}).get("allocatable") or {}).items()
    }
    used: dict[str, int] = {}
    count = 0
    for other in others:
        count += 1
        for resource, quantity in pod_requests(other.get("spec") or {}).items():
            used[resource] = used.get(resource, 0) + quantity
    wanted = {
        resource: quantity
        for resource, quantity in pod_requests(pod.get("spec") or {}).items()
        if not _is_extended(resource) or resource in allocatable
    }
    short: list[tuple[str, int, int, int]] = []
    pods_allowed = allocatable.get("pods", 0)
    if count + 1 > pods_allowed:
        short.append(("pods", 1, count, pods_allowed))
    if not any(wanted.values()):
        return short
    for resource in (*_NATIVE, *sorted(r for r in wanted if _scalar(r))):
        asked = wanted.get(resource, 0)
        capacity, taken = allocatable.get(resource, 0), used.get(resource, 0)
        if asked > 0 and asked > capacity - taken:
            short.append((resource, asked, taken, capacity))
    return short


def admission_failure(
    pod: dict[str, Any], node: dict[str, Any] | None, others: Iterable[dict[str, Any]] = ()
) -> tuple[str, str] | None:
    """(reason, message) when the kubelet refuses ``pod`` on ``node``, which already runs
    ``others`` (the pods it admitted and that have not finished); None to admit it."""
    if node is None:
        return None
    spec = pod.get("spec") or {}
    # The node's own OS label is the kubelet's OS, whatever the API says (it reconciles it).
    pod_os_label = ((pod.get("metadata") or {}).get("labels") or {}).get(OS_LABEL)
    if pod_os_label is not None and pod_os_label != NODE_OS:
        return OS_SELECTOR_REASON, OS_SELECTOR_MESSAGE
    pod_os = (spec.get("os") or {}).get("name")
    if pod_os is not None and pod_os != NODE_OS:
        return OS_FIELD_REASON, OS_FIELD_MESSAGE
    others = list(others)
    short = insufficient_resources(pod, node, others)
    if short:
        resource, requested, used, capacity = short[0]
        return (
            f"{OUT_OF}{resource}",
            f"Node didn't have enough resource: {resource}, requested: {requested}, "
            f"used: {used}, capacity: {capacity}",
        )
    node_meta = node.get("metadata") or {}
    labels = node_meta.get("labels") or {}
    if not pod_matches_node_selector_and_affinity(spec, labels, str(node_meta.get("name", ""))):
        return AFFINITY_REASON, AFFINITY_MESSAGE
    wanted = host_ports(spec)
    if wanted:
        taken: dict[tuple[str, int], set[str]] = {}
        for other in others:
            for protocol, port, ip in host_ports(other.get("spec") or {}):
                taken.setdefault((protocol, port), set()).add(ip)
        if any(port_conflict(taken, port) for port in wanted):
            return PORTS_REASON, PORTS_MESSAGE
    if not is_static(pod):
        taints = [Taint.from_dict(t) for t in (node.get("spec") or {}).get("taints") or []]
        tolerations = [Toleration.from_dict(t) for t in spec.get("tolerations") or []]
        untolerated = find_untolerated_taint(
            taints, tolerations, lambda t: t.effect == TaintEffect.NO_EXECUTE
        )
        if untolerated is not None:
            return TAINT_REASON, TAINT_MESSAGE
    return None
