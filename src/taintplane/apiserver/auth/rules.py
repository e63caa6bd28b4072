"""RBAC's rule matching (``rbac/v1`` helpers): a PolicyRule allows a request when its verbs,
API groups, resources (``pods/status``, ``*/status``, ``*``) and resourceNames match, or, for
a non-resource request, its verbs and nonResourceURLs (``/apis/*``) do."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from taintplane.admission.chain import UserInfo
from taintplane.apiserver.auth.attributes import Request

__all__ = ["rule_allows", "subject_matches"]

Rule = Mapping[str, Any]


def _has(values: Sequence[str] | None, wanted: str) -> bool:
    return any(v == "*" or v == wanted for v in values or ())


def verb_matches(rule: Rule, verb: str) -> bool:
    return _has(rule.get("verbs"), verb)


def group_matches(rule: Rule, group: str) -> bool:
    return _has(rule.get("apiGroups"), group)


def resource_matches(rule: Rule, resource: str, subresource: str) -> bool:
    combined = f"{resource}/{subresource}" if subresource else resource
    for candidate in rule.get("resources") or ():
        if candidate in ("*", combined):
            return True
        if subresource and candidate == "*/" + subresource:
            return True
    return False


def name_matches(rule: Rule, name: str) -> bool:
    names = rule.get("resourceNames") or ()
    return not names or name in names


def url_matches(rule: Rule, path: str) -> bool:
    for pattern in rule.get("nonResourceURLs") or ():
        if pattern in ("*", path):
            return True
        if pattern.endswith("*") and path.startswith(pattern[:-1]):
            return True
    return False


def rule_allows(rule: Rule, request: Request) -> bool:
    if not verb_matches(rule, request.verb):
        return False
    if not request.resource_request:
        return url_matches(rule, request.path)
    return (
        group_matches(rule, request.api_group)
        and resource_matches(rule, request.resource, request.subresource)
        and name_matches(rule, request.name)
    )


def subject_matches(subject: Mapping[str, Any], user: UserInfo, binding_namespace: str) -> bool:
    """Whether a binding's subject is this user (User, Group or ServiceAccount)."""
    kind, name = subject.get("kind"), subject.get("name", "")
    if kind == "User":
        return bool(name == user.name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return bool(user.name == f"system:serviceaccount:{namespace}:{name}")
    return False
