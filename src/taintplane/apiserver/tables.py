"""Server-side printing: ``meta.k8s.io/v1`` Tables, with the columns kubectl shows.

``kubectl get`` asks for a Table and prints the cells as given, so every column here is what
users read. Column names and cell formats follow Kubernetes' ``pkg/printers/internalversion``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from taintplane.api.scheme import ResourceType
from taintplane.apiserver.table_columns import (
    AGE,
    NAME,
    Cell,
    Column,
    Obj,
    count_cell,
    field_cell,
    get_path,
    human_duration,
    or_none,
)
from taintplane.apiserver.table_rbac_dra import (
    CLUSTER_ROLE_BINDING_COLUMNS,
    DEFAULT_COLUMNS,
    DEVICE_TAINT_RULE_COLUMNS,
    RESOURCE_SLICE_COLUMNS,
    ROLE_BINDING_COLUMNS,
)
from taintplane.apiserver.table_workloads import (
    EVENT_COLUMNS,
    WORKLOAD_WIDE,
    PodSummary,
    claim_state,
)

__all__ = ["Column", "human_duration", "table_for"]

# ---- pods ----------------------------------------------------------------------------------


def _pod_ready(obj: Obj, _: datetime) -> object:
    summary = PodSummary(obj)
    return f"{summary.ready}/{summary.total}"


def _pod_status(obj: Obj, _: datetime) -> object:
    return PodSummary(obj).reason


def _pod_restarts(obj: Obj, now: datetime) -> object:
    return PodSummary(obj).restarts_cell(now)


def _pod_readiness_gates(obj: Obj, _: datetime) -> object:
    gates = get_path(obj, "spec", "readinessGates", default=[]) or []
    if not gates:
        return "<none>"
    conditions = {
        c.get("type"): c.get("status")
        for c in get_path(obj, "status", "conditions", default=[]) or []
    }
    ready = sum(1 for g in gates if conditions.get(g.get("conditionType")) == "True")
    return f"{ready}/{len(gates)}"


POD_COLUMNS = (
    NAME,
    Column(
        "Ready",
        _pod_ready,
        description=("The aggregate readiness state of this pod for accepting traffic."),
    ),
    Column(
        "Status", _pod_status, description="The aggregate status of the containers in this pod."
    ),
    Column(
        "Restarts",
        _pod_restarts,
        description=(
            "The number of times the containers in this pod have been restarted and "
            "when the last container in this pod has restarted."
        ),
    ),
    AGE,
    Column(
        "IP",
        lambda o, _: or_none(get_path(o, "status", "podIP")),
        priority=1,
        description=(
            "IP address allocated to the pod. Routable at least within the cluster. "
            "Empty if not yet allocated."
        ),
    ),
    Column(
        "Node",
        lambda o, _: or_none(get_path(o, "spec", "nodeName")),
        priority=1,
        description=("NodeName is a request to schedule this pod onto a specific node."),
    ),
    Column(
        "Nominated Node",
        lambda o, _: or_none(get_path(o, "status", "nominatedNodeName")),
        priority=1,
        description=(
            "nominatedNodeName is set only when this pod preempts other pods on the node."
        ),
    ),
    Column(
        "Readiness Gates",
        _pod_readiness_gates,
        priority=1,
        description=("If specified, all readiness gates will be evaluated for pod readiness."),
    ),
)

# ---- nodes ---------------------------------------------------------------------------------


def _node_status(obj: Obj, _: datetime) -> object:
    conditions = get_path(obj, "status", "conditions", default=[]) or []
    ready = next(
        (c for c in conditions if isinstance(c, Mapping) and c.get("type") == "Ready"), None
    )
    # printNode: Ready when the condition is True, NotReady for False and Unknown alike.
    state = "Unknown" if ready is None else "NotReady"
    if ready is not None and ready.get("status") == "True":
        state = "Ready"
    if get_path(obj, "spec", "unschedulable", default=False):
        state += ",SchedulingDisabled"
    return state


def _node_roles(obj: Obj, _: datetime) -> object:
    labels = get_path(obj, "metadata", "labels", default={}) or {}
    roles = set()
    for key, value in labels.items():
        if key.startswith("node-role.kubernetes.io/"):
            roles.add(key.split("/", 1)[1])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    roles.discard("")
    return ",".join(sorted(roles)) if roles else "<none>"


def _node_address(kind: str) -> Cell:
    def cell(obj: Obj, _: datetime) -> object:
        for address in get_path(obj, "status", "addresses", default=[]) or []:
            if isinstance(address, Mapping) and address.get("type") == kind:
                return address.get("address") or "<none>"
        return "<none>"

    return cell


def _node_info(field: str) -> Cell:
    # printNode: the kubelet version as reported, the -o wide fields <unknown> when unset.
    if field == "kubeletVersion":
        return lambda o, _: get_path(o, "status", "nodeInfo", field)
    return lambda o, _: get_path(o, "status", "nodeInfo", field) or "<unknown>"


NODE_COLUMNS = (
    NAME,
    Column("Status", _node_status, description="The status of the node"),
    Column("Roles", _node_roles, description="The roles of the node"),
    AGE,
    Column(
        "Version", _node_info("kubeletVersion"), description="Kubelet Version reported by the node."
    ),
    Column(
        "Internal-IP",
        _node_address("InternalIP"),
        priority=1,
        description=(
            "List of addresses reachable to the node. Queried from cloud provider, if available."
        ),
    ),
    Column(
        "External-IP",
        _node_address("ExternalIP"),
        priority=1,
        description=(
            "List of addresses reachable to the node. Queried from cloud provider, if available."
        ),
    ),
    Column(
        "OS-Image",
        _node_info("osImage"),
        priority=1,
        description=(
            "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))."
        ),
    ),
    Column(
        "Kernel-Version",
        _node_info("kernelVersion"),
        priority=1,
        description=(
            "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."
        ),
    ),
    Column(
        "Container-Runtime",
        _node_info("containerRuntimeVersion"),
        priority=1,
        description=(
            "ContainerRuntime Version reported by the node through runtime remote "
            "API (e.g. containerd://1.4.2)."
        ),
    ),
)

# ---- other kinds ---------------------------------------------------------------------------


def _controller(obj: Obj, _: datetime) -> str:
    """``printControllerRevision``'s CONTROLLER: ``daemonset.apps/agent``, or ``<none>``."""
    for ref in get_path(obj, "metadata", "ownerReferences", default=[]) or []:
        if isinstance(ref, Mapping) and ref.get("controller"):
            group = str(ref.get("apiVersion") or "").rpartition("/")[0]
            kind = str(ref.get("kind") or "")
            group_kind = f"{kind}.{group}" if group else kind
            return (
                f"{group_kind.lower()}/{ref.get('name', '')}"
                if group_kind
                else str(ref.get("name", ""))
            )
    return "<none>"


