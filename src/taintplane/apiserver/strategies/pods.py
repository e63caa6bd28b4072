"""Pods: defaulting, status on create, validation of create and update, graceful deletion."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson

from taintplane.api import names
from taintplane.api.field import FieldError, Path
from taintplane.api.tolerations import parse_tolerations
from taintplane.api.validation import (
    comparison_operators_allowed,
    validate_labels,
    validate_toleration_update,
    validate_tolerations,
)
from taintplane.apiserver.strategies.base import Strategy, meta, spec_of
from taintplane.apiserver.strategies.pod_status import (
    prepare_pod_status_update,
    validate_pod_annotation_updates,
    validate_pod_status_update,
)
from taintplane.apiserver.strategies.resource_requirements import (
    default_pod_level_requests,
    validate_container_resources,
    validate_pod_level_resources,
)

__all__ = ["PodStrategy", "validate_pod_spec"]

DEFAULT_GRACE_SECONDS = 30
MAX_INT32 = 2**31 - 1

UPDATABLE_FIELDS = (
    "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
    "`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)
RESTART_POLICIES = ("Always", "OnFailure", "Never")


def _default_container(container: dict[str, Any]) -> None:
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    image = str(container.get("image") or "")
    if "imagePullPolicy" not in container:
        last = image.rsplit("/", 1)[-1]
        tagged = ":" in last and not last.endswith(":latest")
        container["imagePullPolicy"] = "IfNotPresent" if tagged or "@" in image else "Always"
    container.setdefault("resources", {})


def _default_requests_to_limits(container: dict[str, Any]) -> None:
    """SetDefaults_Pod: a limit with no request asks for the limit. Pods only, not pod
    templates (so not ``_default_container``): a template's controller may set requests."""
    resources = container.get("resources")
    limits = resources.get("limits") if isinstance(resources, dict) else None
    if not isinstance(resources, dict) or not isinstance(limits, dict) or not limits:
        return
    requests = resources.get("requests")
    if not isinstance(requests, dict):
        requests = resources["requests"] = {}
    for name, quantity in limits.items():
        requests.setdefault(name, quantity)


def qos_class(spec: Mapping[str, Any]) -> str:
    """``GetPodQOS``: BestEffort, Guaranteed or Burstable from the containers' resources."""
    containers = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
    any_set = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        requests = resources.get("requests") or {}
        limits = resources.get("limits") or {}
        if requests or limits:
            any_set = True
        for resource in ("cpu", "memory"):
            if (
                resource not in limits
                or requests.get(resource, limits[resource]) != limits[resource]
            ):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


