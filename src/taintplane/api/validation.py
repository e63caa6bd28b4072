"""Validation of taints and tolerations, as the Kubernetes v1.35 API server does it.

Every function returns a list of :class:`~taintplane.api.field.FieldError` (empty when valid)
with upstream's field paths, order and wording. Callers choose the root path, which matters:
Kubernetes validates a Node's ``spec.taints`` under the path ``metadata.taints`` (an upstream
quirk that real error messages show), a Pod's tolerations under ``spec.tolerations`` and a
RuntimeClass's under ``scheduling.tolerations``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from taintplane.api import names
from taintplane.api.field import FieldError, Path
from taintplane.api.taints import Taint, TaintEffect
from taintplane.api.tolerations import Toleration, TolerationOperator

__all__ = [
    "comparison_operators_allowed",
    "validate_label_name",
    "validate_labels",
    "validate_node_taints",
    "validate_runtimeclass_scheduling",
    "validate_taint_effect",
    "validate_toleration_update",
    "validate_tolerations",
]

_EFFECTS = (TaintEffect.NO_SCHEDULE, TaintEffect.PREFER_NO_SCHEDULE, TaintEffect.NO_EXECUTE)
_BASIC_OPERATORS = (TolerationOperator.EQUAL, TolerationOperator.EXISTS)
_ALL_OPERATORS = (*_BASIC_OPERATORS, TolerationOperator.LT, TolerationOperator.GT)

EMPTY_KEY_NEEDS_EXISTS = (
    'operator must be Exists when `key` is empty, which means "match all values and all keys"'
)
SECONDS_NEED_NO_EXECUTE = "effect must be 'NoExecute' when `tolerationSeconds` is set"
EXISTS_WITH_VALUE = "value must be empty when `operator` is 'Exists'"
DUPLICATE_TAINT = "taints must be unique by key and effect pair"
TOLERATION_MODIFIED = "existing toleration can not be modified except its tolerationSeconds"


def validate_label_name(name: str, path: Path) -> list[FieldError]:
    """``ValidateLabelName``: one Invalid error per problem with the key."""
    return [FieldError.invalid(path, name, msg) for msg in names.is_qualified_name(name)]


def validate_labels(labels: Mapping[str, str], path: Path) -> list[FieldError]:
    """``ValidateLabels`` (keys in sorted order, where Go's map order is random)."""
    errors: list[FieldError] = []
    for key in sorted(labels):
        errors += validate_label_name(key, path)
        value = labels[key]
        errors += [FieldError.invalid(path, value, m) for m in names.is_valid_label_value(value)]
    return errors


def validate_taint_effect(effect: str, path: Path, *, allow_empty: bool) -> list[FieldError]:
    if not effect and not allow_empty:
        return [FieldError.required(path)]
    if effect not in _EFFECTS:
        return [FieldError.not_supported(path, effect, _EFFECTS)]
    return []


def validate_node_taints(taints: Sequence[Taint], path: Path) -> list[FieldError]:
    """``validateNodeTaints``: key, value and effect of each taint, and no two taints with
    the same key and effect."""
    errors: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints):
        at = path.index(i)
        errors += validate_label_name(taint.key, at.child("key"))
        problems = names.is_valid_label_value(taint.value)
        if problems:
            errors.append(FieldError.invalid(at.child("value"), taint.value, ";".join(problems)))
        errors += validate_taint_effect(taint.effect, at.child("effect"), allow_empty=False)
        if (taint.effect, taint.key) in seen:
            errors.append(FieldError.duplicate(at, taint.go_value(), DUPLICATE_TAINT))
            continue
        seen.add((taint.effect, taint.key))
    return errors


def validate_tolerations(
    tolerations: Sequence[Toleration], path: Path, *, comparison_operators: bool = False
) -> list[FieldError]:
    """``ValidateTolerations``. ``comparison_operators`` is ``AllowTaintTolerationComparison
    Operators``: the feature gate, or (on update) an old object that already used Lt/Gt."""
    errors: list[FieldError] = []
    for i, toleration in enumerate(tolerations):
        errors += _validate_toleration(toleration, path.index(i), comparison_operators)
    return errors


