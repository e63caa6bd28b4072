"""Server-side printing: ``meta.k8s.io/v1`` Tables, with the columns kubectl shows.

``kubectl get`` asks for a Table and prints the cells as given, so every column here is what
users read. Column names and cell formats follow Kubernetes' ``pkg/printers/internalversion``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from taintplane.api.scheme import ResourceType

__all__ = ["Column", "human_duration", "table_for"]

NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
AGE_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)

Obj = Mapping[str, Any]
Cell = Callable[[Obj, datetime], object]


class Column:
    def __init__(
        self,
        name: str,
        cell: Cell,
        *,
        priority: int = 0,
        type_: str = "string",
        fmt: str = "",
        description: str = "",
    ) -> None:
        self.name, self.cell, self.priority = name, cell, priority
        self.type, self.format = type_, fmt
        self.description = description or name

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if rest == 0 else f"{hours // 24 // 365}y{rest}d"
    return f"{hours // 24 // 365}y"


def _since(stamp: object, now: datetime) -> str:
    if not isinstance(stamp, str) or not stamp:
        return "<unknown>"
    try:
        then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    return human_duration((now - then).total_seconds())


def _name(obj: Obj, _: datetime) -> object:
    return (obj.get("metadata") or {}).get("name", "")


def _age(obj: Obj, now: datetime) -> object:
    return _since((obj.get("metadata") or {}).get("creationTimestamp"), now)


NAME = Column("Name", _name, fmt="name", description=NAME_DESCRIPTION)
AGE = Column("Age", _age, description=AGE_DESCRIPTION)


def _get(obj: Obj, *path: str, default: object = "") -> Any:
    current: Any = obj
    for part in path:
        if not isinstance(current, Mapping):
            return default
        current = current.get(part)
    return default if current is None else current


def _or_none(value: object) -> object:
    return value if value not in (None, "") else "<none>"


# ---- pods ----------------------------------------------------------------------------------


def _pod_ready(obj: Obj, _: datetime) -> object:
    containers = _get(obj, "spec", "containers", default=[]) or []
    statuses = _get(obj, "status", "containerStatuses", default=[]) or []
    ready = sum(1 for s in statuses if isinstance(s, Mapping) and s.get("ready"))
    return f"{ready}/{len(containers)}"


def _pod_status(obj: Obj, _: datetime) -> object:
    """kubectl's STATUS column (upstream's printPod, for regular containers): the pod's reason
    or phase, overridden by the first container (from the last) that waits or terminated with
    a reason (else its signal or exit code); Terminating while being deleted unless the phase
    is already terminal; Unknown for a deleted pod on a lost node."""
    status = _get(obj, "status", default={}) or {}
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    gated = any(
        isinstance(c, Mapping)
        and c.get("type") == "PodScheduled"
        and c.get("reason") == "SchedulingGated"
        for c in status.get("conditions") or []
    )
    if gated or (not reason and _get(obj, "spec", "schedulingGates")):
        reason = "SchedulingGated"
    has_running = False
    for state in reversed(status.get("containerStatuses") or []):
        if not isinstance(state, Mapping):
            continue
        waiting = _get(state, "state", "waiting", default=None)
        terminated = _get(state, "state", "terminated", default=None)
        if isinstance(waiting, Mapping) and waiting.get("reason"):
            reason = waiting["reason"]
        elif isinstance(terminated, Mapping) and terminated.get("reason"):
            reason = terminated["reason"]
        elif isinstance(terminated, Mapping):
            signal = terminated.get("signal") or 0
            reason = f"Signal:{signal}" if signal else f"ExitCode:{terminated.get('exitCode', 0)}"
        elif _get(state, "state", "running", default=None) is not None and state.get("ready"):
            has_running = True
    if reason == "Completed" and has_running:
        ready = any(
            isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or []
        )
        reason = "Running" if ready else "NotReady"
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"
    return reason


def _pod_restarts(obj: Obj, _: datetime) -> object:
    statuses = _get(obj, "status", "containerStatuses", default=[]) or []
    return str(sum(int(s.get("restartCount") or 0) for s in statuses if isinstance(s, Mapping)))


def _pod_readiness_gates(obj: Obj, _: datetime) -> object:
    gates = _get(obj, "spec", "readinessGates", default=[]) or []
    if not gates:
        return "<none>"
    conditions = {
        c.get("type"): c.get("status") for c in _get(obj, "status", "conditions", default=[]) or []
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
        lambda o, _: _or_none(_get(o, "status", "podIP")),
        priority=1,
        description=(
            "IP address allocated to the pod. Routable at least within the cluster. "
            "Empty if not yet allocated."
        ),
    ),
    Column(
        "Node",
        lambda o, _: _or_none(_get(o, "spec", "nodeName")),
        priority=1,
        description=("NodeName is a request to schedule this pod onto a specific node."),
    ),
    Column(
        "Nominated Node",
        lambda o, _: _or_none(_get(o, "status", "nominatedNodeName")),
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
    conditions = _get(obj, "status", "conditions", default=[]) or []
    ready = next(
        (c for c in conditions if isinstance(c, Mapping) and c.get("type") == "Ready"), None
    )
    # printNode: Ready when the condition is True, NotReady for False and Unknown alike.
    state = "Unknown" if ready is None else "NotReady"
    if ready is not None and ready.get("status") == "True":
        state = "Ready"
    if _get(obj, "spec", "unschedulable", default=False):
        state += ",SchedulingDisabled"
    return state


def _node_roles(obj: Obj, _: datetime) -> object:
    labels = _get(obj, "metadata", "labels", default={}) or {}
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
        for address in _get(obj, "status", "addresses", default=[]) or []:
            if isinstance(address, Mapping) and address.get("type") == kind:
                return address.get("address") or "<none>"
        return "<none>"

    return cell


def _node_info(field: str) -> Cell:
    return lambda o, _: (
        _or_none(_get(o, "status", "nodeInfo", field))
        if field != "kubeletVersion"
        else _get(o, "status", "nodeInfo", field)
    )


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


def _field(*path: str) -> Cell:
    return lambda o, _: _get(o, *path)


def _count(*path: str) -> Cell:
    return lambda o, _: int(_get(o, *path, default=0) or 0)


def _controller(obj: Obj, _: datetime) -> str:
    """``printControllerRevision``'s CONTROLLER: ``daemonset.apps/agent``, or ``<none>``."""
    for ref in _get(obj, "metadata", "ownerReferences", default=[]) or []:
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
        Column("Status", _field("status", "phase"), description="The status of the namespace"),
        AGE,
    ),
    ("", "Event"): (
        Column(
            "Last Seen", lambda o, now: _since(o.get("lastTimestamp") or o.get("eventTime"), now)
        ),
        Column("Type", _field("type")),
        Column("Reason", _field("reason")),
        Column(
            "Object",
            lambda o, _: (
                f"{str(_get(o, 'involvedObject', 'kind')).lower()}/"
                f"{_get(o, 'involvedObject', 'name')}"
            ),
        ),
        Column("Message", _field("message")),
    ),
    ("coordination.k8s.io", "Lease"): (
        NAME,
        Column("Holder", _field("spec", "holderIdentity")),
        AGE,
    ),
    ("node.k8s.io", "RuntimeClass"): (NAME, Column("Handler", _field("handler")), AGE),
    ("scheduling.k8s.io", "PriorityClass"): (
        NAME,
        Column("Value", _count("value"), type_="integer"),
        Column("Global-Default", lambda o, _: bool(o.get("globalDefault")), type_="boolean"),
        AGE,
        Column("PreemptionPolicy", _field("preemptionPolicy")),
    ),
    ("apps", "ControllerRevision"): (
        NAME,
        Column("Controller", _controller, description="Controller of the object"),
        Column(
            "Revision",
            _count("revision"),
            description="Revision indicates the revision of the state represented by Data.",
        ),
        AGE,
    ),
    ("apps", "Deployment"): (
        NAME,
        Column(
            "Ready",
            lambda o, _: (
                f"{_get(o, 'status', 'readyReplicas', default=0)}/"
                f"{_get(o, 'spec', 'replicas', default=1)}"
            ),
        ),
        Column("Up-to-date", _count("status", "updatedReplicas"), type_="integer"),
        Column("Available", _count("status", "availableReplicas"), type_="integer"),
        AGE,
    ),
    ("apps", "ReplicaSet"): (
        NAME,
        Column("Desired", _count("spec", "replicas"), type_="integer"),
        Column("Current", _count("status", "replicas"), type_="integer"),
        Column("Ready", _count("status", "readyReplicas"), type_="integer"),
        AGE,
    ),
    ("apps", "DaemonSet"): (
        NAME,
        Column("Desired", _count("status", "desiredNumberScheduled"), type_="integer"),
        Column("Current", _count("status", "currentNumberScheduled"), type_="integer"),
        Column("Ready", _count("status", "numberReady"), type_="integer"),
        Column("Up-to-date", _count("status", "updatedNumberScheduled"), type_="integer"),
        Column("Available", _count("status", "numberAvailable"), type_="integer"),
        Column(
            "Node Selector",
            lambda o, _: (
                ",".join(
                    f"{k}={v}"
                    for k, v in sorted(
                        (
                            _get(o, "spec", "template", "spec", "nodeSelector", default={}) or {}
                        ).items()
                    )
                )
                or "<none>"
            ),
        ),
        AGE,
    ),
    ("policy", "PodDisruptionBudget"): (
        NAME,
        Column("Min Available", lambda o, _: _get(o, "spec", "minAvailable", default="N/A")),
        Column("Max Unavailable", lambda o, _: _get(o, "spec", "maxUnavailable", default="N/A")),
        Column("Allowed Disruptions", _count("status", "disruptionsAllowed"), type_="integer"),
        AGE,
    ),
    ("resource.k8s.io", "ResourceSlice"): (
        NAME,
        Column("Node", lambda o, _: _or_none(_get(o, "spec", "nodeName"))),
        Column("Driver", _field("spec", "driver")),
        Column("Pool", _field("spec", "pool", "name")),
        AGE,
    ),
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