class PodStrategy(Strategy):
    def default(self, obj: dict[str, Any]) -> None:
        super().default(obj)
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("securityContext", {})
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("enableServiceLinks", True)
        for key in ("containers", "initContainers"):
            for container in spec.get(key) or []:
                if isinstance(container, dict):
                    _default_container(container)
                    _default_requests_to_limits(container)
        # After the containers' defaults, as SetDefaults_Pod orders them.
        default_pod_level_requests(spec)
        # PodCondition's times are not omitempty: the Go server writes them as null.
        status = obj.get("status")
        for condition in (status.get("conditions") or []) if isinstance(status, dict) else []:
            if isinstance(condition, dict):
                condition.setdefault("lastProbeTime", None)
                condition.setdefault("lastTransitionTime", None)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(spec_of(obj))}
        if spec_of(obj).get("schedulingGates"):
            # applySchedulingGatedCondition; the transition is the create's own instant.
            obj["status"]["conditions"] = [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "lastProbeTime": None,
                    "lastTransitionTime": meta(obj).get("creationTimestamp"),
                    "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates",
                }
            ]

    #: podStatusStrategy also keeps the owner references (old kubelets corrupted them).
    status_resets_metadata = ("ownerReferences",)

    def prepare_for_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_for_status_update(new, old)
        prepare_pod_status_update(new, old)

    def validate_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        return self.validate_object_meta(new) + validate_pod_status_update(new, old)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        errors = self.validate_object_meta(obj)
        errors += self._validate_spec(obj, comparison_operators=self.features.comparison_operators)
        spec = spec_of(obj)
        if spec.get("nodeName") and spec.get("schedulingGates"):
            # ValidatePodCreate: a pod cannot be assigned a node while it is gated.
            errors.append(
                FieldError.forbidden(
                    Path.root("spec", "nodeName"),
                    "cannot be set until all schedulingGates have been cleared",
                )
            )
        return errors

    def _validate_spec(
        self, obj: dict[str, Any], *, comparison_operators: bool
    ) -> list[FieldError]:
        return validate_pod_spec(
            spec_of(obj), Path.root("spec"), comparison_operators=comparison_operators
        )

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        if spec_of(new) == spec_of(old):
            # The spec was validated when it was written and no rule depends on anything
            # else (most updates only touch metadata or status): check the metadata, and the
            # one field a write may have left unvalidated. A binding sets nodeName to any
            # non-empty target name (ValidatePodBinding, setPodNodeAndMetadata), and
            # ValidatePodUpdate validates the whole spec again, so upstream refuses every
            # update of a pod bound to a name that is not a DNS subdomain.
            return (
                self.validate_object_meta(new)
                + _node_name_errors(spec_of(new), Path.root("spec"))
                + validate_pod_annotation_updates(new, old)
            )
        old_tolerations = parse_tolerations(
            spec_of(old).get("tolerations"), Path.root("spec", "tolerations")
        )
        allowed = comparison_operators_allowed(self.features.comparison_operators, old_tolerations)
        errors = (
            self.validate_object_meta(new)
            + self._validate_spec(new, comparison_operators=allowed)
            + validate_pod_annotation_updates(new, old)
        )
        path = Path.root("spec", "tolerations")
        new_tolerations = parse_tolerations(spec_of(new).get("tolerations"), path)
        errors += validate_toleration_update(
            new_tolerations, old_tolerations, path, comparison_operators=allowed
        )
        errors += _validate_deadline_update(spec_of(new), spec_of(old))
        errors += _validate_only_deleted_scheduling_gates(spec_of(new), spec_of(old))
        if _munged(spec_of(new), spec_of(old)) != spec_of(old):
            diff = _diff(spec_of(old), _munged(spec_of(new), spec_of(old)))
            errors.append(
                FieldError.forbidden(
                    Path.root("spec"),
                    f"pod updates may not change fields other than {UPDATABLE_FIELDS}\n{diff}",
                )
            )
        return errors

    def field_values(self, obj: Mapping[str, Any]) -> dict[str, str]:
        fields = super().field_values(obj)
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        fields.update(
            {
                "spec.nodeName": str(spec.get("nodeName") or ""),
                "spec.restartPolicy": str(spec.get("restartPolicy") or ""),
                "spec.schedulerName": str(spec.get("schedulerName") or ""),
                "spec.serviceAccountName": str(spec.get("serviceAccountName") or ""),
                "spec.hostNetwork": "true" if spec.get("hostNetwork") else "false",
                "status.phase": str(status.get("phase") or ""),
                "status.podIP": str(status.get("podIP") or ""),
                "status.nominatedNodeName": str(status.get("nominatedNodeName") or ""),
            }
        )
        return fields

    def grace_period_seconds(self, obj: Mapping[str, Any], requested: int | None) -> int:
        spec = obj.get("spec") or {}
        phase = (obj.get("status") or {}).get("phase")
        # An unscheduled or finished pod has nothing to stop: it goes at once.
        if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
            return 0
        configured = spec.get("terminationGracePeriodSeconds")
        period = requested if requested is not None else configured
        if not isinstance(period, int):
            return DEFAULT_GRACE_SECONDS
        # CheckGracefulDelete: a negative period (asked for, or a pod's from before
        # validation forbade it) is one second.
        return 1 if period < 0 else period


def _validate_deadline_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """ValidatePodUpdate: an active deadline may be set or shortened, never lengthened or
    removed."""
    path = Path.root("spec", "activeDeadlineSeconds")
    after, before = new.get("activeDeadlineSeconds"), old.get("activeDeadlineSeconds")
    if after is None:
        if before is not None:
            return [
                FieldError.invalid(
                    path, None, "must not update from a positive integer to nil value"
                )
            ]
        return []
    if not isinstance(after, int) or after < 0 or after > MAX_INT32:
        return []  # the spec's own rule reports it
    if isinstance(before, int) and before < after:
        return [FieldError.invalid(path, after, "must be less than or equal to previous value")]
    return []


