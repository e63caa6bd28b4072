"""The clusterrole-aggregation-controller (pkg/controller/clusterroleaggregation): aggregated
ClusterRoles show the union of the rules of the roles their selectors match."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from taintplane.apiserver.auth import policy
from taintplane.client import ApiError, Client
from taintplane.clock import VirtualClock
from taintplane.controllers.clusterroleaggregation import CLUSTER_ROLES, aggregate
from taintplane.controllers.manager import ALL_CONTROLLERS
from taintplane.sim.cluster import Cluster, ClusterConfig, in_process_cluster

CONTROLLER = "clusterrole-aggregation-controller"
READ = ["get", "list", "watch"]
SELECTOR = {"matchLabels": {"example.com/aggregate-to-monitoring": "true"}}
LABELS = {"example.com/aggregate-to-monitoring": "true"}


def rule(verbs: list[str], resources: list[str], group: str = "") -> dict[str, Any]:
    return {"verbs": verbs, "apiGroups": [group], "resources": resources}


def cluster_role(name: str, rules: list[Any], **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, **extra.pop("metadata", {})}, "rules": rules, **extra}


async def rules_of(client: Client, name: str) -> list[dict[str, Any]]:
    return list((await client.get(CLUSTER_ROLES, name)).get("rules") or [])


@asynccontextmanager
async def auth_cluster(tmp_path: Path, clock: VirtualClock) -> AsyncIterator[Cluster]:
    """A cluster with ``--auth`` (so the bootstrap roles exist) running only this controller."""
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('admin-token,admin,1,"system:masters"\n')
    config = ClusterConfig(
        data_dir=tmp_path,
        port=0,
        components=("controller-manager",),
        controllers=(CONTROLLER,),
        auth_tokens=tokens,
    )
    cluster = Cluster(config, clock)
    await cluster.start(listen=False)
    try:
        await clock.advance(1)
        yield cluster
    finally:
        await cluster.close()


def test_controller_runs_by_default() -> None:
    assert CONTROLLER in ALL_CONTROLLERS


def test_bootstrap_admin_edit_view_show_the_aggregated_rules(tmp_path: Path) -> None:
    async def main() -> None:
        clock = VirtualClock()
        async with auth_cluster(tmp_path, clock) as cluster:
            assert cluster.client is not None
            view = await rules_of(cluster.client, "view")
            edit = await rules_of(cluster.client, "edit")
            admin = await rules_of(cluster.client, "admin")
            assert view == policy._VIEW
            # edit: system:aggregate-to-edit, then view (by name)
            assert edit == policy._EDIT + policy._VIEW
            # admin: edit, then system:aggregate-to-admin
            assert admin == policy._EDIT + policy._VIEW + policy._ADMIN
            assert view[0] == {
                "verbs": ["get", "list", "watch"],
                "apiGroups": [""],
                "resources": [
                    "configmaps",
                    "endpoints",
                    "persistentvolumeclaims",
                    "persistentvolumeclaims/status",
                    "pods",
                    "replicationcontrollers",
                    "replicationcontrollers/scale",
                    "serviceaccounts",
                    "services",
                    "services/status",
                ],
            }
            stored = await cluster.client.get(CLUSTER_ROLES, "view")
            assert stored["aggregationRule"] == {
                "clusterRoleSelectors": [
                    {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}
                ]
            }

    asyncio.run(main())


def test_a_role_labelled_aggregate_to_view_reaches_view_edit_and_admin(tmp_path: Path) -> None:
    crd_rule = rule(READ, ["crontabs"], "stable.example.com")

    async def main() -> None:
        clock = VirtualClock()
        async with auth_cluster(tmp_path, clock) as cluster:
            assert cluster.client is not None
            labels = {"rbac.authorization.k8s.io/aggregate-to-view": "true"}
            await cluster.client.create(
                CLUSTER_ROLES,
                cluster_role("crontab-reader", [crd_rule], metadata={"labels": labels}),
            )
            await clock.advance(1)
            # "crontab-reader" sorts before "system:aggregate-to-view": its rule comes first.
            assert await rules_of(cluster.client, "view") == [crd_rule, *policy._VIEW]
            assert await rules_of(cluster.client, "edit") == [
                *policy._EDIT,
                crd_rule,
                *policy._VIEW,
            ]
            assert await rules_of(cluster.client, "admin") == [
                *policy._EDIT,
                crd_rule,
                *policy._VIEW,
                *policy._ADMIN,
            ]

            await cluster.client.delete(CLUSTER_ROLES, "crontab-reader")
            await clock.advance(1)
            assert await rules_of(cluster.client, "admin") == [
                *policy._EDIT,
                *policy._VIEW,
                *policy._ADMIN,
            ]

    asyncio.run(main())


def test_aggregation_replaces_own_rules_in_name_order_without_duplicates(
    tmp_path: Path,
) -> None:
    pods = rule(READ, ["pods"])
    nodes = rule(READ, ["nodes"])
    events = rule(["create"], ["events"])

    async def main() -> None:
        clock = VirtualClock()
        async with in_process_cluster(
            tmp_path, clock, components=("controller-manager",), controllers=(CONTROLLER,)
        ) as cluster:
            client = cluster.client
            assert client is not None
            aggregated = cluster_role(
                "monitoring",
                [rule(["delete"], ["secrets"])],  # a user's rule: replaced
                aggregationRule={"clusterRoleSelectors": [SELECTOR]},
            )
            await client.create(CLUSTER_ROLES, aggregated)
            await client.create(
                CLUSTER_ROLES, cluster_role("b-metrics", [nodes, pods], metadata={"labels": LABELS})
            )
            await client.create(
                CLUSTER_ROLES, cluster_role("a-metrics", [pods], metadata={"labels": LABELS})
            )
            await client.create(CLUSTER_ROLES, cluster_role("unlabelled", [events]))
            await clock.advance(1)
            assert await rules_of(client, "monitoring") == [pods, nodes]

            # A change to a matched role is followed.
            await client.patch(CLUSTER_ROLES, "a-metrics", {"rules": [events]})
            await clock.advance(1)
            assert await rules_of(client, "monitoring") == [events, nodes, pods]

            # A user's edit of the aggregated rules is undone.
            await client.patch(CLUSTER_ROLES, "monitoring", {"rules": [nodes]})
            await clock.advance(1)
            assert await rules_of(client, "monitoring") == [events, nodes, pods]

            # A role that stops matching leaves.
            await client.patch(CLUSTER_ROLES, "b-metrics", {"metadata": {"labels": None}})
            await clock.advance(1)
            assert await rules_of(client, "monitoring") == [events]

            stored = await client.get(CLUSTER_ROLES, "monitoring")
            managers = {m["manager"] for m in stored["metadata"].get("managedFields") or []}
            assert CONTROLLER in managers

    asyncio.run(main())


def test_a_role_matching_its_own_selector_is_left_out() -> None:
    own = rule(READ, ["pods"])
    other = rule(READ, ["nodes"])
    role = cluster_role(
        "self",
        [own],
        metadata={"labels": LABELS},
        aggregationRule={"clusterRoleSelectors": [SELECTOR, {"matchLabels": {"x": "y"}}]},
    )
    second = cluster_role("second", [other, own], metadata={"labels": {"x": "y"}})
    first = cluster_role(
        "first", [own, {**other, "resourceNames": []}], metadata={"labels": LABELS}
    )
    # Selector by selector; an empty resourceNames is the same rule as none (Semantic).
    assert aggregate(role, [role, second, first]) == [own, {**other, "resourceNames": []}]


def test_a_role_without_aggregation_rule_is_not_touched(tmp_path: Path) -> None:
    async def main() -> None:
        clock = VirtualClock()
        async with in_process_cluster(
            tmp_path, clock, components=("controller-manager",), controllers=(CONTROLLER,)
        ) as cluster:
            client = cluster.client
            assert client is not None
            mine = [rule(["delete"], ["secrets"])]
            await client.create(
                CLUSTER_ROLES, cluster_role("plain", mine, metadata={"labels": LABELS})
            )
            await clock.advance(1)
            assert await rules_of(client, "plain") == mine
            # Without --auth there are no bootstrap roles.
            with pytest.raises(ApiError) as missing:
                await client.get(CLUSTER_ROLES, "view")
            assert missing.value.code == 404

    asyncio.run(main())
