"""policy/v1 PodDisruptionBudgets, as ``pkg/registry/policy/poddisruptionbudget`` and
``pkg/apis/policy/validation`` treat them: the spec's budget (``minAvailable`` or
``maxUnavailable``, not both; not negative, at most 100%), its label selector and its unhealthy
pod eviction policy; a status write's conditions and counters."""

from __future__ import annotations

import sys
from typing import Any

from taintplane.api import names
from taintplane.api.dra_validation import validate_conditions
from taintplane.api.field import FieldError, Path
from taintplane.api.gofmt import GoStruct
from taintplane.api.validation import validate_label_name, validate_labels
from taintplane.apiserver.strategies.apps_validation import (
    _int_or_percent,
    _nonnegative,
    _over_100,
)
from taintplane.apiserver.strategies.base import Strategy, spec_of

__all__ = ["PodDisruptionBudgetStrategy", "validate_pdb_spec", "validate_pdb_status_update"]

UNHEALTHY_POD_EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")
STATUS_COUNTS = ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")


def _selector_json(selector: Any) -> Any:
    """A ``*metav1.LabelSelector`` as encoding/json writes it (its JSON tags, omitempty)."""
    if not isinstance(selector, dict):
        return None
    out: dict[str, Any] = {}
    labels = selector.get("matchLabels")
    if isinstance(labels, dict) and labels:
        out["matchLabels"] = dict(sorted(labels.items()))
    expressions = selector.get("matchExpressions")
    if isinstance(expressions, list) and expressions:
        out["matchExpressions"] = [
            {
                "key": e.get("key", ""),
                "operator": e.get("operator", ""),
                **({"values": e["values"]} if e.get("values") else {}),
            }
            for e in expressions
            if isinstance(e, dict)
        ]
    return out


def _spec_struct(spec: dict[str, Any]) -> GoStruct:
    """The internal PodDisruptionBudgetSpec as a field error shows it (Go field names)."""
    return GoStruct(
        (
            ("MinAvailable", spec.get("minAvailable")),
            ("Selector", _selector_json(spec.get("selector"))),
            ("MaxUnavailable", spec.get("maxUnavailable")),
            ("UnhealthyPodEvictionPolicy", spec.get("unhealthyPodEvictionPolicy")),
        )
    )


def validate_label_selector(
    selector: Any, path: Path, *, allow_invalid_label_values: bool = False
) -> list[FieldError]:
    """metav1validation.ValidateLabelSelector (nil selects nothing and is valid)."""
    if not isinstance(selector, dict):
        return []
    labels = selector.get("matchLabels") or {}
    errors = validate_labels(
        {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {},
        path.child("matchLabels"),
    )
    for i, requirement in enumerate(selector.get("matchExpressions") or []):
        at = path.child("matchExpressions").index(i)
        requirement = requirement if isinstance(requirement, dict) else {}
        operator, values = requirement.get("operator", ""), requirement.get("values") or []
        if operator in ("In", "NotIn"):
            if not values:
                errors.append(
                    FieldError.required(
                        at.child("values"), "must be specified when `operator` is 'In' or 'NotIn'"
                    )
                )
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errors.append(
                    FieldError.forbidden(
                        at.child("values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            errors.append(
                FieldError.invalid(at.child("operator"), operator, "not a valid selector operator")
            )
        errors += validate_label_name(str(requirement.get("key", "")), at.child("key"))
        if not allow_invalid_label_values:
            for j, value in enumerate(values):
                errors += [
                    FieldError.invalid(at.child("values").index(j), value, message)
                    for message in names.is_valid_label_value(str(value))
                ]
    return errors


def validate_pdb_spec(
    spec: dict[str, Any], *, allow_invalid_label_values: bool = False
) -> list[FieldError]:
    """ValidatePodDisruptionBudgetSpec."""
    path = Path.root("spec")
    errors: list[FieldError] = []
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        errors.append(
            FieldError.invalid(
                path, _spec_struct(spec), "minAvailable and maxUnavailable cannot be both set"
            )
        )
    for key in ("minAvailable", "maxUnavailable"):
        if spec.get(key) is not None:
            errors += _int_or_percent(spec[key], path.child(key))
            errors += _over_100(spec[key], path.child(key))
    errors += validate_label_selector(
        spec.get("selector"),
        path.child("selector"),
        allow_invalid_label_values=allow_invalid_label_values,
    )
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
        errors.append(
            FieldError.not_supported(
                path.child("unhealthyPodEvictionPolicy"), policy, UNHEALTHY_POD_EVICTION_POLICIES
            )
        )
    return errors


def validate_pdb_status_update(status: dict[str, Any]) -> list[FieldError]:
    """ValidatePodDisruptionBudgetStatusUpdate for policy/v1 (v1beta1, not served here,
    skips the counters)."""
    path = Path.root("status")
    errors = validate_conditions(status.get("conditions"), path.child("conditions"), sys.maxsize)
    for key in STATUS_COUNTS:
        errors += _nonnegative(status, key, path)
    return errors


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, dict) else {}


class PodDisruptionBudgetStrategy(Strategy):
    def default(self, obj: dict[str, Any]) -> None:
        """What Go's serialization of PodDisruptionBudgetStatus writes whoever wrote it: the
        four counters always (not omitempty, so the clients that require them can read a new
        budget), a condition's observedGeneration only when set (metav1.Condition's is)."""
        super().default(obj)
        status = obj.get("status")
        if not isinstance(status, dict):
            return
        for key in STATUS_COUNTS:
            if status.get(key) is None:
                status[key] = 0
        if not status.get("observedGeneration"):
            status.pop("observedGeneration", None)
        for condition in status.get("conditions") or []:
            if isinstance(condition, dict) and not condition.get("observedGeneration"):
                condition.pop("observedGeneration", None)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        obj["status"] = dict.fromkeys(STATUS_COUNTS, 0)  # create cannot set status

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return self.validate_object_meta(obj) + validate_pdb_spec(spec_of(obj))

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        # A budget stored before selector values were checked may keep them on update.
        grandfathered = bool(
            validate_label_selector(spec_of(old).get("selector"), Path.root("spec"))
        )
        return self.validate_object_meta(new) + validate_pdb_spec(
            spec_of(new), allow_invalid_label_values=grandfathered
        )

    def validate_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        return super().validate_status_update(new, old) + validate_pdb_status_update(_status(new))
