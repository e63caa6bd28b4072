"""What ``0/N nodes are available`` does not say, per node: the verdict, every plugin that
rejects it and why (the scheduler's own reason first), with the actual taint, affinity term,
resource numbers or device taints; the tolerations (pod tolerations, DeviceTolerations on a
claim's request) that would let the pod on, offered only when they alone make the node
feasible; for the nodes that fit, the score of each plugin. Computed by the scheduler's own
code on the cluster as the API shows it now, ResourceClaims, ResourceSlices, DeviceClasses and
DeviceTaintRules included.

Shared by ``taintplane explain pod`` and the dashboard (which is handed :func:`explain_pods` by
the composition root: the web layer does not import the scheduler).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taintplane.client import ApiError, Client, resource
from taintplane.client.informer import object_key
from taintplane.clock import RealClock
from taintplane.scheduler.explain_detail import detail
from taintplane.scheduler.explain_fixes import device_detail, failures, verified_fix
from taintplane.scheduler.framework import CycleState, Status
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names
from taintplane.scheduler.scheduler import (
    DEVICE_CLASSES,
    DEVICE_TAINT_RULES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    Scheduler,
)

__all__ = ["explain_pod", "explain_pods"]

NODES = resource("", "v1", "nodes")
PODS = resource("", "v1", "pods")


async def _list(client: Client, rt: Any) -> list[dict[str, Any]]:
    """Every object of a kind; none when the server does not serve it (DeviceTaintRules are
    alpha, served only with their feature gate)."""
    try:
        items, _ = await client.list(rt)
    except ApiError as error:
        if error.code == 404:
            return []
        raise
    return items


async def _view(
    client: Client,
    leave_out: set[str],
    nodes: Sequence[dict[str, Any]] | None = None,
    pods: Sequence[dict[str, Any]] | None = None,
) -> Scheduler:
    """A scheduler that has seen the cluster as the API shows it now, less the pods whose uid
    is in ``leave_out``: nodes, pods (read here unless the caller has just read them), and the
    claims, slices, classes and DeviceTaintRules DynamicResources reads."""
    view = Scheduler(client, RealClock(), seed=0)
    for node_object in nodes if nodes is not None else await _list(client, NODES):
        view._node_added(node_object)
    for other in pods if pods is not None else await _list(client, PODS):
        if other["metadata"].get("uid") not in leave_out:
            view._pod_added(other)
    caches = view.dra_caches
    caches.claims = {object_key(c): c for c in await _list(client, RESOURCE_CLAIMS)}
    caches.slices = {object_key(s): s for s in await _list(client, RESOURCE_SLICES)}
    caches.classes = {object_key(c): c for c in await _list(client, DEVICE_CLASSES)}
    caches.rules = {object_key(r): r for r in await _list(client, DEVICE_TAINT_RULES)}
    return view


def _rejected_row(
    view: Scheduler,
    pending: dict[str, Any],
    info: PodInfo,
    state: CycleState | None,
    status: Status,
    node: NodeInfo,
    prefilter_rejected: bool,
) -> dict[str, Any]:
    """The scheduler's own verdict first, then every other plugin that rejects the node, and
    the tolerations that would make it feasible when there are such."""
    found = [status]
    if state is not None and not prefilter_rejected:
        found += [s for s in failures(view, state, info, node) if s.plugin != status.plugin]
    rows = []
    tolerations: list[dict[str, Any]] = []
    for failure in found:
        text, suggested = detail(failure.plugin, info, node)
        if failure.plugin == names.DYNAMIC_RESOURCES and state is not None:
            text = device_detail(view, state, node)
        tolerations += suggested
        rows.append({"plugin": failure.plugin, "reason": failure.message, "detail": text})
    fix = None
    if state is not None and not prefilter_rejected:
        fix = verified_fix(view, pending, state, node, found, tolerations)
    works = fix is not None and not fix.remaining
    return {
        "node": node.name,
        "verdict": "rejected",
        **rows[0],
        "failures": rows,
        "tolerations": fix.pod_tolerations if fix is not None and works else [],
        "deviceTolerations": fix.device_tolerations if fix is not None and works else [],
        # Tolerations were tried and would not be enough: what would still reject the node.
        "stillRejectedBy": (
            [{"plugin": s.plugin, "reason": s.message} for s in fix.remaining]
            if fix is not None
            else []
        ),
        "scores": {},
        "total": None,
    }


async def explain_pod(client: Client, name: str, namespace: str) -> dict[str, Any]:
    pod = await client.get(PODS, name, namespace)
    view = await _view(client, {pod["metadata"].get("uid")})
    return _report(view, pod)


async def explain_pods(
    client: Client,
    pods: Sequence[dict[str, Any]],
    *,
    nodes: Sequence[dict[str, Any]] | None = None,
    cluster_pods: Sequence[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """:func:`explain_pod` for each of ``pods`` (as read by the caller), against one view of
    the cluster: each is explained as if the others were not there either, which for pods not
    yet bound changes nothing (they hold no node's resources). ``nodes`` and ``cluster_pods``:
    every node and pod, when the caller has just listed them (the dashboard), saving a read."""
    if not pods:
        return []
    leave_out = {p["metadata"].get("uid") for p in pods}
    view = await _view(client, leave_out, nodes, cluster_pods)
    return [_report(view, pod) for pod in pods]


def _report(view: Scheduler, pod: dict[str, Any]) -> dict[str, Any]:
    name, namespace = pod["metadata"]["name"], pod["metadata"].get("namespace", "")
    # As the scheduler would see it now: a bound pod is explained as if it were pending.
    pending = {**pod, "spec": {k: v for k, v in (pod.get("spec") or {}).items() if k != "nodeName"}}
    decision = view.explain(pending)
    info = PodInfo.of(pending)  # once, not per node
    rows = []
    diagnosis = decision.diagnosis
    statuses = diagnosis.node_statuses if diagnosis else {}
    prefilter_rejected = bool(diagnosis and diagnosis.pre_filter_message)
    for node in view.placement.node_order():
        status = statuses.get(node.name)
        if status is None and diagnosis and node.name not in decision.feasible:
            # Not filtered at all: a PreFilter rejected the pod, or named other nodes.
            status = diagnosis.absent_status
        if status is None:
            scores = {
                plugin: per_node[node.name] for plugin, per_node in (decision.scores or {}).items()
            }
            rows.append(
                {
                    "node": node.name,
                    "verdict": "fits",
                    "plugin": "",
                    "reason": "",
                    "detail": "",
                    "failures": [],
                    "tolerations": [],
                    "deviceTolerations": [],
                    "stillRejectedBy": [],
                    "scores": scores,
                    "total": sum(scores.values()),
                }
            )
        else:
            rows.append(
                _rejected_row(view, pending, info, decision.state, status, node, prefilter_rejected)
            )
    return {
        "pod": f"{namespace}/{name}",
        "boundTo": (pod.get("spec") or {}).get("nodeName") or None,
        "message": decision.message or None,
        "choice": decision.node or None,
        "preemption": (
            {
                "node": decision.nominated,
                "victims": [f"{v.namespace}/{v.name}" for v in decision.victims],
            }
            if decision.nominated
            else None
        ),
        "nodes": rows,
    }