def _validate_toleration(t: Toleration, at: Path, comparison_operators: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    if t.key:
        errors += validate_label_name(t.key, at.child("key"))
    if not t.key and t.operator != TolerationOperator.EXISTS:
        errors.append(FieldError.invalid(at.child("operator"), t.operator, EMPTY_KEY_NEEDS_EXISTS))
    if t.toleration_seconds is not None and t.effect != TaintEffect.NO_EXECUTE:
        errors.append(FieldError.invalid(at.child("effect"), t.effect, SECONDS_NEED_NO_EXECUTE))

    if t.operator in ("", TolerationOperator.EQUAL):
        problems = names.is_valid_label_value(t.value)
        if problems:
            errors.append(FieldError.invalid(at.child("operator"), t.value, ";".join(problems)))
    elif t.operator == TolerationOperator.EXISTS:
        if t.value:
            # ValidateTolerations reports the whole toleration here, not its value.
            errors.append(FieldError.invalid(at.child("operator"), t.go_value(), EXISTS_WITH_VALUE))
    elif t.operator in (TolerationOperator.LT, TolerationOperator.GT):
        if not comparison_operators:
            errors.append(
                FieldError.not_supported(at.child("operator"), t.operator, _ALL_OPERATORS)
            )
        else:
            errors += _validate_numeric_value(t.value, at.child("value"))
    else:
        errors.append(FieldError.not_supported(at.child("operator"), t.operator, _BASIC_OPERATORS))

    if t.effect:
        errors += validate_taint_effect(t.effect, at.child("effect"), allow_empty=True)
    return errors


def _validate_numeric_value(value: str, at: Path) -> list[FieldError]:
    # Both checks run, as upstream: the canonical-form check, then strconv.ParseInt's.
    errors = [FieldError.invalid(at, value, msg) for msg in names.is_decimal_integer(value)]
    parse_error = _parse_int_error(value)
    if parse_error:
        errors.append(FieldError.invalid(at, value, parse_error))
    return errors


def _parse_int_error(value: str) -> str | None:
    """The error text of Go's ``strconv.ParseInt(value, 10, 64)``, or ``None``."""
    digits = value[1:] if value[:1] in ("+", "-") else value
    if not digits or not (digits.isascii() and digits.isdigit()):
        return f'strconv.ParseInt: parsing "{value}": invalid syntax'
    if not -(2**63) <= int(value) <= 2**63 - 1:
        return f'strconv.ParseInt: parsing "{value}": value out of range'
    return None


def comparison_operators_allowed(gate_enabled: bool, old: Sequence[Toleration] = ()) -> bool:
    """Lt/Gt are allowed when the gate is on, or when the old object already used them (so an
    object created with the gate on stays updatable after it is turned off)."""
    return gate_enabled or any(
        t.operator in (TolerationOperator.LT, TolerationOperator.GT) for t in old
    )


def validate_toleration_update(
    new: Sequence[Toleration],
    old: Sequence[Toleration],
    path: Path,
    *,
    comparison_operators: bool = False,
) -> list[FieldError]:
    """``validateOnlyAddedTolerations``: a pod update may add tolerations and change the
    ``tolerationSeconds`` of existing ones, nothing else."""
    for existing in old:
        # matches() compares everything but tolerationSeconds, which may change freely.
        if not any(existing.matches(candidate) for candidate in new):
            return [FieldError.forbidden(path, TOLERATION_MODIFIED)]
    return validate_tolerations(new, path, comparison_operators=comparison_operators)


def validate_runtimeclass_scheduling(
    node_selector: Mapping[str, str] | None,
    tolerations: Sequence[Toleration],
    path: Path,
) -> list[FieldError]:
    """A RuntimeClass's ``scheduling``: valid labels in ``nodeSelector``; valid tolerations
    (never Lt/Gt: RuntimeClass validation passes no options) that are unique by key,
    operator, value and effect."""
    errors: list[FieldError] = []
    if node_selector is not None:
        errors += validate_labels(node_selector, path.child("nodeSelector"))
    at = path.child("tolerations")
    errors += validate_tolerations(tolerations, at)
    seen: set[tuple[str, str, str, str]] = set()
    for i, toleration in enumerate(tolerations):
        list_key = (toleration.key, toleration.operator, toleration.value, toleration.effect)
        if list_key in seen:
            errors.append(FieldError.duplicate(at.index(i), toleration.go_value()))
        else:
            seen.add(list_key)
    return errors
