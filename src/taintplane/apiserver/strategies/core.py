"""Nodes, namespaces, events, RuntimeClasses and the RBAC kinds."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from taintplane.admission.priority import (
    DEFAULT_PREEMPTION_POLICY,
    HIGHEST_USER_DEFINABLE_PRIORITY,
    SYSTEM_PRIORITY_CLASSES,
)
from taintplane.api.field import FieldError, Path
from taintplane.api.gofmt import GoStruct
from taintplane.api.taints import parse_taints
from taintplane.api.tolerations import parse_tolerations
from taintplane.api.validation import validate_node_taints, validate_runtimeclass_scheduling
from taintplane.apiserver.strategies.base import Strategy, _dns1123_label, meta, spec_of
from taintplane.apiserver.strategies.rbac_validation import (
    default_binding,
    validate_aggregation_rule,
    validate_binding,
    validate_binding_update,
    validate_rules,
)
from taintplane.apiserver.strategies.resource_requirements import _quantities as quantities
from taintplane.apiserver.strategies.resource_requirements import (
    _quantity_errors as quantity_errors,
)
from taintplane.apiserver.strategies.runtimeclass_validation import validate_overhead

__all__ = [
    "NAMESPACE_NAME_LABEL",
    "EventStrategy",
    "NamespaceStrategy",
    "NodeStrategy",
    "PriorityClassStrategy",
    "RbacStrategy",
    "RuntimeClassStrategy",
]


class NodeStrategy(Strategy):
    # nodeStatusStrategy resets the spec alone: metadata written with a status is kept, and
    # what a node may change of its own (labels, owners) is NodeRestriction's to refuse,
    # on every subresource.

    #: NodeStatus' two struct fields without omitempty: kube-apiserver serializes them even
    #: for a node created without status (before any kubelet reports), with zero values.
    ZERO_NODE_INFO: Mapping[str, str] = dict.fromkeys(
        (
            "machineID",
            "systemUUID",
            "bootID",
            "kernelVersion",
            "osImage",
            "containerRuntimeVersion",
            "kubeletVersion",
            "kubeProxyVersion",
            "operatingSystem",
            "architecture",
        ),
        "",
    )

    def default(self, obj: dict[str, Any]) -> None:
        super().default(obj)
        status = obj.get("status")
        if not isinstance(status, dict):
            return
        endpoints = status.get("daemonEndpoints")
        if not isinstance(endpoints, dict):
            endpoints = status["daemonEndpoints"] = {}
        kubelet = endpoints.get("kubeletEndpoint")
        if not isinstance(kubelet, dict):
            kubelet = endpoints["kubeletEndpoint"] = {}
        kubelet.setdefault("Port", 0)
        info = status.get("nodeInfo")
        if not isinstance(info, dict):
            info = status["nodeInfo"] = {}
        for key, zero in self.ZERO_NODE_INFO.items():
            if info.get(key) is None:
                info[key] = zero

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        errors = self.validate_object_meta(obj)
        # Kubernetes validates spec.taints under the path "metadata.taints".
        taints = parse_taints(spec_of(obj).get("taints"), Path.root("spec", "taints"))
        return errors + validate_node_taints(taints, Path.root("metadata", "taints"))

    def validate_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        """ValidateNodeUpdate: the node's rules, valid capacity and allocatable quantities
        (validateNodeResources), and no address reported twice."""
        errors = self.validate(new)
        status = new.get("status")
        for key in ("capacity", "allocatable"):
            resources = status.get(key) if isinstance(status, dict) else None
            for name, text, amount in quantities(resources):
                errors += quantity_errors(name, text, amount, Path.root("status", key, name))
        addresses = status.get("addresses") if isinstance(status, dict) else None
        seen: list[Any] = []
        for i, address in enumerate(addresses if isinstance(addresses, list) else []):
            if address in seen and isinstance(address, dict):
                value = GoStruct(
                    (("type", address.get("type")), ("address", address.get("address")))
                )
                errors.append(
                    FieldError.duplicate(Path.root("status", "addresses").index(i), value)
                )
            seen.append(address)
        return errors

    def field_values(self, obj: Mapping[str, Any]) -> dict[str, str]:
        fields = super().field_values(obj)
        fields["spec.unschedulable"] = (
            "true" if (obj.get("spec") or {}).get("unschedulable") else "false"
        )
        return fields


#: v1.LabelMetadataName: every namespace carries its own name as this label.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def label_namespace_name(obj: dict[str, Any]) -> None:
    """SetDefaults_Namespace (and the namespace strategy's Canonicalize): the label
    ``kubernetes.io/metadata.name`` is the namespace's name, whatever a client sent, so it
    cannot be removed or changed. A nameless namespace (generateName) waits for its name."""
    metadata = meta(obj)
    name = metadata.get("name")
    if not name:
        return
    labels = metadata.get("labels")
    if not isinstance(labels, dict):
        labels = metadata["labels"] = {}
    labels[NAMESPACE_NAME_LABEL] = name


class NamespaceStrategy(Strategy):
    name_format = "label"

    def default(self, obj: dict[str, Any]) -> None:
        super().default(obj)
        label_namespace_name(obj)
        status = obj.get("status")
        if isinstance(status, dict) and not status.get("phase"):
            status["phase"] = "Active"  # SetDefaults_NamespaceStatus

    def validate_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        """ValidateNamespaceStatusUpdate: the phase says whether the namespace is going."""
        errors = self.validate_object_meta(new)
        status = new.get("status")
        phase = (status.get("phase") if isinstance(status, dict) else "") or ""
        if not meta(new).get("deletionTimestamp"):
            if phase != "Active":
                errors.append(
                    FieldError.invalid(
                        Path.root("status", "Phase"),
                        phase,
                        "may only be 'Active' if `deletionTimestamp` is empty",
                    )
                )
        elif phase != "Terminating":
            errors.append(
                FieldError.invalid(
                    Path.root("status", "Phase"),
                    phase,
                    "may only be 'Terminating' if `deletionTimestamp` is not empty",
                )
            )
        return errors

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        # Canonicalize's share: a generated name is known only now.
        label_namespace_name(obj)
        # The namespace controller's finalizer is always there at creation (it may be
        # removed later through namespaces/finalize), after any the client asked for.
        finalizers = list((obj.get("spec") or {}).get("finalizers") or [])
        if "kubernetes" not in finalizers:
            finalizers.append("kubernetes")
        obj["spec"] = {"finalizers": finalizers}
        obj["status"] = {"phase": "Active"}

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_for_update(new, old)
        new["spec"] = old.get("spec", {})

    def field_values(self, obj: Mapping[str, Any]) -> dict[str, str]:
        fields = super().field_values(obj)
        fields["status.phase"] = str((obj.get("status") or {}).get("phase") or "")
        return fields


class EventStrategy(Strategy):
    has_spec = False

    #: What Kubernetes writes for an Event's fields left empty: Go's JSON has no omitempty
    #: for structs and prints a zero Time as null, so an Event recorded through
    #: events.k8s.io/v1 (no deprecated fields) reads ``source: {}``, ``firstTimestamp:
    #: null``, ``lastTimestamp: null`` in core/v1 (``deprecatedSource: {}``, … in
    #: events.k8s.io/v1), and one from the core/v1 recorder reads ``eventTime: null``. An
    #: empty count is left out (omitempty on an int).
    ZERO_VALUES: Mapping[str, Any] = {
        "involvedObject": {},
        "source": {},
        "firstTimestamp": None,
        "lastTimestamp": None,
        "eventTime": None,
        "reportingComponent": "",
        "reportingInstance": "",
    }

    def default(self, obj: dict[str, Any]) -> None:
        super().default(obj)
        for field, zero in self.ZERO_VALUES.items():
            if obj.get(field) is None:
                obj[field] = copy.copy(zero)

    def field_values(self, obj: Mapping[str, Any]) -> dict[str, str]:
        fields = super().field_values(obj)
        involved = obj.get("involvedObject") or {}
        source = obj.get("source") or {}
        for key in (
            "kind",
            "namespace",
            "name",
            "uid",
            "apiVersion",
            "resourceVersion",
            "fieldPath",
        ):
            fields[f"involvedObject.{key}"] = str(involved.get(key) or "")
        fields["reason"] = str(obj.get("reason") or "")
        fields["reportingComponent"] = str(obj.get("reportingComponent") or "")
        fields["source"] = str(source.get("component") or "")
        fields["type"] = str(obj.get("type") or "")
        return fields


class RuntimeClassStrategy(Strategy):
    has_spec = False

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        errors = self.validate_object_meta(obj)
        handler = str(obj.get("handler") or "")
        # NameIsDNSLabel: an empty handler fails the label format too (no "Required value").
        errors += [
            FieldError.invalid(Path.root("handler"), handler, problem)
            for problem in _dns1123_label(handler)
        ]
        errors += validate_overhead(obj.get("overhead"), Path.root("overhead"))
        scheduling = obj.get("scheduling")
        if isinstance(scheduling, dict):
            path = Path.root("scheduling")
            tolerations = parse_tolerations(
                scheduling.get("tolerations"), path.child("tolerations")
            )
            selector = scheduling.get("nodeSelector")
            errors += validate_runtimeclass_scheduling(
                {str(k): str(v) for k, v in selector.items()}
                if isinstance(selector, dict)
                else None,
                tolerations,
                path,
            )
        return errors

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        errors = self.validate(new)
        if new.get("handler") != old.get("handler"):
            errors.append(
                FieldError.invalid(Path.root("handler"), new.get("handler"), "field is immutable")
            )
        return errors


class RbacStrategy(Strategy):
    """Role, ClusterRole, RoleBinding and ClusterRoleBinding (one strategy, told apart by
    kind, as their rules differ only in what a namespaced object may refer to)."""

    name_format = "path"
    has_spec = False

    @property
    def is_binding(self) -> bool:
        return self.resource.kind.endswith("Binding")

    def default(self, obj: dict[str, Any]) -> None:
        super().default(obj)
        if self.is_binding:
            default_binding(obj)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return self.validate_object_meta(obj) + self._validate_kind(obj, None)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        return self.validate_object_meta(new) + self._validate_kind(new, old)

    def _validate_kind(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        namespaced = self.resource.namespaced
        if self.is_binding:
            if old is None:
                return validate_binding(obj, namespaced=namespaced)
            return validate_binding_update(obj, old, namespaced=namespaced)
        errors = validate_rules(obj, namespaced=namespaced)
        if not namespaced:
            # A ClusterRole stored before selector values were checked may keep them.
            grandfathered = old is not None and bool(validate_aggregation_rule(old))
            errors += validate_aggregation_rule(obj, allow_invalid_label_values=grandfathered)
        return errors


class PriorityClassStrategy(Strategy):
    """scheduling.k8s.io/v1 PriorityClass: value is immutable; ``system-`` names are reserved
    for the built-in classes; user classes stay at or below 1e9."""

    has_spec = False

    def default(self, obj: dict[str, Any]) -> None:
        super().default(obj)
        obj.setdefault("preemptionPolicy", DEFAULT_PREEMPTION_POLICY)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        errors = self.validate_object_meta(obj)
        name = str(meta(obj).get("name") or "")
        value = obj.get("value")
        if value is None:
            errors.append(FieldError.required(Path.root("value")))
            value = 0
        if name.startswith("system-"):
            problem = _system_class_problem(name, int(value), bool(obj.get("globalDefault")))
            if problem:
                errors.append(
                    FieldError.forbidden(
                        Path.root("metadata", "name"),
                        "priority class names with 'system-' prefix are reserved for system "
                        f"use only. error: {problem}",
                    )
                )
        elif int(value) > HIGHEST_USER_DEFINABLE_PRIORITY:
            errors.append(
                FieldError.forbidden(
                    Path.root("value"),
                    "maximum allowed value of a user defined priority is "
                    f"{HIGHEST_USER_DEFINABLE_PRIORITY}",
                )
            )
        policy = obj.get("preemptionPolicy")
        if policy not in ("Never", "PreemptLowerPriority"):
            errors.append(
                FieldError.not_supported(
                    Path.root("preemptionPolicy"), policy, ("Never", "PreemptLowerPriority")
                )
            )
        return errors

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        errors = self.validate(new)
        if new.get("value") != old.get("value"):
            errors.append(
                FieldError.forbidden(Path.root("value"), "may not be changed in an update.")
            )
        if new.get("preemptionPolicy") != old.get("preemptionPolicy"):
            errors.append(
                FieldError.invalid(
                    Path.root("preemptionPolicy"), new.get("preemptionPolicy"), "field is immutable"
                )
            )
        return errors


def _system_class_problem(name: str, value: int, global_default: bool) -> str:
    known = SYSTEM_PRIORITY_CLASSES.get(name)
    if known is None:
        return f"{name} is not a known system priority class"
    if value != known[0]:
        return f"value of {name} PriorityClass must be {known[0]}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return ""
