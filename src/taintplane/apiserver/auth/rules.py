"""RBAC's rule matching (``rbac/v1`` helpers): a PolicyRule allows a request when its verbs,
API groups, resources (``pods/status``, ``*/status``, ``*``) and resourceNames match, or, for
a non-resource request, its verbs and nonResourceURLs (``/apis/*``) do; and whether some
rules cover others (component-helpers' ``Covers``, for privilege-escalation checks)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from taintplane.admission.chain import UserInfo
from taintplane.apiserver.auth.attributes import Request

__all__ = ["breakdown", "rule_allows", "subject_matches", "uncovered"]

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


def breakdown(rule: Rule) -> list[dict[str, list[str]]]:
    """The rule as rules of one verb, one group and resource (and one resourceName), or one
    nonResourceURL: each is then covered whole by a single rule or not at all."""
    verbs = list(rule.get("verbs") or ())
    names = list(rule.get("resourceNames") or ())
    atoms: list[dict[str, list[str]]] = []
    for group in rule.get("apiGroups") or ():
        for resource in rule.get("resources") or ():
            for verb in verbs:
                atom = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
                if not names:
                    atoms.append(atom)
                atoms.extend({**atom, "resourceNames": [name]} for name in names)
    for url in rule.get("nonResourceURLs") or ():
        atoms.extend({"nonResourceURLs": [url], "verbs": [verb]} for verb in verbs)
    return atoms


def _covers_resource(owned: Sequence[str], resource: str) -> bool:
    if "*" in owned or resource in owned:
        return True
    _, slash, subresource = resource.partition("/")
    return bool(slash) and "*/" + subresource in owned


def _covers(owner: Rule, atom: Mapping[str, list[str]]) -> bool:
    """``ruleCovers`` for a broken-down rule. An atom without resources (a nonResourceURL
    one) needs nothing of the owner's resources, and vice versa."""
    verbs, groups = owner.get("verbs") or (), owner.get("apiGroups") or ()
    owned_names = owner.get("resourceNames") or ()
    names = atom.get("resourceNames", [])
    return (
        ("*" in verbs or all(v in verbs for v in atom["verbs"]))
        and ("*" in groups or all(g in groups for g in atom.get("apiGroups", [])))
        and all(
            _covers_resource(owner.get("resources") or (), r) for r in atom.get("resources", [])
        )
        and all(
            any(_url_covers(pattern, url) for pattern in owner.get("nonResourceURLs") or ())
            for url in atom.get("nonResourceURLs", [])
        )
        and (not owned_names or (bool(names) and all(n in owned_names for n in names)))
    )


def _url_covers(pattern: str, url: str) -> bool:
    return pattern == url or (pattern.endswith("*") and url.startswith(pattern.rstrip("*")))


def uncovered(owner_rules: Sequence[Rule], rules: Sequence[Rule]) -> list[dict[str, list[str]]]:
    """The broken-down parts of ``rules`` no owner rule covers (empty: the owner holds them
    all)."""
    return [
        atom
        for rule in rules
        for atom in breakdown(rule)
        if not any(_covers(owner, atom) for owner in owner_rules)
    ]
