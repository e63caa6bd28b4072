"""The RBAC authorizer: ClusterRoleBindings, then the request namespace's RoleBindings, each
granting its role's rules to its subjects; ``system:masters`` is allowed everything before
RBAC is asked (kube-apiserver's privileged-group authorizer)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from taintplane.admission.chain import UserInfo
from taintplane.api.gofmt import go_quote
from taintplane.api.scheme import Scheme
from taintplane.api.selectors import SelectorError, label_selector_from_dict
from taintplane.apiserver.auth.attributes import Request
from taintplane.apiserver.auth.rules import rule_allows, subject_matches
from taintplane.apiserver.auth.tokens import MASTERS
from taintplane.apiserver.registry import Registry
from taintplane.apiserver.status import APIError

__all__ = ["RBAC", "Decision"]

GROUP = "rbac.authorization.k8s.io"


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


@dataclass(frozen=True)
class _Grant:
    source: str  # how upstream names it in reasons
    rules: Sequence[dict[str, Any]]


class RBAC:
    def __init__(self, registry: Registry, scheme: Scheme) -> None:
        self.registry = registry

        def kind(name: str) -> Any:
            found = scheme.by_kind(f"{GROUP}/v1", name)
            assert found is not None
            return found

        self.roles = kind("Role")
        self.role_bindings = kind("RoleBinding")
        self.cluster_roles = kind("ClusterRole")
        self.cluster_role_bindings = kind("ClusterRoleBinding")

    async def authorize(self, request: Request) -> Decision:
        if MASTERS in request.user.groups:
            return Decision(True)
        grants, errors = await self.grants(request.user, request.namespace)
        for grant in grants:
            if any(rule_allows(rule, request) for rule in grant.rules):
                return Decision(True, f"RBAC: allowed by {grant.source}")
        return Decision(False, _aggregate(errors))

    async def grants(
        self, user: UserInfo, namespace: str, *, registry_errors: bool = False
    ) -> tuple[list[_Grant], list[str]]:
        """Every binding that applies to the user at this scope, with its role's rules, and
        the errors met (bindings to roles that do not exist), worded as the authorizer's
        informer listers word them or, with ``registry_errors``, as the registry does (the
        rule resolver of upstream's RBAC storage reads through it: ``clusterroles.…``)."""
        cluster_roles = await self._cluster_roles()
        grants: list[_Grant] = []
        errors: list[str] = []
        bindings = [("", b) for b in await self.registry.list_cached(self.cluster_role_bindings)]
        if namespace:
            bindings += [
                (namespace, b)
                for b in await self.registry.list_cached(self.role_bindings)
                if b["metadata"].get("namespace") == namespace
            ]
        roles: dict[str, dict[str, Any]] | None = None
        for scope, binding in bindings:
            subject = next(
                (s for s in binding.get("subjects") or () if subject_matches(s, user, scope)),
                None,
            )
            if subject is None:
                continue
            ref = binding.get("roleRef") or {}
            ref_kind, ref_name = ref.get("kind", ""), ref.get("name", "")
            role: dict[str, Any] | None
            if ref_kind == "ClusterRole":
                role = cluster_roles.get(ref_name)
            elif scope:
                if roles is None:
                    roles = {
                        r["metadata"]["name"]: r
                        for r in await self.registry.list_cached(self.roles)
                        if r["metadata"].get("namespace") == namespace
                    }
                role = roles.get(ref_name)
            else:
                role = None
            if role is None:
                resource = ref_kind.lower() + ("s" if registry_errors else "")
                errors.append(f'{resource}.{GROUP} "{ref_name}" not found')
                continue
            where = f'"{binding["metadata"]["name"]}"'
            if scope:
                where = f'"{binding["metadata"]["name"]}/{scope}"'
            kind = "RoleBinding" if scope else "ClusterRoleBinding"
            source = (
                f'{kind} {where} of {ref_kind} "{ref_name}" to {subject.get("kind")} '
                f'"{subject.get("name")}"'
            )
            grants.append(_Grant(source, list(_rules(role, cluster_roles))))
        return grants, errors

    async def role_reference_rules(self, ref: dict[str, Any], namespace: str) -> list[Any]:
        """The rules of the role a binding in ``namespace`` refers to (GetRoleReferenceRules):
        a missing role is the registry's 404."""
        kind, name = ref.get("kind", ""), ref.get("name", "")
        cluster_roles = await self._cluster_roles()
        if kind == "ClusterRole":
            role = cluster_roles.get(name)
            if role is None:
                raise APIError.not_found(self.cluster_roles, name)
        elif kind == "Role":
            if not namespace:  # the registry's key function needs one
                raise APIError.bad_request("Namespace parameter required.")
            role = next(
                (
                    r
                    for r in await self.registry.list_cached(self.roles)
                    if r["metadata"].get("namespace") == namespace and r["metadata"]["name"] == name
                ),
                None,
            )
            if role is None:
                raise APIError.not_found(self.roles, name)
        else:
            # A plain error upstream, which the handler writes as a 500 without a reason.
            message = f"unsupported role reference kind: {go_quote(kind)}"
            status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
            raise APIError({**status, "message": message, "code": 500})
        distinct: list[Any] = []
        for rule in _rules(role, cluster_roles):
            if rule not in distinct:  # an aggregated role's rules are a set upstream
                distinct.append(rule)
        return distinct

    async def _cluster_roles(self) -> dict[str, dict[str, Any]]:
        return {
            r["metadata"]["name"]: r for r in await self.registry.list_cached(self.cluster_roles)
        }


def _rules(
    role: dict[str, Any],
    cluster_roles: dict[str, dict[str, Any]],
    seen: set[str] | None = None,
) -> Iterator[Any]:
    """A role's rules; an aggregated ClusterRole's are also those of the ClusterRoles its
    selectors match (what upstream's aggregation controller writes into it)."""
    seen = seen if seen is not None else {role["metadata"]["name"]}
    yield from role.get("rules") or ()
    aggregation = role.get("aggregationRule") or {}
    for selector in aggregation.get("clusterRoleSelectors") or ():
        try:
            parsed = label_selector_from_dict(selector)
        except SelectorError:
            continue
        for name, other in cluster_roles.items():
            if name not in seen and parsed.matches(other["metadata"].get("labels")):
                seen.add(name)
                yield from _rules(other, cluster_roles, seen)


def _aggregate(errors: list[str]) -> str:
    if not errors:
        return ""
    text = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return f"RBAC: {text}"
