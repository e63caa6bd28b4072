"""rbac.authorization.k8s.io/v1 defaulting and validation, as ``pkg/apis/rbac/v1/defaults.go``
and ``pkg/apis/rbac/validation``: a rule needs verbs, and either resources (with api groups)
or non-resource URLs (cluster roles only); a binding's roleRef names a role of the RBAC group
and never changes; its subjects are ServiceAccounts, Users or Groups."""

from __future__ import annotations

from typing import Any

from taintplane.api import names
from taintplane.api.field import FieldError, Path
from taintplane.api.gofmt import GoStruct
from taintplane.apiserver.strategies.base import _path_segment as path_segment_problems
from taintplane.apiserver.strategies.policy import validate_label_selector

__all__ = [
    "RBAC_GROUP",
    "default_binding",
    "validate_aggregation_rule",
    "validate_binding",
    "validate_binding_update",
    "validate_rules",
]

RBAC_GROUP = "rbac.authorization.k8s.io"
SUBJECT_KINDS = ("ServiceAccount", "User", "Group")


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def default_binding(obj: dict[str, Any]) -> None:
    """``SetDefaults_RoleBinding``/``SetDefaults_ClusterRoleBinding`` and ``SetDefaults_Subject``.

    roleRef is a struct without omitempty in Go, so a binding always carries one."""
    ref = obj.get("roleRef")
    if not isinstance(ref, dict):
        ref = obj["roleRef"] = {}
    if not ref.get("apiGroup"):
        ref["apiGroup"] = RBAC_GROUP
    ref.setdefault("kind", "")
    ref.setdefault("name", "")
    for subject in _list(obj.get("subjects")):
        # A ServiceAccount's group stays "" (the core group).
        if (
            isinstance(subject, dict)
            and not subject.get("apiGroup")
            and subject.get("kind") in ("User", "Group")
        ):
            subject["apiGroup"] = RBAC_GROUP


def validate_rules(obj: dict[str, Any], *, namespaced: bool) -> list[FieldError]:
    """``ValidatePolicyRule`` for each of a Role's or ClusterRole's rules."""
    errors: list[FieldError] = []
    for i, rule in enumerate(_list(obj.get("rules"))):
        errors += _validate_rule(_dict(rule), namespaced, Path.root("rules").index(i))
    return errors


def validate_aggregation_rule(
    obj: dict[str, Any], *, allow_invalid_label_values: bool = False
) -> list[FieldError]:
    """A ClusterRole's aggregationRule: when set, at least one valid label selector."""
    rule = obj.get("aggregationRule")
    if not isinstance(rule, dict):
        return []
    path = Path.root("aggregationRule", "clusterRoleSelectors")
    selectors = _list(rule.get("clusterRoleSelectors"))
    errors: list[FieldError] = []
    if not selectors:
        errors.append(
            FieldError.required(
                path, "at least one clusterRoleSelector required if aggregationRule is non-nil"
            )
        )
    for i, selector in enumerate(selectors):
        errors += validate_label_selector(
            selector, path.index(i), allow_invalid_label_values=allow_invalid_label_values
        )
    return errors


def _validate_rule(rule: dict[str, Any], namespaced: bool, path: Path) -> list[FieldError]:
    errors: list[FieldError] = []
    if not _list(rule.get("verbs")):
        errors.append(
            FieldError.required(path.child("verbs"), "verbs must contain at least one value")
        )
    urls = _list(rule.get("nonResourceURLs"))
    groups, resources = _list(rule.get("apiGroups")), _list(rule.get("resources"))
    if urls:
        if namespaced:
            errors.append(
                FieldError.invalid(
                    path.child("nonResourceURLs"),
                    urls,
                    "namespaced rules cannot apply to non-resource URLs",
                )
            )
        if groups or resources or _list(rule.get("resourceNames")):
            errors.append(
                FieldError.invalid(
                    path.child("nonResourceURLs"),
                    urls,
                    "rules cannot apply to both regular resources and non-resource URLs",
                )
            )
        return errors
    if not groups:
        errors.append(
            FieldError.required(
                path.child("apiGroups"), "resource rules must supply at least one api group"
            )
        )
    if not resources:
        errors.append(
            FieldError.required(
                path.child("resources"), "resource rules must supply at least one resource"
            )
        )
    return errors


def validate_binding(obj: dict[str, Any], *, namespaced: bool) -> list[FieldError]:
    """``ValidateRoleBinding``/``ValidateClusterRoleBinding`` without the metadata part."""
    errors: list[FieldError] = []
    ref = _dict(obj.get("roleRef"))
    group = str(ref.get("apiGroup") or "")
    if group != RBAC_GROUP:
        errors.append(
            FieldError.not_supported(Path.root("roleRef", "apiGroup"), group, [RBAC_GROUP])
        )
    kind = str(ref.get("kind") or "")
    kinds = ("Role", "ClusterRole") if namespaced else ("ClusterRole",)
    if kind not in kinds:
        errors.append(FieldError.not_supported(Path.root("roleRef", "kind"), kind, kinds))
    name = str(ref.get("name") or "")
    if not name:
        errors.append(FieldError.required(Path.root("roleRef", "name")))
    errors += [
        FieldError.invalid(Path.root("roleRef", "name"), name, problem)
        for problem in path_segment_problems(name)
    ]
    for i, subject in enumerate(_list(obj.get("subjects"))):
        errors += _validate_subject(_dict(subject), namespaced, Path.root("subjects").index(i))
    return errors


def _validate_subject(subject: dict[str, Any], namespaced: bool, path: Path) -> list[FieldError]:
    errors: list[FieldError] = []
    name = str(subject.get("name") or "")
    group = str(subject.get("apiGroup") or "")
    if not name:
        errors.append(FieldError.required(path.child("name")))
    kind = str(subject.get("kind") or "")
    if kind == "ServiceAccount":
        if name:
            errors += [
                FieldError.invalid(path.child("name"), name, problem)
                for problem in names.is_dns1123_subdomain(name)
            ]
        if group:
            errors.append(FieldError.not_supported(path.child("apiGroup"), group, [""]))
        if not namespaced and not subject.get("namespace"):
            errors.append(FieldError.required(path.child("namespace")))
    elif kind in ("User", "Group"):
        if group != RBAC_GROUP:
            errors.append(FieldError.not_supported(path.child("apiGroup"), group, [RBAC_GROUP]))
    else:
        errors.append(FieldError.not_supported(path.child("kind"), kind, SUBJECT_KINDS))
    return errors


def _role_ref(obj: dict[str, Any]) -> GoStruct:
    """The internal ``rbac.RoleRef`` as a field error prints it (Go field names, no tags)."""
    ref = _dict(obj.get("roleRef"))
    return GoStruct(
        tuple((go, str(ref.get(key) or "")) for go, key in _ROLE_REF_FIELDS),
    )


_ROLE_REF_FIELDS = (("APIGroup", "apiGroup"), ("Kind", "kind"), ("Name", "name"))


def validate_binding_update(
    new: dict[str, Any], old: dict[str, Any], *, namespaced: bool
) -> list[FieldError]:
    """``Validate(Cluster)RoleBindingUpdate``: what a binding grants is fixed at creation, so
    a changed roleRef is refused (showing the new one)."""
    errors = validate_binding(new, namespaced=namespaced)
    if _role_ref(new) != _role_ref(old):
        errors.append(
            FieldError.invalid(Path.root("roleRef"), _role_ref(new), "cannot change roleRef")
        )
    return errors
