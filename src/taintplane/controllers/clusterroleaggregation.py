"""The ClusterRole aggregation controller (kube-controller-manager's
``clusterrole-aggregation-controller``, ``pkg/controller/clusterroleaggregation``).

A ClusterRole with an ``aggregationRule`` gets as its rules those of the ClusterRoles its
selectors match: selector by selector, the matching roles by name (itself left out), each rule
once (the first time it is met), replacing whatever rules it had. The set of ClusterRoles is
small and who aggregates whom is not indexed, so any ClusterRole added, changed or deleted
queues every aggregated role again, as upstream does.

Upstream writes with a forced server-side apply and falls back to an update; taintplane's
client cannot force an apply, so it updates (a conflict is retried by the queue).
"""

from __future__ import annotations

import asyncio
from typing import Any

from taintplane.api.selectors import label_selector_from_dict
from taintplane.client import Client, resource
from taintplane.client.shared import SharedInformers
from taintplane.client.workqueue import WorkQueue
from taintplane.clock import Clock

__all__ = ["CLUSTER_ROLES", "FIELD_MANAGER", "ClusterRoleAggregationController", "aggregate"]

CLUSTER_ROLES = resource("rbac.authorization.k8s.io", "v1", "clusterroles")
FIELD_MANAGER = "clusterrole-aggregation-controller"
#: kube-controller-manager starts it with five workers.
WORKERS = 5

_RULE_FIELDS = ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")


def _semantic(rule: dict[str, Any]) -> dict[str, Any]:
    """A rule as ``equality.Semantic.DeepEqual`` compares it: an empty list is no list."""
    return {field: rule[field] for field in _RULE_FIELDS if rule.get(field)}


def aggregate(role: dict[str, Any], cluster_roles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rules the aggregation rule of ``role`` gives it (raises SelectorError on a
    selector that does not parse)."""
    name = role["metadata"]["name"]
    rules: list[dict[str, Any]] = []
    seen: list[dict[str, Any]] = []
    by_name = sorted(cluster_roles, key=lambda r: str(r["metadata"]["name"]))
    for selector in (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or ():
        parsed = label_selector_from_dict(selector)
        for other in by_name:
            if other["metadata"]["name"] == name or not parsed.matches(
                other["metadata"].get("labels")
            ):
                continue
            for rule in other.get("rules") or ():
                semantic = _semantic(rule)
                if semantic not in seen:
                    seen.append(semantic)
                    rules.append(rule)
    return rules


class ClusterRoleAggregationController:
    def __init__(
        self, client: Client, clock: Clock, informers: SharedInformers, *, workers: int = WORKERS
    ) -> None:
        self.client = client.with_field_manager(FIELD_MANAGER)
        self.queue = WorkQueue(clock, name="ClusterRoleAggregator")
        self.cluster_roles = informers.of(CLUSTER_ROLES)
        self.cluster_roles.add_handlers(
            on_add=lambda _role: self._enqueue(),
            on_update=lambda _old, _new: self._enqueue(),
            on_delete=lambda _role: self._enqueue(),
        )
        self.workers = workers

    def _enqueue(self) -> None:
        for role in self.cluster_roles.cache.values():
            if role.get("aggregationRule") is not None:
                self.queue.add(role["metadata"]["name"])

    async def run(self) -> None:
        await asyncio.gather(*(self.queue.run(self._sync) for _ in range(self.workers)))

    async def _sync(self, name: str) -> None:
        role = self.cluster_roles.get(name)
        if role is None or role.get("aggregationRule") is None:
            return
        rules = aggregate(role, list(self.cluster_roles.cache.values()))
        current = [_semantic(rule) for rule in role.get("rules") or ()]
        if [_semantic(rule) for rule in rules] == current:
            return
        await self.client.update(CLUSTER_ROLES, {**role, "rules": rules})
