"""Table columns for RBAC (roles and their bindings) and DRA's ResourceSlices and
DeviceTaintRules, as kube-apiserver prints them."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from taintplane.api.decoding import parse_timestamp
from taintplane.apiserver.table_columns import (
    AGE,
    AGE_DESCRIPTION,
    NAME,
    Cell,
    Column,
    Obj,
    field_cell,
    get_path,
    since,
)

__all__ = [
    "CLUSTER_ROLE_BINDING_COLUMNS",
    "DEFAULT_COLUMNS",
    "DEVICE_TAINT_RULE_COLUMNS",
    "RESOURCE_SLICE_COLUMNS",
    "ROLE_BINDING_COLUMNS",
]


def _created_at(obj: Obj, _: datetime) -> str:
    """``rest.NewDefaultTableConvertor``'s cell: the creation time itself, RFC 3339 in UTC."""
    stamp = get_path(obj, "metadata", "creationTimestamp")
    created = parse_timestamp(stamp)
    if created is None:
        created = datetime.min.replace(tzinfo=UTC)  # Go's zero time, as an unset stamp prints
    return created.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


#: The default table convertor's columns, used by kinds without a printer (Role, ClusterRole).
DEFAULT_COLUMNS = (
    NAME,
    Column("Created At", _created_at, type_="date", description=AGE_DESCRIPTION),
)


def _role_ref(obj: Obj, _: datetime) -> str:
    return f"{get_path(obj, 'roleRef', 'kind')}/{get_path(obj, 'roleRef', 'name')}"


def _subjects(kind: str) -> Cell:
    """``rbac.SubjectsStrings``: users and groups by name, service accounts as ns/name."""

    def cell(obj: Obj, _: datetime) -> str:
        names = []
        for subject in get_path(obj, "subjects", default=[]) or []:
            if isinstance(subject, Mapping) and subject.get("kind") == kind:
                name = str(subject.get("name") or "")
                if kind == "ServiceAccount":
                    name = f"{subject.get('namespace') or ''}/{name}"
                names.append(name)
        return ", ".join(names)

    return cell


def _binding_columns(binding: str, role_ref_description: str) -> tuple[Column, ...]:
    return (
        NAME,
        Column("Role", _role_ref, description=role_ref_description),
        AGE,
        Column("Users", _subjects("User"), priority=1, description=f"Users in the {binding}"),
        Column("Groups", _subjects("Group"), priority=1, description=f"Groups in the {binding}"),
        Column(
            "ServiceAccounts",
            _subjects("ServiceAccount"),
            priority=1,
            description=f"ServiceAccounts in the {binding}",
        ),
    )


_UNRESOLVED = "If the RoleRef cannot be resolved, the Authorizer must return an error."
ROLE_BINDING_COLUMNS = _binding_columns(
    "roleBinding",
    "RoleRef can reference a Role in the current namespace or a ClusterRole in the global "
    f"namespace. {_UNRESOLVED}",
)
CLUSTER_ROLE_BINDING_COLUMNS = _binding_columns(
    "clusterRoleBinding",
    f"RoleRef can only reference a ClusterRole in the global namespace. {_UNRESOLVED}",
)


def _slice_node(obj: Obj, _: datetime) -> str:
    # printResourceSlice leaves the cell empty for slices not bound to one node.
    return str(get_path(obj, "spec", "nodeName"))


RESOURCE_SLICE_COLUMNS = (
    NAME,
    Column(
        "Node",
        _slice_node,
        description=(
            "NodeName identifies the node which provides the resources in this pool. A field "
            "selector can be used to list only ResourceSlice objects belonging to a certain "
            "node.\n\nThis field can be used to limit access from nodes to ResourceSlices with "
            "the same node name. It also indicates to autoscalers that adding new nodes of the "
            "same type as some old node might also make new resources available.\n\nExactly "
            "one of NodeName, NodeSelector, AllNodes, and PerDeviceNodeSelection must be set. "
            "This field is immutable."
        ),
    ),
    Column(
        "Driver",
        field_cell("spec", "driver"),
        description=(
            "Driver identifies the DRA driver providing the capacity information. A field "
            "selector can be used to list only ResourceSlice objects with a certain driver "
            "name.\n\nMust be a DNS subdomain and should end with a DNS domain owned by the "
            "vendor of the driver. It should use only lower case characters. This field is "
            "immutable."
        ),
    ),
    Column(
        "Pool",
        field_cell("spec", "pool", "name"),
        description=(
            "Name is used to identify the pool. For node-local devices, this is often the node "
            "name, but this is not required.\n\nIt must not be longer than 253 characters and "
            "must consist of one or more DNS sub-domains separated by slashes. This field is "
            "immutable."
        ),
    ),
    AGE,
)


def _taint_time_added(obj: Obj, now: datetime) -> str:
    added = get_path(obj, "spec", "taint", "timeAdded", default=None)
    return since(added, now) if added is not None else ""


# printDeviceTaint: the selector is left out (it may be long CEL); the taint says more.
DEVICE_TAINT_RULE_COLUMNS = (
    NAME,
    Column(
        "Key",
        field_cell("spec", "taint", "key"),
        description="The taint key to be applied to a device. Must be a label name.",
    ),
    Column(
        "Value",
        field_cell("spec", "taint", "value"),
        description="The taint value corresponding to the taint key. Must be a label value.",
    ),
    Column(
        "Effect",
        field_cell("spec", "taint", "effect"),
        description=(
            "The effect of the taint on claims that do not tolerate the taint and through such "
            "claims on the pods using them.\n\nValid effects are None, NoSchedule and "
            "NoExecute. PreferNoSchedule as used for nodes is not valid here. More effects may "
            "get added in the future. Consumers must treat unknown effects like None."
        ),
    ),
    Column(
        "TimeAdded",
        _taint_time_added,
        description=(
            "TimeAdded represents the time at which the taint was added. Added automatically "
            "during create or update if not set."
        ),
    ),
    AGE,
)