COLUMNS: dict[tuple[str, str], Sequence[Column]] = {
    ("", "Pod"): POD_COLUMNS,
    ("", "Node"): NODE_COLUMNS,
    ("", "Namespace"): (
        NAME,
        Column("Status", field_cell("status", "phase"), description="The status of the namespace"),
        AGE,
    ),
    ("", "Event"): EVENT_COLUMNS,
    ("coordination.k8s.io", "Lease"): (
        NAME,
        Column("Holder", field_cell("spec", "holderIdentity")),
        AGE,
    ),
    ("node.k8s.io", "RuntimeClass"): (NAME, Column("Handler", field_cell("handler")), AGE),
    ("scheduling.k8s.io", "PriorityClass"): (
        NAME,
        Column("Value", count_cell("value"), type_="integer"),
        Column("Global-Default", lambda o, _: bool(o.get("globalDefault")), type_="boolean"),
        AGE,
        Column("PreemptionPolicy", field_cell("preemptionPolicy")),
    ),
    ("apps", "ControllerRevision"): (
        NAME,
        Column("Controller", _controller, description="Controller of the object"),
        Column(
            "Revision",
            count_cell("revision"),
            description="Revision indicates the revision of the state represented by Data.",
        ),
        AGE,
    ),
    ("apps", "Deployment"): (
        NAME,
        Column(
            "Ready",
            lambda o, _: (
                f"{get_path(o, 'status', 'readyReplicas', default=0)}/"
                f"{get_path(o, 'spec', 'replicas', default=1)}"
            ),
        ),
        Column("Up-to-date", count_cell("status", "updatedReplicas"), type_="integer"),
        Column("Available", count_cell("status", "availableReplicas"), type_="integer"),
        AGE,
        *WORKLOAD_WIDE,
    ),
    ("apps", "ReplicaSet"): (
        NAME,
        Column("Desired", count_cell("spec", "replicas"), type_="integer"),
        Column("Current", count_cell("status", "replicas"), type_="integer"),
        Column("Ready", count_cell("status", "readyReplicas"), type_="integer"),
        AGE,
        *WORKLOAD_WIDE,
    ),
    ("apps", "DaemonSet"): (
        NAME,
        Column("Desired", count_cell("status", "desiredNumberScheduled"), type_="integer"),
        Column("Current", count_cell("status", "currentNumberScheduled"), type_="integer"),
        Column("Ready", count_cell("status", "numberReady"), type_="integer"),
        Column("Up-to-date", count_cell("status", "updatedNumberScheduled"), type_="integer"),
        Column("Available", count_cell("status", "numberAvailable"), type_="integer"),
        Column(
            "Node Selector",
            lambda o, _: (
                ",".join(
                    f"{k}={v}"
                    for k, v in sorted(
                        (
                            get_path(o, "spec", "template", "spec", "nodeSelector", default={})
                            or {}
                        ).items()
                    )
                )
                or "<none>"
            ),
        ),
        AGE,
        *WORKLOAD_WIDE,
    ),
    ("policy", "PodDisruptionBudget"): (
        NAME,
        Column("Min Available", lambda o, _: get_path(o, "spec", "minAvailable", default="N/A")),
        Column(
            "Max Unavailable", lambda o, _: get_path(o, "spec", "maxUnavailable", default="N/A")
        ),
        Column("Allowed Disruptions", count_cell("status", "disruptionsAllowed"), type_="integer"),
        AGE,
    ),
    ("resource.k8s.io", "ResourceClaim"): (
        NAME,
        Column(
            "State",
            claim_state,
            description="A summary of the current state (allocated, pending, reserved, etc.).",
        ),
        AGE,
    ),
    ("resource.k8s.io", "ResourceSlice"): RESOURCE_SLICE_COLUMNS,
    ("resource.k8s.io", "DeviceTaintRule"): DEVICE_TAINT_RULE_COLUMNS,
    # Roles have no printer upstream: the registry's default table convertor prints them.
    ("rbac.authorization.k8s.io", "Role"): DEFAULT_COLUMNS,
    ("rbac.authorization.k8s.io", "ClusterRole"): DEFAULT_COLUMNS,
    ("rbac.authorization.k8s.io", "RoleBinding"): ROLE_BINDING_COLUMNS,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): CLUSTER_ROLE_BINDING_COLUMNS,
}


def table_for(
    resource: ResourceType,
    objects: Sequence[Mapping[str, Any]],
    now: datetime,
    *,
    include_object: str = "Metadata",
    with_definitions: bool = True,
    list_meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    columns = COLUMNS.get((resource.group, resource.kind), (NAME, AGE))
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": [column.cell(obj, now) for column in columns]}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj.get("metadata") or {},
            }
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(list_meta or {}),
        "columnDefinitions": [c.definition() for c in columns] if with_definitions else [],
        "rows": rows,
    }
