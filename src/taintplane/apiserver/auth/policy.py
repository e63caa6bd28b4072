"""The bootstrap ClusterRoles and ClusterRoleBindings kube-apiserver creates at start
(``bootstrappolicy``), for the kinds taintplane serves and those upstream's roles name.

admin, edit and view aggregate as upstream (``aggregate-to-*`` labels); their rules are also
written out, as upstream's aggregation controller would. Deviation: ``system:node`` is bound to
the group ``system:nodes`` (upstream leaves the binding empty and authorizes nodes with the
Node authorizer, which taintplane does not have; NodeRestriction limits their writes).
"""

from __future__ import annotations

from typing import Any

__all__ = ["cluster_role_bindings", "cluster_roles"]

READ = ["get", "list", "watch"]
WRITE = ["create", "update", "patch", "delete", "deletecollection"]
READ_WRITE = READ + WRITE
BOOTSTRAP = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"


def _rule(verbs: list[str], groups: list[str], resources: list[str]) -> dict[str, Any]:
    return {"verbs": verbs, "apiGroups": groups, "resources": resources}


def _urls(verbs: list[str], urls: list[str]) -> dict[str, Any]:
    return {"verbs": verbs, "nonResourceURLs": urls}


_VIEW = [
    _rule(
        READ,
        [""],
        [
            "pods",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "serviceaccounts",
            "services",
            "services/status",
            "endpoints",
            "persistentvolumeclaims",
            "persistentvolumeclaims/status",
            "configmaps",
        ],
    ),
    _rule(
        READ,
        [""],
        [
            "limitranges",
            "resourcequotas",
            "bindings",
            "events",
            "pods/status",
            "resourcequotas/status",
            "namespaces/status",
            "replicationcontrollers/status",
            "pods/log",
        ],
    ),
    _rule(READ, [""], ["namespaces"]),
    _rule(READ, ["discovery.k8s.io"], ["endpointslices"]),
    _rule(
        READ,
        ["apps"],
        [
            "controllerrevisions",
            "statefulsets",
            "statefulsets/scale",
            "statefulsets/status",
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
        ],
    ),
    _rule(READ, ["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]),
    _rule(READ, ["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"]),
    _rule(READ, ["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
    _rule(READ, ["networking.k8s.io"], ["ingresses", "ingresses/status", "networkpolicies"]),
]

_EDIT = [
    _rule(["impersonate"], [""], ["serviceaccounts"]),
    _rule(READ_WRITE, [""], ["pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"]),
    _rule(["create"], [""], ["pods/eviction"]),
    _rule(
        READ_WRITE,
        [""],
        [
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "serviceaccounts",
            "services",
            "services/proxy",
            "persistentvolumeclaims",
            "configmaps",
            "secrets",
            "events",
        ],
    ),
    _rule(["create"], [""], ["serviceaccounts/token"]),
    _rule(
        READ_WRITE,
        ["apps"],
        [
            "statefulsets",
            "statefulsets/scale",
            "daemonsets",
            "deployments",
            "deployments/scale",
            "deployments/rollback",
            "replicasets",
            "replicasets/scale",
        ],
    ),
    _rule(READ_WRITE, ["autoscaling"], ["horizontalpodautoscalers"]),
    _rule(READ_WRITE, ["batch"], ["jobs", "cronjobs"]),
    _rule(READ_WRITE, ["policy"], ["poddisruptionbudgets"]),
    _rule(READ_WRITE, ["networking.k8s.io"], ["networkpolicies", "ingresses"]),
    _rule(READ_WRITE, ["coordination.k8s.io"], ["leases"]),
]

_ADMIN = [
    _rule(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
    _rule(READ_WRITE, ["rbac.authorization.k8s.io"], ["roles", "rolebindings"]),
]

_NODE = [
    _rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
    _rule(
        ["create"], ["authorization.k8s.io"], ["subjectaccessreviews", "localsubjectaccessreviews"]
    ),
    _rule(READ, [""], ["services"]),
    _rule(["create", "get", "list", "watch"], [""], ["nodes"]),
    _rule(["update", "patch"], [""], ["nodes/status"]),
    _rule(["update", "patch"], [""], ["nodes"]),
    _rule(["create", "update", "patch"], ["", "events.k8s.io"], ["events"]),
    _rule(READ, [""], ["pods"]),
    _rule(["create", "delete"], [""], ["pods"]),
    _rule(["update", "patch"], [""], ["pods/status"]),
    _rule(["create"], [""], ["pods/eviction"]),
    _rule(["get"], [""], ["secrets", "configmaps"]),
    _rule(["get"], [""], ["persistentvolumeclaims", "persistentvolumes"]),
    _rule(["update", "patch"], [""], ["persistentvolumeclaims/status"]),
    _rule(["create"], [""], ["serviceaccounts/token"]),
    _rule(["get"], ["storage.k8s.io"], ["volumeattachments", "csidrivers"]),
    _rule(["get", "create", "update", "patch", "delete"], ["storage.k8s.io"], ["csinodes"]),
    _rule(["get", "create", "update", "patch", "delete"], ["coordination.k8s.io"], ["leases"]),
    _rule(READ, ["node.k8s.io"], ["runtimeclasses"]),
    _rule(["get"], ["resource.k8s.io"], ["resourceclaims"]),
    _rule(READ_WRITE, ["resource.k8s.io"], ["resourceslices"]),
    _rule(
        ["create", "get", "list", "watch"],
        ["certificates.k8s.io"],
        ["certificatesigningrequests"],
    ),
]

_REVIEWS = [
    _rule(
        ["create"],
        ["authorization.k8s.io"],
        ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
    ),
    _rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"]),
]

_DISCOVERY = _urls(
    ["get"],
    [
        "/api",
        "/api/*",
        "/apis",
        "/apis/*",
        "/healthz",
        "/livez",
        "/openapi",
        "/openapi/*",
        "/readyz",
        "/version",
        "/version/",
    ],
)
_PUBLIC_INFO = _urls(["get"], ["/healthz", "/livez", "/readyz", "/version", "/version/"])


def _role(
    name: str,
    rules: list[dict[str, Any]],
    labels: dict[str, str] | None = None,
    aggregate_from: str | None = None,
) -> dict[str, Any]:
    role: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": name,
            "labels": {**BOOTSTRAP, **(labels or {})},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "rules": rules,
    }
    if aggregate_from:
        role["aggregationRule"] = {
            "clusterRoleSelectors": [{"matchLabels": {AGGREGATE + aggregate_from: "true"}}]
        }
    return role


def cluster_roles() -> list[dict[str, Any]]:
    return [
        _role("cluster-admin", [_rule(["*"], ["*"], ["*"]), _urls(["*"], ["*"])]),
        _role("system:discovery", [_DISCOVERY]),
        _role("system:basic-user", _REVIEWS),
        _role("system:public-info-viewer", [_PUBLIC_INFO]),
        _role("admin", _ADMIN + _EDIT + _VIEW, aggregate_from="admin"),
        _role("edit", _EDIT + _VIEW, {AGGREGATE + "admin": "true"}, aggregate_from="edit"),
        _role("view", _VIEW, {AGGREGATE + "edit": "true"}, aggregate_from="view"),
        _role("system:aggregate-to-admin", _ADMIN, {AGGREGATE + "admin": "true"}),
        _role("system:aggregate-to-edit", _EDIT, {AGGREGATE + "edit": "true"}),
        _role("system:aggregate-to-view", _VIEW, {AGGREGATE + "view": "true"}),
        _role("system:node", _NODE),
    ]


def _binding(name: str, role: str, kind: str, *subjects: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {
            "name": name,
            "labels": dict(BOOTSTRAP),
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": s} for s in subjects
        ],
    }


def cluster_role_bindings() -> list[dict[str, Any]]:
    return [
        _binding("cluster-admin", "cluster-admin", "Group", "system:masters"),
        _binding("system:discovery", "system:discovery", "Group", "system:authenticated"),
        _binding("system:basic-user", "system:basic-user", "Group", "system:authenticated"),
        _binding(
            "system:public-info-viewer",
            "system:public-info-viewer",
            "Group",
            "system:authenticated",
            "system:unauthenticated",
        ),
        _binding("system:node", "system:node", "Group", "system:nodes"),
    ]
