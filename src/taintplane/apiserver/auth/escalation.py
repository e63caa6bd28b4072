"""Privilege-escalation prevention for RBAC writes (the ``policybased`` storage of roles,
clusterroles, rolebindings and clusterrolebindings, with ``ConfirmNoEscalation``).

A user may create or update a Role or ClusterRole only with rules they already hold in that
namespace, unless they may ``escalate`` roles/clusterroles; and a RoleBinding or
ClusterRoleBinding only to a role whose rules they hold, unless they may ``bind`` it.
``system:masters`` is exempt. Requests without a user are the server's own components (no
``--auth``, or bootstrap): upstream's only user-less writes are as privileged.

The check runs where upstream's does: after mutating admission, before the strategy's
validation (a refused write is 403 even if it is also invalid).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from taintplane.admission.chain import UserInfo
from taintplane.api.gofmt import go_quote
from taintplane.api.scheme import ResourceType
from taintplane.apiserver.auth.attributes import Request
from taintplane.apiserver.auth.rbac import GROUP, RBAC
from taintplane.apiserver.auth.rules import uncovered
from taintplane.apiserver.auth.tokens import MASTERS
from taintplane.apiserver.registry import Admit
from taintplane.apiserver.status import APIError

__all__ = ["escalation_checked", "missing_rights"]

_ROLES = ("roles", "clusterroles")
_BINDINGS = ("rolebindings", "clusterrolebindings")
#: What an aggregationRule can gather: anything.
_FULL_AUTHORITY = [
    {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
    {"verbs": ["*"], "nonResourceURLs": ["*"]},
]
#: Metadata a write may change without any check: what the garbage collector needs to
#: delete the object eventually (IsOnlyMutatingGCFields), and what the server keeps itself.
_GC_FIELDS = ("ownerReferences", "finalizers", "selfLink", "managedFields", "resourceVersion")


def escalation_checked(admit: Admit, rbac: RBAC, request: Callable[[], Request | None]) -> Admit:
    """``admit`` followed by the escalation check; ``request`` returns the authorization
    attributes of the request being served (None for the server's own writes)."""

    async def hook(
        operation: str,
        resource: ResourceType,
        namespace: str,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        subresource: str = "",
    ) -> None:
        await admit(operation, resource, namespace, obj, old, subresource)
        attributes = request()
        if (
            attributes is None
            or obj is None
            or subresource
            or operation not in ("CREATE", "UPDATE")
            or resource.group != GROUP
            or resource.plural not in (*_ROLES, *_BINDINGS)
            or MASTERS in attributes.user.groups
        ):
            return
        if old is not None and _only_gc_fields(obj, old):
            return
        check = _role if resource.plural in _ROLES else _binding
        await check(rbac, attributes, resource, namespace, obj, old)

    return hook


async def _role(
    rbac: RBAC,
    attributes: Request,
    resource: ResourceType,
    namespace: str,
    obj: dict[str, Any],
    old: dict[str, Any] | None,
) -> None:
    if await _escalation_authorized(rbac, attributes):
        return
    name = str(obj.get("metadata", {}).get("name") or "")
    missing = await missing_rights(rbac, attributes.user, namespace, obj.get("rules") or [])
    if missing:
        raise _forbidden(resource, name, missing)
    aggregates = resource.plural == "clusterroles" and (
        _aggregates(obj) or (old is not None and _aggregates(old))
    )
    if aggregates and await missing_rights(rbac, attributes.user, namespace, _FULL_AUTHORITY):
        raise _forbidden(
            resource, name, "must have cluster-admin privileges to use the aggregationRule"
        )


async def _binding(
    rbac: RBAC,
    attributes: Request,
    resource: ResourceType,
    namespace: str,
    obj: dict[str, Any],
    old: dict[str, Any] | None,
) -> None:
    ref = obj.get("roleRef") or {}
    if await _bind_authorized(rbac, attributes.user, ref, namespace):
        return
    rules = await rbac.role_reference_rules(ref, namespace)
    missing = await missing_rights(rbac, attributes.user, namespace, rules)
    if missing:
        raise _forbidden(resource, str(obj.get("metadata", {}).get("name") or ""), missing)


async def _escalation_authorized(rbac: RBAC, attributes: Request) -> bool:
    """RoleEscalationAuthorized: ``escalate`` on the role the request names (none on a
    create: the name is not in its path)."""
    if not attributes.resource_request or attributes.api_group != GROUP:
        return False
    if attributes.resource not in _ROLES:
        return False
    escalate = Request(
        attributes.user,
        "escalate",
        True,
        GROUP,
        "*",
        attributes.resource,
        namespace=attributes.namespace,
        name=attributes.name,
    )
    return (await rbac.authorize(escalate)).allowed


async def _bind_authorized(
    rbac: RBAC, user: UserInfo, ref: Mapping[str, Any], namespace: str
) -> bool:
    """BindingAuthorized: ``bind`` on the referenced role, in the binding's namespace."""
    resource = {"ClusterRole": "clusterroles", "Role": "roles"}.get(ref.get("kind", ""))
    if resource is None:
        return False
    bind = Request(
        user,
        "bind",
        True,
        str(ref.get("apiGroup") or ""),
        "*",
        resource,
        namespace=namespace,
        name=str(ref.get("name") or ""),
    )
    return (await rbac.authorize(bind)).allowed


async def missing_rights(
    rbac: RBAC, user: UserInfo, namespace: str, rules: Sequence[Mapping[str, Any]]
) -> str:
    """ConfirmNoEscalation's complaint ("" when the user holds every rule): the rules not
    held, compacted, rendered and sorted, then the errors met resolving the user's rules."""
    grants, errors = await rbac.grants(user, namespace, registry_errors=True)
    owned = [rule for grant in grants for rule in grant.rules]
    missing = uncovered(owned, rules)
    if not missing:
        return ""
    lines = sorted({_compact_string(rule) for rule in _compact(missing)})
    message = (
        f"user {go_quote(user.name)} (groups={_go_strings(user.groups)}) is attempting to "
        "grant RBAC permissions not currently held:\n" + "\n".join(lines)
    )
    if errors:
        message += f"; resolution errors: [{_aggregate(errors)}]"
    return message


def _forbidden(resource: ResourceType, name: str, reason: str) -> APIError:
    refusal = APIError.forbidden(resource, name, reason)
    if not name:  # errors.NewForbidden leaves the name out of an unnamed object's message
        refusal.status["message"] = f"{resource.group_resource} is forbidden: {reason}"
    return refusal


def _aggregate(errors: list[str]) -> str:
    """utilerrors.Aggregate's message: one error as it is, several deduplicated in
    brackets."""
    distinct = list(dict.fromkeys(errors))
    return distinct[0] if len(distinct) == 1 else "[" + ", ".join(distinct) + "]"


def _compact(rules: list[dict[str, list[str]]]) -> list[dict[str, list[str]]]:
    """CompactRules: broken-down rules of one group and resource (and at most one
    resourceName) that differ only in verbs become one rule with all of them."""
    merged: dict[tuple[str, str, tuple[str, ...]], dict[str, list[str]]] = {}
    other: list[dict[str, list[str]]] = []
    for rule in rules:
        groups, resources = rule.get("apiGroups", []), rule.get("resources", [])
        names = rule.get("resourceNames", [])
        if len(groups) != 1 or len(resources) != 1 or len(names) > 1:
            other.append(rule)
            continue
        key = (groups[0], resources[0], tuple(names))
        if key in merged:
            merged[key]["verbs"] = merged[key]["verbs"] + rule["verbs"]
        else:
            merged[key] = dict(rule)
    return other + list(merged.values())


def _compact_string(rule: Mapping[str, list[str]]) -> str:
    """rbacv1helpers.CompactString: the non-empty fields in a fixed order, Go-quoted."""
    fields = (
        ("APIGroups", "apiGroups"),
        ("Resources", "resources"),
        ("NonResourceURLs", "nonResourceURLs"),
        ("ResourceNames", "resourceNames"),
        ("Verbs", "verbs"),
    )
    parts = [f"{label}:{_go_strings(rule[key])}" for label, key in fields if rule.get(key)]
    return "{" + ", ".join(parts) + "}"


def _go_strings(values: Sequence[str]) -> str:
    """``%q`` of a []string."""
    return "[" + " ".join(go_quote(v) for v in values) + "]"


def _aggregates(role: Mapping[str, Any]) -> bool:
    return bool((role.get("aggregationRule") or {}).get("clusterRoleSelectors"))


def _only_gc_fields(obj: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """Whether the update changes nothing but the fields the garbage collector needs (so it
    can delete a role or binding whose grants the writer does not hold)."""

    def rest(value: Mapping[str, Any]) -> dict[str, Any]:
        metadata = {
            k: v for k, v in (value.get("metadata") or {}).items() if k not in _GC_FIELDS and v
        }
        return {**{k: v for k, v in value.items() if v not in (None, [], {})}, "metadata": metadata}

    return rest(obj) == rest(old)
