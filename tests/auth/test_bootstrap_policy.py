"""The bootstrap roles and bindings (plugin/pkg/auth/authorizer/rbac/bootstrappolicy): their
exact contents, and that ``--auth`` creates them once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from taintplane.apiserver.auth import policy
from taintplane.client import Client, resource
from taintplane.clock import VirtualClock
from taintplane.controllers.clusterroleaggregation import aggregate
from taintplane.sim.cluster import Cluster, ClusterConfig

RBAC = "rbac.authorization.k8s.io"
CLUSTER_ROLES = resource(RBAC, "v1", "clusterroles")
CLUSTER_ROLE_BINDINGS = resource(RBAC, "v1", "clusterrolebindings")
ROLES = resource(RBAC, "v1", "roles")
ROLE_BINDINGS = resource(RBAC, "v1", "rolebindings")
METADATA = {
    "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
    "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
}
EVENTS = {
    "verbs": ["create", "patch", "update"],
    "apiGroups": ["", "events.k8s.io"],
    "resources": ["events"],
}


def by_name(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}": o for o in objects}


def user(name: str) -> dict[str, str]:
    return {"apiGroup": RBAC, "kind": "User", "name": name}


def group(name: str) -> dict[str, str]:
    return {"apiGroup": RBAC, "kind": "Group", "name": name}


def service_account(name: str) -> dict[str, str]:
    return {"kind": "ServiceAccount", "name": name, "namespace": "kube-system"}


def test_every_object_is_labelled_and_autoupdated() -> None:
    for obj in (
        policy.cluster_roles()
        + policy.cluster_role_bindings()
        + policy.roles()
        + policy.role_bindings()
    ):
        assert obj["metadata"]["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
        assert obj["metadata"]["annotations"] == METADATA["annotations"]
        assert obj["apiVersion"] == f"{RBAC}/v1"
    names = [r["metadata"]["name"] for r in policy.cluster_roles()]
    assert len(names) == len(set(names))
    for binding in policy.cluster_role_bindings():
        assert binding["roleRef"]["name"] in names


def test_scheduler_and_controller_manager_roles_and_bindings() -> None:
    roles = by_name(policy.cluster_roles())
    bindings = by_name(policy.cluster_role_bindings())
    scheduler = roles["/system:kube-scheduler"]["rules"]
    assert scheduler[:4] == [
        EVENTS,
        {"verbs": ["create"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"]},
        {
            "verbs": ["get", "update"],
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["kube-scheduler"],
        },
        {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["nodes"]},
    ]
    assert {"verbs": ["create"], "apiGroups": [""], "resources": ["bindings", "pods/binding"]} in (
        scheduler
    )
    assert scheduler[-5:] == [
        {
            "verbs": ["get", "list", "watch"],
            "apiGroups": ["resource.k8s.io"],
            "resources": ["deviceclasses"],
        },
        {
            "verbs": ["get", "list", "patch", "update", "watch"],
            "apiGroups": ["resource.k8s.io"],
            "resources": ["resourceclaims"],
        },
        {
            "verbs": ["get", "list", "patch", "update", "watch"],
            "apiGroups": ["resource.k8s.io"],
            "resources": ["resourceclaims/status"],
        },
        {
            "verbs": ["get", "list", "patch", "update", "watch"],
            "apiGroups": [""],
            "resources": ["pods/finalizers"],
        },
        {
            "verbs": ["get", "list", "watch"],
            "apiGroups": ["resource.k8s.io"],
            "resources": ["resourceslices"],
        },
    ]
    assert bindings["/system:kube-scheduler"] == {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "system:kube-scheduler", **METADATA},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "system:kube-scheduler"},
        "subjects": [user("system:kube-scheduler")],
    }
    assert bindings["/system:volume-scheduler"]["subjects"] == [user("system:kube-scheduler")]
    assert bindings["/system:kube-controller-manager"]["subjects"] == [
        user("system:kube-controller-manager")
    ]
    assert roles["/system:kube-controller-manager"]["rules"][-2:] == [
        {"verbs": ["list", "watch"], "apiGroups": ["*"], "resources": ["*"]},
        {"verbs": ["create"], "apiGroups": [""], "resources": ["serviceaccounts/token"]},
    ]


def test_monitoring_issuer_discovery_and_certificate_roles() -> None:
    roles = by_name(policy.cluster_roles())
    bindings = by_name(policy.cluster_role_bindings())
    assert roles["/system:monitoring"] == {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "system:monitoring", **METADATA},
        "rules": [
            {
                "verbs": ["get"],
                "nonResourceURLs": [
                    "/healthz",
                    "/healthz/*",
                    "/livez",
                    "/livez/*",
                    "/metrics",
                    "/metrics/slis",
                    "/readyz",
                    "/readyz/*",
                ],
            }
        ],
    }
    assert bindings["/system:monitoring"]["subjects"] == [group("system:monitoring")]
    assert roles["/system:service-account-issuer-discovery"]["rules"] == [
        {
            "verbs": ["get"],
            "nonResourceURLs": [
                "/.well-known/openid-configuration",
                "/.well-known/openid-configuration/",
                "/openid/v1/jwks",
                "/openid/v1/jwks/",
            ],
        }
    ]
    assert bindings["/system:service-account-issuer-discovery"]["subjects"] == [
        group("system:serviceaccounts")
    ]
    assert roles["/system:certificates.k8s.io:kubelet-serving-approver"]["rules"] == [
        {
            "verbs": ["approve"],
            "apiGroups": ["certificates.k8s.io"],
            "resources": ["signers"],
            "resourceNames": ["kubernetes.io/kubelet-serving"],
        }
    ]
    for name in (
        "system:auth-delegator",
        "system:kube-aggregator",
        "system:kube-dns",
        "system:heapster",
        "system:node-bootstrapper",
        "system:node-problem-detector",
        "system:node-proxier",
        "system:persistent-volume-provisioner",
        "system:volume-scheduler",
        "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
        "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
        "system:certificates.k8s.io:kube-apiserver-client-approver",
        "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
        "system:certificates.k8s.io:legacy-unknown-approver",
    ):
        assert roles[f"/{name}"]["rules"], name
    assert bindings["/system:kube-dns"]["subjects"] == [service_account("kube-dns")]
    assert bindings["/system:node-proxier"]["subjects"] == [user("system:kube-proxy")]


def test_node_binding_binds_nobody() -> None:
    # As upstream since 1.8: the Node authorizer, not RBAC, authorizes nodes.
    bindings = by_name(policy.cluster_role_bindings())
    assert "subjects" not in bindings["/system:node"]
    assert bindings["/system:node"]["roleRef"]["name"] == "system:node"


def test_controller_roles_are_bound_to_their_service_accounts() -> None:
    roles = by_name(policy.cluster_roles())
    bindings = by_name(policy.cluster_role_bindings())
    for name in (
        "node-controller",
        "daemon-set-controller",
        "deployment-controller",
        "replicaset-controller",
        "pod-garbage-collector",
        "generic-garbage-collector",
        "namespace-controller",
        "disruption-controller",
        "clusterrole-aggregation-controller",
        "device-taint-eviction-controller",
        "resource-claim-controller",
    ):
        full = f"system:controller:{name}"
        assert roles[f"/{full}"]["rules"], name
        assert bindings[f"/{full}"] == {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": full, **METADATA},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": full},
            "subjects": [service_account(name)],
        }
    assert roles["/system:controller:clusterrole-aggregation-controller"]["rules"] == [
        {
            "verbs": ["escalate", "get", "list", "patch", "update", "watch"],
            "apiGroups": [RBAC],
            "resources": ["clusterroles"],
        }
    ]
    assert roles["/system:controller:node-controller"]["rules"] == [
        {
            "verbs": ["delete", "get", "list", "patch", "update", "watch"],
            "apiGroups": [""],
            "resources": ["nodes"],
        },
        {"verbs": ["patch", "update"], "apiGroups": [""], "resources": ["nodes/status"]},
        {"verbs": ["patch", "update"], "apiGroups": [""], "resources": ["pods/status"]},
        {"verbs": ["delete", "get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]},
        EVENTS,
    ]
    assert roles["/system:controller:pod-garbage-collector"]["rules"] == [
        {"verbs": ["delete", "list", "watch"], "apiGroups": [""], "resources": ["pods"]},
        {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["nodes"]},
        {"verbs": ["patch"], "apiGroups": [""], "resources": ["pods/status"]},
    ]


def test_kube_system_roles_and_bindings() -> None:
    roles = by_name(policy.roles())
    bindings = by_name(policy.role_bindings())
    assert sorted(roles) == [
        "kube-public/system:controller:bootstrap-signer",
        "kube-system/extension-apiserver-authentication-reader",
        "kube-system/system::leader-locking-kube-controller-manager",
        "kube-system/system::leader-locking-kube-scheduler",
        "kube-system/system:controller:bootstrap-signer",
        "kube-system/system:controller:cloud-provider",
        "kube-system/system:controller:token-cleaner",
    ]
    assert roles["kube-system/extension-apiserver-authentication-reader"] == {
        "apiVersion": f"{RBAC}/v1",
        "kind": "Role",
        "metadata": {
            "name": "extension-apiserver-authentication-reader",
            "namespace": "kube-system",
            **METADATA,
        },
        "rules": [
            {
                "verbs": ["get", "list", "watch"],
                "apiGroups": [""],
                "resources": ["configmaps"],
                "resourceNames": ["extension-apiserver-authentication"],
            }
        ],
    }
    assert roles["kube-system/system::leader-locking-kube-scheduler"]["rules"] == [
        {
            "verbs": ["create", "get", "list", "update", "watch"],
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
        },
        {
            "verbs": ["create", "get", "list", "update", "watch"],
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leasecandidates"],
        },
    ]
    assert bindings["kube-system/system::leader-locking-kube-scheduler"] == {
        "apiVersion": f"{RBAC}/v1",
        "kind": "RoleBinding",
        "metadata": {
            "name": "system::leader-locking-kube-scheduler",
            "namespace": "kube-system",
            **METADATA,
        },
        "roleRef": {
            "apiGroup": RBAC,
            "kind": "Role",
            "name": "system::leader-locking-kube-scheduler",
        },
        "subjects": [user("system:kube-scheduler"), service_account("kube-scheduler")],
    }
    assert bindings["kube-system/system::extension-apiserver-authentication-reader"][
        "subjects"
    ] == [user("system:kube-controller-manager"), user("system:kube-scheduler")]
    assert bindings["kube-public/system:controller:bootstrap-signer"]["subjects"] == [
        service_account("bootstrap-signer")
    ]


@asynccontextmanager
async def auth_server(tmp_path: Path) -> AsyncIterator[Cluster]:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('admin-token,admin,1,"system:masters"\n')
    cluster = Cluster(
        ClusterConfig(data_dir=tmp_path, port=0, components=(), auth_tokens=tokens),
        VirtualClock(),
    )
    await cluster.start(listen=False)
    try:
        yield cluster
    finally:
        await cluster.close()


async def _names(client: Client, rt: Any) -> set[str]:
    items, _ = await client.list(rt)
    return {i["metadata"]["name"] for i in items}


def test_auth_creates_them_and_bootstrap_again_keeps_edits(tmp_path: Path) -> None:
    async def main() -> None:
        async with auth_server(tmp_path) as cluster:
            assert cluster.client is not None
            assert cluster.apiserver is not None
            client = cluster.client
            expected_roles = {r["metadata"]["name"] for r in policy.cluster_roles()}
            expected_bindings = {b["metadata"]["name"] for b in policy.cluster_role_bindings()}
            assert expected_roles <= await _names(client, CLUSTER_ROLES)
            assert expected_bindings <= await _names(client, CLUSTER_ROLE_BINDINGS)
            for rt, objects in ((ROLES, policy.roles()), (ROLE_BINDINGS, policy.role_bindings())):
                items, _ = await client.list(rt)
                assert {f"{i['metadata']['namespace']}/{i['metadata']['name']}" for i in items} >= {
                    f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in objects
                }
            stored = await client.get(CLUSTER_ROLE_BINDINGS, "system:kube-scheduler")
            assert stored["subjects"] == [user("system:kube-scheduler")]
            assert stored["metadata"]["labels"] == METADATA["labels"]

            await client.patch(
                CLUSTER_ROLES,
                "system:heapster",
                {"rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]},
            )
            await cluster.apiserver.bootstrap()  # idempotent: existing objects are kept
            kept = await client.get(CLUSTER_ROLES, "system:heapster")
            assert kept["rules"] == [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]

    asyncio.run(main())


# The aggregate-to-* roles as upstream's golden testdata/cluster-roles.yaml lists them, with
# DynamicResourceAllocation (GA since 1.34) on: its resource.k8s.io rules close edit and view.
GET_LIST_WATCH = ["get", "list", "watch"]
WRITES = ["create", "delete", "deletecollection", "patch", "update"]
AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"


def golden(verbs: list[str], group: str, resources: list[str]) -> dict[str, Any]:
    return {"verbs": verbs, "apiGroups": [group], "resources": resources}


GOLDEN_ADMIN = [
    golden(["create"], "authorization.k8s.io", ["localsubjectaccessreviews"]),
    golden(
        ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        RBAC,
        ["rolebindings", "roles"],
    ),
]
GOLDEN_EDIT = [
    golden(
        GET_LIST_WATCH,
        "",
        ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"],
    ),
    golden(["impersonate"], "", ["serviceaccounts"]),
    golden(WRITES, "", ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"]),
    golden(["create"], "", ["pods/eviction"]),
    golden(
        WRITES,
        "",
        [
            "configmaps",
            "events",
            "persistentvolumeclaims",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "secrets",
            "serviceaccounts",
            "services",
            "services/proxy",
        ],
    ),
    golden(["create"], "", ["serviceaccounts/token"]),
    golden(
        WRITES,
        "apps",
        [
            "daemonsets",
            "deployments",
            "deployments/rollback",
            "deployments/scale",
            "replicasets",
            "replicasets/scale",
            "statefulsets",
            "statefulsets/scale",
        ],
    ),
    golden(WRITES, "autoscaling", ["horizontalpodautoscalers"]),
    golden(WRITES, "batch", ["cronjobs", "jobs"]),
    golden(
        WRITES,
        "extensions",
        [
            "daemonsets",
            "deployments",
            "deployments/rollback",
            "deployments/scale",
            "ingresses",
            "networkpolicies",
            "replicasets",
            "replicasets/scale",
            "replicationcontrollers/scale",
        ],
    ),
    golden(WRITES, "policy", ["poddisruptionbudgets"]),
    golden(WRITES, "networking.k8s.io", ["ingresses", "networkpolicies"]),
    golden(
        ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        "coordination.k8s.io",
        ["leases"],
    ),
    golden(WRITES, "resource.k8s.io", ["resourceclaims", "resourceclaimtemplates"]),
]
GOLDEN_VIEW = [
    golden(
        GET_LIST_WATCH,
        "",
        [
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
    ),
    golden(
        GET_LIST_WATCH,
        "",
        [
            "bindings",
            "events",
            "limitranges",
            "namespaces/status",
            "pods/log",
            "pods/status",
            "replicationcontrollers/status",
            "resourcequotas",
            "resourcequotas/status",
        ],
    ),
    golden(GET_LIST_WATCH, "", ["namespaces"]),
    golden(GET_LIST_WATCH, "discovery.k8s.io", ["endpointslices"]),
    golden(
        GET_LIST_WATCH,
        "apps",
        [
            "controllerrevisions",
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "statefulsets",
            "statefulsets/scale",
            "statefulsets/status",
        ],
    ),
    golden(
        GET_LIST_WATCH,
        "autoscaling",
        ["horizontalpodautoscalers", "horizontalpodautoscalers/status"],
    ),
    golden(GET_LIST_WATCH, "batch", ["cronjobs", "cronjobs/status", "jobs", "jobs/status"]),
    golden(
        GET_LIST_WATCH,
        "extensions",
        [
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "ingresses",
            "ingresses/status",
            "networkpolicies",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "replicationcontrollers/scale",
        ],
    ),
    golden(GET_LIST_WATCH, "policy", ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
    golden(
        GET_LIST_WATCH, "networking.k8s.io", ["ingresses", "ingresses/status", "networkpolicies"]
    ),
    golden(
        GET_LIST_WATCH,
        "resource.k8s.io",
        ["resourceclaims", "resourceclaims/status", "resourceclaimtemplates"],
    ),
]


def test_aggregate_to_roles_are_upstreams() -> None:
    roles = by_name(policy.cluster_roles())
    for kind, rules in (("admin", GOLDEN_ADMIN), ("edit", GOLDEN_EDIT), ("view", GOLDEN_VIEW)):
        name = f"system:aggregate-to-{kind}"
        assert roles[f"/{name}"] == {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRole",
            "metadata": {
                "name": name,
                "labels": {**METADATA["labels"], AGGREGATE + kind: "true"},
                "annotations": METADATA["annotations"],
            },
            "rules": rules,
        }, name


def test_admin_edit_view_aggregate_as_upstream_labels_them() -> None:
    roles = by_name(policy.cluster_roles())
    for kind, labels in (
        ("admin", {}),
        ("edit", {AGGREGATE + "admin": "true"}),
        ("view", {AGGREGATE + "edit": "true"}),
    ):
        assert roles[f"/{kind}"] == {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRole",
            "metadata": {
                "name": kind,
                "labels": {**METADATA["labels"], **labels},
                "annotations": METADATA["annotations"],
            },
            "rules": None,
            "aggregationRule": {
                "clusterRoleSelectors": [{"matchLabels": {AGGREGATE + kind: "true"}}]
            },
        }


def test_rendered_admin_edit_view_have_upstreams_rules() -> None:
    # As the clusterrole-aggregation-controller settles: view first, then edit (which gathers
    # view), then admin (which gathers edit); matched roles by name, exact duplicates dropped.
    roles = by_name(policy.cluster_roles())
    for kind in ("view", "edit", "admin"):
        role = roles[f"/{kind}"]
        role["rules"] = aggregate(role, list(roles.values()))
    assert roles["/view"]["rules"] == GOLDEN_VIEW
    assert roles["/edit"]["rules"] == GOLDEN_EDIT + GOLDEN_VIEW
    assert roles["/admin"]["rules"] == GOLDEN_EDIT + GOLDEN_VIEW + GOLDEN_ADMIN
