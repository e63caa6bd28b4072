"""apps/v1 spec validation, as ``pkg/apis/apps/validation``: replicas and durations not
negative, a selector that is required, non-empty and matches the template's labels, a pod
template valid as a pod spec with ``restartPolicy: Always``, the update strategies, and a
ControllerRevision's ``data`` (required, immutable) and ``revision`` (not negative)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from taintplane.api import names
from taintplane.api.field import FieldError, Path
from taintplane.api.gofmt import GoStruct, go_json
from taintplane.api.selectors import SelectorError, label_selector_from_dict
from taintplane.api.validation import validate_labels
from taintplane.apiserver.strategies.pods import validate_pod_spec

__all__ = [
    "validate_controller_revision",
    "validate_controller_revision_update",
    "validate_daemonset_spec",
    "validate_daemonset_status_update",
    "validate_deployment_spec",
    "validate_replicaset_spec",
]

NONNEGATIVE = "must be greater than or equal to 0"
_PERCENT = re.compile(r"^[0-9]+%$")
PERCENT_ERROR = names.regex_error(
    "a valid percent string must be a numeric string followed by an ending '%'",
    "[0-9]+%",
    "1%",
    "93%",
)


def _nonnegative(spec: dict[str, Any], key: str, path: Path) -> list[FieldError]:
    value = spec.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return [FieldError.invalid(path.child(key), value, NONNEGATIVE)]
    return []


def _int_or_percent(value: Any, path: Path) -> list[FieldError]:
    if isinstance(value, str):
        return [] if _PERCENT.match(value) else [FieldError.invalid(path, value, PERCENT_ERROR)]
    if isinstance(value, int) and value < 0:
        return [FieldError.invalid(path, value, NONNEGATIVE)]
    return []


def _amount(value: Any) -> int:
    if isinstance(value, str):
        return int(value[:-1]) if _PERCENT.match(value) else 0
    return int(value) if isinstance(value, int) else 0


def _over_100(value: Any, path: Path) -> list[FieldError]:
    if isinstance(value, str) and _PERCENT.match(value) and int(value[:-1]) > 100:
        return [FieldError.invalid(path, value, "must not be greater than 100%")]
    return []


def _selector_and_template(
    spec: dict[str, Any], path: Path, workload: str, comparison_operators: bool
) -> list[FieldError]:
    errors: list[FieldError] = []
    selector_value = spec.get("selector")
    selector = None
    if selector_value is None and workload != "daemonset":
        errors.append(FieldError.required(path.child("selector")))
    elif selector_value is not None:
        if isinstance(selector_value, dict) and not (
            selector_value.get("matchLabels") or selector_value.get("matchExpressions")
        ):
            errors.append(
                FieldError.invalid(
                    path.child("selector"),
                    selector_value,
                    f"empty selector is invalid for {workload}",
                )
            )
        try:
            selector = label_selector_from_dict(selector_value)
        except SelectorError:
            errors.append(
                FieldError.invalid(path.child("selector"), selector_value, "invalid label selector")
            )
    template = spec.get("template") if isinstance(spec.get("template"), dict) else None
    template_path = path.child("template")
    if template is None:
        errors.append(FieldError.required(template_path))
        return errors
    labels = (template.get("metadata") or {}).get("labels") or {}
    matches = selector is not None and not selector.is_empty() and selector.matches(labels)
    if (selector is not None and not selector.is_empty() and not matches) or (
        workload == "daemonset" and selector_value is None
    ):
        errors.append(
            FieldError.invalid(
                template_path.child("metadata", "labels"),
                labels,
                "`selector` does not match template `labels`",
            )
        )
    errors += validate_labels(
        {str(k): str(v) for k, v in labels.items()}, template_path.child("metadata", "labels")
    )
    pod_spec = template.get("spec") if isinstance(template.get("spec"), dict) else {}
    assert isinstance(pod_spec, dict)
    pod_path = template_path.child("spec")
    errors += validate_pod_spec(pod_spec, pod_path, comparison_operators=comparison_operators)
    policy = pod_spec.get("restartPolicy")
    if policy != "Always":
        errors.append(FieldError.not_supported(pod_path.child("restartPolicy"), policy, ["Always"]))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        kind = {"deployment": "ReplicaSet", "replicaset": "ReplicaSet"}.get(workload, "DaemonSet")
        errors.append(
            FieldError.forbidden(
                pod_path.child("activeDeadlineSeconds"),
                f"activeDeadlineSeconds in {kind} is not Supported",
            )
        )
    return errors


def validate_replicaset_spec(
    spec: dict[str, Any], *, comparison_operators: bool
) -> list[FieldError]:
    path = Path.root("spec")
    errors = _nonnegative(spec, "replicas", path) + _nonnegative(spec, "minReadySeconds", path)
    # Upstream says "deployment" here too.
    return errors + _selector_and_template(spec, path, "deployment", comparison_operators)


def validate_deployment_spec(
    spec: dict[str, Any], *, comparison_operators: bool
) -> list[FieldError]:
    path = Path.root("spec")
    errors = _nonnegative(spec, "replicas", path)
    errors += _selector_and_template(spec, path, "deployment", comparison_operators)
    errors += _deployment_strategy(spec.get("strategy") or {}, path.child("strategy"))
    errors += _nonnegative(spec, "minReadySeconds", path)
    errors += _nonnegative(spec, "revisionHistoryLimit", path)
    deadline = spec.get("progressDeadlineSeconds")
    if isinstance(deadline, int):
        errors += _nonnegative(spec, "progressDeadlineSeconds", path)
        if deadline <= int(spec.get("minReadySeconds") or 0):
            errors.append(
                FieldError.invalid(
                    path.child("progressDeadlineSeconds"),
                    deadline,
                    "must be greater than minReadySeconds",
                )
            )
    return errors


def _deployment_strategy(strategy: dict[str, Any], path: Path) -> list[FieldError]:
    kind = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            return [
                FieldError.forbidden(
                    path.child("rollingUpdate"),
                    "may not be specified when strategy `type` is 'Recreate'",
                )
            ]
        return []
    if kind == "RollingUpdate":
        if not isinstance(rolling, dict):
            return [
                FieldError.required(
                    path.child("rollingUpdate"), "this should be defaulted and never be nil"
                )
            ]
        at = path.child("rollingUpdate")
        unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
        errors = _int_or_percent(unavailable, at.child("maxUnavailable"))
        errors += _int_or_percent(surge, at.child("maxSurge"))
        if _amount(unavailable) == 0 and _amount(surge) == 0:
            errors.append(
                FieldError.invalid(
                    at.child("maxUnavailable"), unavailable, "may not be 0 when `maxSurge` is 0"
                )
            )
        return errors + _over_100(unavailable, at.child("maxUnavailable"))
    return [FieldError.not_supported(path, strategy, ["Recreate", "RollingUpdate"])]


def validate_daemonset_spec(
    spec: dict[str, Any], *, comparison_operators: bool
) -> list[FieldError]:
    path = Path.root("spec")
    errors = _selector_and_template(spec, path, "daemonset", comparison_operators)
    errors += _nonnegative(spec, "minReadySeconds", path)
    strategy = spec.get("updateStrategy") or {}
    at = path.child("updateStrategy")
    kind = strategy.get("type")
    if kind == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if not isinstance(rolling, dict):
            errors.append(FieldError.required(at.child("rollingUpdate")))
        else:
            roll = at.child("rollingUpdate")
            unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
            errors += _int_or_percent(unavailable, roll.child("maxUnavailable"))
            errors += _int_or_percent(surge, roll.child("maxSurge"))
            errors += _over_100(unavailable, roll.child("maxUnavailable"))
            errors += _over_100(surge, roll.child("maxSurge"))
            if _amount(unavailable) and _amount(surge):
                errors.append(
                    FieldError.invalid(
                        roll.child("maxSurge"),
                        surge,
                        "may not be set when maxUnavailable is non-zero",
                    )
                )
            elif not _amount(unavailable) and not _amount(surge):
                errors.append(
                    FieldError.required(
                        roll.child("maxUnavailable"), "cannot be 0 when maxSurge is 0"
                    )
                )
    elif kind != "OnDelete":
        errors.append(FieldError.not_supported(at, strategy, ["RollingUpdate", "OnDelete"]))
    errors += _nonnegative(spec, "revisionHistoryLimit", path)
    return errors


DAEMONSET_STATUS_COUNTS = (
    "currentNumberScheduled",
    "numberMisscheduled",
    "desiredNumberScheduled",
    "numberReady",
    "observedGeneration",
    "updatedNumberScheduled",
    "numberAvailable",
    "numberUnavailable",
    "collisionCount",
)


def validate_daemonset_status_update(
    status: dict[str, Any], old_status: dict[str, Any]
) -> list[FieldError]:
    """``ValidateDaemonSetStatusUpdate``: no count is negative, and ``collisionCount`` (which
    names the next ControllerRevision) never goes down."""
    path = Path.root("status")
    errors: list[FieldError] = []
    for key in DAEMONSET_STATUS_COUNTS:
        errors += _nonnegative(status, key, path)
    new, old = status.get("collisionCount"), old_status.get("collisionCount")
    if isinstance(old, int) and (not isinstance(new, int) or new < old):
        shown = new if isinstance(new, int) else 0
        errors.append(
            FieldError.invalid(path.child("collisionCount"), shown, "cannot be decremented")
        )
    return errors


@dataclass(frozen=True, slots=True)
class _RawJSON(GoStruct):
    """A rejected ``data`` as the message shows it: ``runtime.Unknown`` marshals to the raw
    JSON it arrived as, so keys keep the order sent (even when every value is a string) and
    a null is ``null``, not the quoted ``"null"`` of a nil Go value."""

    value: object = None

    def to_json(self) -> str:
        return go_json(self.value)


def validate_controller_revision(revision: dict[str, Any]) -> list[FieldError]:
    """``ValidateControllerRevision`` without the metadata part: ``data`` absent or null is
    Go's nil ``runtime.Object``; any other JSON value is data."""
    errors: list[FieldError] = []
    if revision.get("data") is None:
        errors.append(FieldError.required(Path.root("data"), "data is mandatory"))
    return errors + _nonnegative(revision, "revision", Path())


def validate_controller_revision_update(
    new: dict[str, Any], old: dict[str, Any]
) -> list[FieldError]:
    """``ValidateControllerRevisionUpdate``: ``data`` never changes (``revision`` may, which
    is how a controller makes an old revision the newest again)."""
    errors = validate_controller_revision(new)
    if new.get("data") != old.get("data"):
        rejected = _RawJSON((), new.get("data"))
        errors.append(FieldError.invalid(Path.root("data"), rejected, "field is immutable"))
    return errors