def _validate_only_deleted_scheduling_gates(
    new: dict[str, Any], old: dict[str, Any]
) -> list[FieldError]:
    """validateOnlyDeletedSchedulingGates: gates may be removed, never added."""
    old_names = {g.get("name") for g in old.get("schedulingGates") or [] if isinstance(g, dict)}
    path = Path.root("spec", "schedulingGates")
    return [
        FieldError.forbidden(
            path.index(i).child("name"),
            f"only deletion is allowed, but found new scheduling gate '{gate.get('name')}'",
        )
        for i, gate in enumerate(new.get("schedulingGates") or [])
        if isinstance(gate, dict) and gate.get("name") not in old_names
    ]


def _munged(new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """The new spec with the fields a pod update may change copied from the old one."""
    munged: dict[str, Any] = orjson.loads(orjson.dumps(new))
    for key in ("containers", "initContainers"):
        old_list, new_list = old.get(key) or [], munged.get(key) or []
        if len(old_list) == len(new_list):
            for old_c, new_c in zip(old_list, new_list, strict=True):
                if isinstance(new_c, dict) and isinstance(old_c, dict) and "image" in old_c:
                    new_c["image"] = old_c["image"]
    updatable = ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds")
    for key in (*updatable, "schedulingGates"):
        if key in old:
            munged[key] = old[key]
        else:
            munged.pop(key, None)
    return munged


def _diff(old: dict[str, Any], new: dict[str, Any]) -> str:
    lines = []
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            lines.append(f"- {key}: {json.dumps(old.get(key))}")
            lines.append(f"+ {key}: {json.dumps(new.get(key))}")
    return "\n".join(lines)


def validate_pod_spec(
    spec: dict[str, Any], path: Path, *, comparison_operators: bool
) -> list[FieldError]:
    """The pod-spec rules, at ``path`` (``spec`` for a pod, ``spec.template.spec`` for a
    workload's template)."""
    errors: list[FieldError] = []
    containers = spec.get("containers") or []
    if not containers:
        errors.append(FieldError.required(path.child("containers")))
    seen: set[str] = set()
    for key in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(key) or []):
            at = path.child(key).index(i)
            name = str(container.get("name") or "") if isinstance(container, dict) else ""
            if not name:
                errors.append(FieldError.required(at.child("name")))
            elif name in seen:
                errors.append(FieldError.duplicate(at.child("name"), name))
            else:
                seen.add(name)
            if isinstance(container, dict):
                if not container.get("image"):
                    errors.append(FieldError.required(at.child("image")))
                errors += validate_container_resources(container, at)
    errors += validate_pod_level_resources(spec, path.child("resources"))
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and not (isinstance(deadline, int) and 1 <= deadline <= MAX_INT32):
        errors.append(
            FieldError.invalid(
                path.child("activeDeadlineSeconds"),
                deadline,
                f"must be between 1 and {MAX_INT32}, inclusive",
            )
        )
    policy = spec.get("restartPolicy")
    if policy not in RESTART_POLICIES:
        errors.append(
            FieldError.not_supported(path.child("restartPolicy"), policy, RESTART_POLICIES)
        )
    selector = spec.get("nodeSelector") or {}
    if isinstance(selector, dict):
        errors += validate_labels(
            {str(k): str(v) for k, v in selector.items()}, path.child("nodeSelector")
        )
    errors += _node_name_errors(spec, path)
    errors += _validate_scheduling_gates(spec.get("schedulingGates"), path.child("schedulingGates"))
    tolerations = parse_tolerations(spec.get("tolerations"), path.child("tolerations"))
    if tolerations:
        errors += validate_tolerations(
            tolerations, path.child("tolerations"), comparison_operators=comparison_operators
        )
    return errors


def _node_name_errors(spec: dict[str, Any], path: Path) -> list[FieldError]:
    """ValidatePodSpec's ValidateNodeName: a node name, when set, is a DNS subdomain."""
    node_name = spec.get("nodeName") or ""
    if not node_name:
        return []
    return [
        FieldError.invalid(path.child("nodeName"), node_name, m)
        for m in names.is_dns1123_subdomain(str(node_name))
    ]


def _validate_scheduling_gates(gates: Any, path: Path) -> list[FieldError]:
    """validateSchedulingGates: qualified names, no duplicates."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, gate in enumerate(gates if isinstance(gates, list) else []):
        name = str(gate.get("name") or "") if isinstance(gate, dict) else ""
        errors += [
            FieldError.invalid(path.index(i), name, m) for m in names.is_qualified_name(name)
        ]
        if name in seen:
            errors.append(FieldError.duplicate(path.index(i), name))
        seen.add(name)
    return errors
