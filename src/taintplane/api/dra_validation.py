"""Validation of the resource.k8s.io kinds (DRA) as kube-apiserver v1.35 words it.

Mirrors ``pkg/apis/resource/validation``: names (driver names are CSI driver names, pools are
``/``-separated DNS subdomains, devices and requests DNS labels), device taints and
tolerations, claims and their templates, device classes and DeviceTaintRules. ResourceSlices
are in :mod:`taintplane.api.resourceslice_validation`. Objects arrive as JSON dicts whose
field types were checked against the schema; anything odd still reads as Go's zero value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from taintplane.api import names
from taintplane.api.cel_cost import (
    CEL_SELECTOR_EXPRESSION_MAX_COST,
    COST_LIMIT_EXCEEDED,
    estimate_cost,
)
from taintplane.api.cel_syntax import CelSyntaxError
from taintplane.api.device_taints import (
    DeviceTaint,
    DeviceToleration,
    DeviceTolerationOperator,
    parse_device_tolerations,
)
from taintplane.api.dra_selector_check import selector_problem
from taintplane.api.field import ErrorType, FieldError, Path
from taintplane.api.gofmt import GoStruct, go_json
from taintplane.api.validation import validate_label_name

__all__ = [
    "DEVICE_TAINTS_MAX",
    "GoList",
    "as_dict",
    "as_list",
    "is_dns1123_label",
    "too_many",
    "validate_claim_spec",
    "validate_conditions",
    "validate_device_class_spec",
    "validate_device_name",
    "validate_device_taint",
    "validate_device_taint_rule_spec",
    "validate_device_toleration",
    "validate_driver_name",
    "validate_pool_name",
]

DEVICE_TAINTS_MAX = 16
DEVICE_REQUESTS_MAX = 32
FIRST_AVAILABLE_MAX = 8
DEVICE_SELECTORS_MAX = 32
DEVICE_CONFIG_MAX = 32
DEVICE_CONSTRAINTS_MAX = 32
DEVICE_MAX_ID_LENGTH = 32
CEL_SELECTOR_EXPRESSION_MAX_LENGTH = 10 * 1024
REQUEST_REF_DETAIL = (
    "must be the name of a request in the claim or the name of a request and a subrequest "
    "separated by '/'"
)
DRIVER_NAME_MAX = 63
POOL_NAME_MAX = 253
DEVICE_TAINT_RULE_MAX_CONDITIONS = 8
#: ``sets.List(validDeviceTaintEffects)``: sorted, hence this order.
DEVICE_TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")
DEVICE_TOLERATION_OPERATORS = (DeviceTolerationOperator.EQUAL, DeviceTolerationOperator.EXISTS)
ALLOCATION_MODES = ("All", "ExactCount")

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"
_C_IDENTIFIER_RE = re.compile(_C_IDENTIFIER_FMT, re.ASCII)
_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL_FMT, re.ASCII)
_REASON_FMT = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_REASON_RE = re.compile(_REASON_FMT, re.ASCII)
_CONDITION_STATUSES = ("False", "True", "Unknown")


@dataclass(frozen=True, slots=True)
class GoList(GoStruct):
    """A rejected Go slice, printed as JSON like a rejected struct."""

    items: Sequence[object] = ()

    def to_json(self) -> str:
        return go_json(list(self.items))


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def too_many(path: Path, actual: int, maximum: int) -> FieldError:
    """``field.TooMany``: ``Too many: 17: must have at most 16 items``."""
    return FieldError(ErrorType.TOO_MANY, str(path), actual, f"must have at most {maximum} items")


def _too_long(path: Path, maximum: int) -> FieldError:
    return FieldError(ErrorType.TOO_LONG, str(path), "", f"must have at most {maximum} bytes")


def is_dns1123_label(value: str) -> list[str]:
    problems = []
    if len(value.encode()) > 63:
        problems.append(names.max_len_error(63))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        problems.append(
            names.regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
                "'-', and must start and end with an alphanumeric character",
                _DNS1123_LABEL_FMT,
                "my-name",
                "123-abc",
            )
        )
    return problems


def validate_driver_name(name: str, path: Path) -> list[FieldError]:
    """``ValidateCSIDriverName``."""
    errors: list[FieldError] = []
    if not name:
        errors.append(FieldError.required(path))
    if len(name.encode()) > DRIVER_NAME_MAX:
        errors.append(_too_long(path, DRIVER_NAME_MAX))
    errors += [FieldError.invalid(path, name, m) for m in names.is_dns1123_subdomain(name.lower())]
    return errors


def validate_pool_name(name: str, path: Path) -> list[FieldError]:
    if not name:
        return [FieldError.required(path)]
    errors: list[FieldError] = []
    if len(name.encode()) > POOL_NAME_MAX:
        errors.append(_too_long(path, POOL_NAME_MAX))
    for part in name.split("/"):
        errors += [FieldError.invalid(path, part, m) for m in names.is_dns1123_subdomain(part)]
    return errors


def validate_device_name(name: str, path: Path) -> list[FieldError]:
    return [FieldError.invalid(path, name, m) for m in is_dns1123_label(name)]


def _label_value(value: str, path: Path) -> list[FieldError]:
    return [FieldError.invalid(path, value, m) for m in names.is_valid_label_value(value)]


def validate_device_taint(
    taint: DeviceTaint, old: DeviceTaint | None, path: Path
) -> list[FieldError]:
    """``validateDeviceTaint``; the effect is checked only when new or changed, so an effect
    a newer server stored stays updatable."""
    errors = validate_label_name(taint.key, path.child("key"))
    if taint.value:
        errors += _label_value(taint.value, path.child("value"))
    if old is None or old.effect != taint.effect:
        if not taint.effect:
            errors.append(FieldError.required(path.child("effect")))
        elif taint.effect not in DEVICE_TAINT_EFFECTS:
            errors.append(
                FieldError.not_supported(path.child("effect"), taint.effect, DEVICE_TAINT_EFFECTS)
            )
    return errors


def validate_device_toleration(toleration: DeviceToleration, path: Path) -> list[FieldError]:
    errors: list[FieldError] = []
    if toleration.key:
        errors += validate_label_name(toleration.key, path.child("key"))
    operator = toleration.operator
    if operator == DeviceTolerationOperator.EXISTS:
        if toleration.value:
            errors.append(
                FieldError.invalid(
                    path.child("value"), toleration.value, "must be empty for operator `Exists`"
                )
            )
    elif operator == DeviceTolerationOperator.EQUAL:
        errors += _label_value(toleration.value, path.child("value"))
    elif not operator:
        errors.append(FieldError.required(path.child("operator")))
    else:
        errors.append(
            FieldError.not_supported(path.child("operator"), operator, DEVICE_TOLERATION_OPERATORS)
        )
    if toleration.effect and toleration.effect not in DEVICE_TAINT_EFFECTS:
        errors.append(
            FieldError.not_supported(path.child("effect"), toleration.effect, DEVICE_TAINT_EFFECTS)
        )
    return errors


def _selectors(items: object, path: Path, stored: bool = False) -> list[FieldError]:
    """``validateSelectorSlice``. ``stored`` selectors (a DeviceClass's, unchanged by an
    update) are not compiled again, so one that a stricter check would now refuse stays
    updatable."""
    selectors = as_list(items)
    if len(selectors) > DEVICE_SELECTORS_MAX:
        return [too_many(path, len(selectors), DEVICE_SELECTORS_MAX)]
    errors: list[FieldError] = []
    for i, selector in enumerate(selectors):
        cel = as_dict(selector).get("cel")
        at = path.index(i).child("cel")
        if not isinstance(cel, dict):
            errors.append(FieldError.required(at))
            continue
        expression = _str(cel.get("expression"))
        if not expression.strip():
            errors.append(FieldError.required(at.child("expression")))
        elif not stored:
            errors += _cel_expression(expression, at.child("expression"))
    return errors


def _cel_expression(expression: str, path: Path) -> list[FieldError]:
    """``validateCELSelector`` on a new expression: its length, whether it compiles, then
    whether its worst-case cost stays within ``CELSelectorExpressionMaxCost``."""
    if len(expression.encode()) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
        return [_too_long(path, CEL_SELECTOR_EXPRESSION_MAX_LENGTH)]
    problem = selector_problem(expression)
    if problem is not None:
        return [FieldError.invalid(path, expression, problem)]
    try:
        cost = estimate_cost(expression)
    except CelSyntaxError:
        return []  # syntax the estimator does not follow (optional list or map entries)
    if cost > CEL_SELECTOR_EXPRESSION_MAX_COST:
        return [FieldError.forbidden(path, COST_LIMIT_EXCEEDED)]
    return []


def _allocation_mode(request: Mapping[str, Any], path: Path) -> list[FieldError]:
    mode = _str(request.get("allocationMode"))
    raw = request.get("count")
    count = raw if isinstance(raw, int) and not isinstance(raw, bool) else 0
    if mode == "All" and count != 0:
        detail = "must not be specified when allocationMode is 'All'"
        return [FieldError.invalid(path.child("count"), count, detail)]
    if mode == "ExactCount" and count <= 0:
        return [FieldError.invalid(path.child("count"), count, "must be greater than zero")]
    if mode not in ALLOCATION_MODES:
        return [FieldError.not_supported(path.child("allocationMode"), mode, ALLOCATION_MODES)]
    return []


def _exact(request: Mapping[str, Any], path: Path) -> list[FieldError]:
    errors: list[FieldError] = []
    class_name = _str(request.get("deviceClassName"))
    if not class_name:
        errors.append(FieldError.required(path.child("deviceClassName")))
    else:
        errors += [
            FieldError.invalid(path.child("deviceClassName"), class_name, m)
            for m in names.is_dns1123_subdomain(class_name)
        ]
    errors += _selectors(request.get("selectors"), path.child("selectors"))
    errors += _allocation_mode(request, path)
    at = path.child("tolerations")
    # No limit on their number: 1.35's validateExactDeviceRequest / validateDeviceSubRequest
    # and the declarative tags check each toleration only (the API docs' "at most 16" and
    # DeviceTolerationsMaxLength are not enforced).
    tolerations = parse_device_tolerations(request.get("tolerations"), at)
    for i, toleration in enumerate(tolerations):
        errors += validate_device_toleration(toleration, at.index(i))
    return errors


def _request(request: Mapping[str, Any], path: Path) -> list[FieldError]:
    errors = validate_device_name(_str(request.get("name")), path.child("name"))
    first = as_list(request.get("firstAvailable"))
    exactly = request.get("exactly")
    kinds = int(bool(first)) + int(isinstance(exactly, dict))
    if kinds == 0:
        detail = "exactly one of `exactly` or `firstAvailable` is required"
        return [*errors, FieldError.required(path, detail)]
    if kinds > 1:
        detail = (
            "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"
        )
        return [*errors, FieldError.invalid(path, None, detail)]
    if isinstance(exactly, dict):
        return errors + _exact(exactly, path.child("exactly"))
    at = path.child("firstAvailable")
    if len(first) > FIRST_AVAILABLE_MAX:
        return [*errors, too_many(at, len(first), FIRST_AVAILABLE_MAX)]
    seen: set[str] = set()
    for i, sub in enumerate(first):
        sub = as_dict(sub)
        name = _str(sub.get("name"))
        errors += validate_device_name(name, at.index(i).child("name"))
        errors += _exact(sub, at.index(i))
        if name in seen:
            errors.append(FieldError.duplicate(at.index(i), name))
        seen.add(name)
    return errors


def validate_claim_spec(spec: Mapping[str, Any], path: Path) -> list[FieldError]:
    """``validateDeviceClaim``: requests (names, class, selectors, allocation mode,
    tolerations), constraints and configs, whose request references must name a request
    (or ``request/subrequest``) of the claim."""
    devices = as_dict(spec.get("devices"))
    at = path.child("devices", "requests")
    requests = as_list(devices.get("requests"))
    if len(requests) > DEVICE_REQUESTS_MAX:
        errors = [too_many(at, len(requests), DEVICE_REQUESTS_MAX)]
    else:
        errors = []
        seen: set[str] = set()
        for i, request in enumerate(requests):
            request = as_dict(request)
            errors += _request(request, at.index(i))
            name = _str(request.get("name"))
            if name in seen:
                errors.append(FieldError.duplicate(at.index(i), name))
            seen.add(name)
    names = _request_names(requests)
    errors += _constraints(devices.get("constraints"), path.child("devices", "constraints"), names)
    errors += _configs(devices.get("config"), path.child("devices", "config"), names)
    return errors


def _request_names(requests: Sequence[object]) -> dict[str, set[str]]:
    """``gatherRequestNames``: each request's name with its subrequests' names."""
    names: dict[str, set[str]] = {}
    for request in requests:
        request = as_dict(request)
        first = as_list(request.get("firstAvailable"))
        names[_str(request.get("name"))] = {_str(as_dict(sub).get("name")) for sub in first}
    return names


def _request_refs(items: object, path: Path, names: Mapping[str, set[str]]) -> list[FieldError]:
    """``validateRequestNameRef`` for each entry, then duplicates (``validateSet``)."""
    refs = as_list(items)
    if len(refs) > DEVICE_REQUESTS_MAX:
        return [too_many(path, len(refs), DEVICE_REQUESTS_MAX)]
    errors: list[FieldError] = []
    for i, ref in enumerate(refs):
        ref = _str(ref)
        segments = ref.split("/")
        if len(segments) > 2:
            errors.append(FieldError.invalid(path.index(i), ref, REQUEST_REF_DETAIL))
            continue
        for segment in segments:
            errors += validate_device_name(segment, path.index(i))
        known = segments[0] in names and (len(segments) == 1 or segments[1] in names[segments[0]])
        if not known:
            errors.append(FieldError.invalid(path.index(i), ref, REQUEST_REF_DETAIL))
    seen: set[str] = set()
    for i, ref in enumerate(refs):
        ref = _str(ref)
        if ref in seen:
            errors.append(FieldError.duplicate(path.index(i), ref))
        seen.add(ref)
    return errors


def _constraints(items: object, path: Path, names: Mapping[str, set[str]]) -> list[FieldError]:
    """``validateDeviceConstraint``; with DRAConsumableCapacity off (its 1.35 default) a
    constraint needs ``matchAttribute``."""
    constraints = as_list(items)
    if len(constraints) > DEVICE_CONSTRAINTS_MAX:
        return [too_many(path, len(constraints), DEVICE_CONSTRAINTS_MAX)]
    errors: list[FieldError] = []
    for i, constraint in enumerate(constraints):
        constraint = as_dict(constraint)
        at = path.index(i)
        errors += _request_refs(constraint.get("requests"), at.child("requests"), names)
        attribute = constraint.get("matchAttribute")
        if not isinstance(attribute, str):
            errors.append(FieldError.required(at.child("matchAttribute")))
        else:
            errors += _fully_qualified_name(attribute, at.child("matchAttribute"))
    return errors


def _fully_qualified_name(name: str, path: Path) -> list[FieldError]:
    """``validateFullyQualifiedName``: a qualified name that has a domain. As upstream, a
    name with more than one slash is not checked further."""
    parts = name.split("/")
    errors: list[FieldError] = []
    if len(parts) == 1:
        errors += c_identifier_errors(name, path)
    elif len(parts) == 2:
        if not parts[0]:
            errors.append(FieldError.invalid(path, "", "the domain must not be empty"))
        else:
            errors += validate_driver_name(parts[0], path)
        if not parts[1]:
            errors.append(FieldError.invalid(path, "", "the name must not be empty"))
        else:
            errors += c_identifier_errors(parts[1], path)
    if "/" not in name:
        detail = "a fully qualified name must be a domain and a name separated by a slash"
        errors.append(FieldError.invalid(path, name, detail))
    return errors


def c_identifier_errors(value: str, path: Path) -> list[FieldError]:
    """An attribute or capacity name's ID part: a C identifier of at most 32 bytes."""
    errors: list[FieldError] = []
    if len(value) > DEVICE_MAX_ID_LENGTH:
        errors.append(_too_long(path, DEVICE_MAX_ID_LENGTH))
    if not _C_IDENTIFIER_RE.fullmatch(value):
        message = names.regex_error(
            "a valid C identifier must start with alphabetic character or '_', followed by a "
            "string of alphanumeric characters or '_'",
            _C_IDENTIFIER_FMT,
            "my_name",
            "MY_NAME",
            "MyName",
        )
        errors.append(FieldError.invalid(path, value, message))
    return errors


