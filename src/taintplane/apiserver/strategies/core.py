"""Nodes, namespaces, events, RuntimeClasses and the RBAC kinds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taintplane.api.field import FieldError, Path
from taintplane.api.taints import parse_taints
from taintplane.api.tolerations import parse_tolerations
from taintplane.api.validation import validate_node_taints, validate_runtimeclass_scheduling
from taintplane.apiserver.strategies.base import Strategy, spec_of

__all__ = [
    "EventStrategy",
    "NamespaceStrategy",
    "NodeStrategy",
    "RbacStrategy",
    "RuntimeClassStrategy",
]


class NodeStrategy(Strategy):
    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        errors = self.validate_object_meta(obj)
        # Kubernetes validates spec.taints under the path "metadata.taints".
        taints = parse_taints(spec_of(obj).get("taints"), Path.root("spec", "taints"))
        return errors + validate_node_taints(taints, Path.root("metadata", "taints"))

    def validate_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        return self.validate(new)

    def field_values(self, obj: Mapping[str, Any]) -> dict[str, str]:
        fields = super().field_values(obj)
        fields["spec.unschedulable"] = (
            "true" if (obj.get("spec") or {}).get("unschedulable") else "false"
        )
        return fields


class NamespaceStrategy(Strategy):
    name_format = "label"

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        obj["spec"] = {"finalizers": ["kubernetes"]}
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
        handler = obj.get("handler") or ""
        if not handler:
            errors.append(FieldError.required(Path.root("handler")))
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
    name_format = "path"
    has_spec = False