def _configs(
    items: object, path: Path, request_names: Mapping[str, set[str]] | None = None
) -> list[FieldError]:
    """Claim configs (``request_names`` given: their request references too) and class
    configs."""
    configs = as_list(items)
    if len(configs) > DEVICE_CONFIG_MAX:
        return [too_many(path, len(configs), DEVICE_CONFIG_MAX)]
    errors: list[FieldError] = []
    for i, config in enumerate(configs):
        if request_names is not None:
            refs = as_dict(config).get("requests")
            errors += _request_refs(refs, path.index(i).child("requests"), request_names)
        opaque = as_dict(config).get("opaque")
        at = path.index(i).child("opaque")
        if not isinstance(opaque, dict):
            errors.append(FieldError.required(at))
            continue
        errors += validate_driver_name(_str(opaque.get("driver")), at.child("driver"))
        parameters = opaque.get("parameters")
        if parameters is None:
            errors.append(FieldError.required(at.child("parameters")))
        elif not isinstance(parameters, dict):
            errors.append(
                FieldError.invalid(
                    at.child("parameters"), "<value omitted>", "must be a valid JSON object"
                )
            )
    return errors


def validate_device_class_spec(
    spec: Mapping[str, Any], path: Path, old: Mapping[str, Any] | None = None
) -> list[FieldError]:
    """``validateDeviceClassSpec``: selectors an update leaves exactly as they were count as
    stored and are not compiled again."""
    stored = old is not None and spec.get("selectors") == old.get("selectors")
    return _selectors(spec.get("selectors"), path.child("selectors"), stored) + _configs(
        spec.get("config"), path.child("config")
    )


def validate_device_taint_rule_spec(
    spec: Mapping[str, Any], old: Mapping[str, Any] | None, path: Path
) -> list[FieldError]:
    errors: list[FieldError] = []
    selector = spec.get("deviceSelector")
    if isinstance(selector, dict):
        at = path.child("deviceSelector")
        if isinstance(selector.get("driver"), str):
            errors += validate_driver_name(selector["driver"], at.child("driver"))
        if isinstance(selector.get("pool"), str):
            errors += validate_pool_name(selector["pool"], at.child("pool"))
        if isinstance(selector.get("device"), str):
            errors += validate_device_name(selector["device"], at.child("device"))
    at = path.child("taint")
    taint = DeviceTaint.from_dict(as_dict(spec.get("taint")), at)
    old_taint = None if old is None else DeviceTaint.from_dict(as_dict(old.get("taint")), at)
    return errors + validate_device_taint(taint, old_taint, at)


def validate_conditions(items: object, path: Path, maximum: int) -> list[FieldError]:
    """``metav1validation.ValidateConditions`` plus the list's maximum length."""
    conditions = as_list(items)
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, condition in enumerate(conditions):
        condition = as_dict(condition)
        at = path.index(i)
        type_ = _str(condition.get("type"))
        if type_ in seen:
            errors.append(FieldError.duplicate(at.child("type"), type_))
        seen.add(type_)
        errors += [
            FieldError.invalid(at.child("type"), type_, m) for m in names.is_qualified_name(type_)
        ]
        status = _str(condition.get("status"))
        if status not in _CONDITION_STATUSES:
            errors.append(FieldError.not_supported(at.child("status"), status, _CONDITION_STATUSES))
        if not condition.get("lastTransitionTime"):
            errors.append(FieldError.required(at.child("lastTransitionTime"), "must be set"))
        reason = _str(condition.get("reason"))
        if not reason:
            errors.append(FieldError.required(at.child("reason"), "must be set"))
        elif not _REASON_RE.fullmatch(reason):
            message = names.regex_error(
                "a condition reason must start with alphabetic character, optionally followed by "
                "a string of alphanumeric characters or '_,:', and must end with an alphanumeric "
                "character or '_'",
                _REASON_FMT,
                "my_name",
                "MY_NAME",
                "MyName",
                "ReasonA,ReasonB",
                "ReasonA:ReasonB",
            )
            errors.append(FieldError.invalid(at.child("reason"), reason, message))
    if len(conditions) > maximum:
        errors.append(too_many(path, len(conditions), maximum))
    return errors
