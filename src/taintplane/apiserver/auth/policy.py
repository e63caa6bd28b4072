"""The bootstrap roles and bindings kube-apiserver creates at start (``bootstrappolicy``:
``policy.go``, ``controller_policy.go``, ``namespace_policy.go``), with the rules upstream's
default feature gates give them.

As upstream's ``NewRule(...).RuleOrDie()``, a rule's verbs, groups, resources, names and URLs
are sorted. admin, edit and view carry no rules of their own: the clusterrole-aggregation
controller writes them from the ``aggregate-to-*`` roles (and RBAC aggregates them on the fly
meanwhile). The system:controller:* roles are those of the controllers taintplane runs.
As upstream, the ``system:node`` binding has no subjects: nodes are authorized by the Node
authorizer (``node.py``), and NodeRestriction limits their writes.
"""

from __future__ import annotations

from typing import Any

__all__ = ["NODE_RULES", "cluster_role_bindings", "cluster_roles", "role_bindings", "roles"]

READ = ["get", "list", "watch"]
WRITE = ["create", "update", "patch", "delete", "deletecollection"]
READ_WRITE = READ + WRITE
BOOTSTRAP = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"


READ_UPDATE = [*READ, "update", "patch"]
GROUP = "rbac.authorization.k8s.io"
SYSTEM_NAMESPACE = "kube-system"


def _rule(
    verbs: list[str], groups: list[str], resources: list[str], names: list[str] | None = None
) -> dict[str, Any]:
    rule = {"verbs": sorted(verbs), "apiGroups": sorted(groups), "resources": sorted(resources)}
    if names:
        rule["resourceNames"] = sorted(names)
    return rule


def _urls(verbs: list[str], urls: list[str]) -> dict[str, Any]:
    return {"verbs": sorted(verbs), "nonResourceURLs": sorted(urls)}


#: upstream's ``eventsRule()``.
_EVENTS = _rule(["create", "update", "patch"], ["", "events.k8s.io"], ["events"])


#: ``system:aggregate-to-view``; the ``resource.k8s.io`` rule is DynamicResourceAllocation's
#: (GA since 1.34, on).
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
            "statefulsets/status",
            "statefulsets/scale",
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/status",
            "deployments/scale",
            "replicasets",
            "replicasets/status",
            "replicasets/scale",
        ],
    ),
    _rule(READ, ["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]),
    _rule(READ, ["batch"], ["jobs", "cronjobs", "cronjobs/status", "jobs/status"]),
    _rule(
        READ,
        ["extensions"],
        [
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "ingresses",
            "ingresses/status",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "replicationcontrollers/scale",
            "networkpolicies",
        ],
    ),
    _rule(READ, ["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
    _rule(READ, ["networking.k8s.io"], ["networkpolicies", "ingresses", "ingresses/status"]),
    _rule(
        READ,
        ["resource.k8s.io"],
        ["resourceclaims", "resourceclaims/status", "resourceclaimtemplates"],
    ),
]

#: ``system:aggregate-to-edit``: reads come from view (aggregated into edit), so most rules
#: grant only writes; the escalating resources view leaves out are read here.
_EDIT = [
    _rule(
        READ,
        [""],
        ["pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy"],
    ),
    _rule(["impersonate"], [""], ["serviceaccounts"]),
    _rule(WRITE, [""], ["pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"]),
    _rule(["create"], [""], ["pods/eviction"]),
    _rule(
        WRITE,
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
        WRITE,
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
    _rule(WRITE, ["autoscaling"], ["horizontalpodautoscalers"]),
    _rule(WRITE, ["batch"], ["jobs", "cronjobs"]),
    _rule(
        WRITE,
        ["extensions"],
        [
            "daemonsets",
            "deployments",
            "deployments/scale",
            "deployments/rollback",
            "ingresses",
            "replicasets",
            "replicasets/scale",
            "replicationcontrollers/scale",
            "networkpolicies",
        ],
    ),
    _rule(WRITE, ["policy"], ["poddisruptionbudgets"]),
    _rule(WRITE, ["networking.k8s.io"], ["networkpolicies", "ingresses"]),
    _rule(READ_WRITE, ["coordination.k8s.io"], ["leases"]),
    _rule(WRITE, ["resource.k8s.io"], ["resourceclaims", "resourceclaimtemplates"]),
]

_ADMIN = [
    _rule(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
    _rule(READ_WRITE, ["rbac.authorization.k8s.io"], ["roles", "rolebindings"]),
]

#: ``NodeRules()``: the system:node ClusterRole's rules, and what the Node authorizer grants
#: every node for the resources it does not subdivide.
NODE_RULES = [
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


CONTROLLER_PREFIX = "system:controller:"

#: ``controller_policy.go``'s roles of the controllers taintplane runs, each bound to the
#: service account kube-system/NAME (taint-eviction and node-lifecycle share node-controller's).
_CONTROLLERS: dict[str, list[dict[str, Any]]] = {
    "clusterrole-aggregation-controller": [
        _rule(
            ["escalate", "get", "list", "watch", "update", "patch"],
            ["rbac.authorization.k8s.io"],
            ["clusterroles"],
        )
    ],
    "daemon-set-controller": [
        _rule(READ, ["apps", "extensions"], ["daemonsets"]),
        _rule(["update"], ["apps", "extensions"], ["daemonsets/status"]),
        _rule(["update"], ["apps", "extensions"], ["daemonsets/finalizers"]),
        _rule(["list", "watch"], [""], ["nodes"]),
        _rule(["list", "watch", "create", "delete", "patch"], [""], ["pods"]),
        _rule(["create"], [""], ["pods/binding"]),
        _rule([*READ, "create", "update", "patch", "delete"], ["apps"], ["controllerrevisions"]),
        _EVENTS,
    ],
    "deployment-controller": [
        _rule(["get", "list", "watch", "update"], ["apps", "extensions"], ["deployments"]),
        _rule(["update"], ["apps", "extensions"], ["deployments/status"]),
        _rule(["update"], ["apps", "extensions"], ["deployments/finalizers"]),
        _rule(
            [*READ, "create", "update", "patch", "delete"], ["apps", "extensions"], ["replicasets"]
        ),
        _rule(["get", "list", "watch", "update"], [""], ["pods"]),
        _EVENTS,
    ],
    "device-taint-eviction-controller": [
        _rule(["get", "list", "watch", "delete"], [""], ["pods"]),
        _rule(["update", "patch"], [""], ["pods/status"]),
        _rule(READ, ["resource.k8s.io"], ["resourceclaims"]),
        _rule(READ, ["resource.k8s.io"], ["resourceslices"]),
        _rule(READ, ["resource.k8s.io"], ["deviceclasses"]),
        _EVENTS,
    ],
    "disruption-controller": [
        _rule(READ, ["apps", "extensions"], ["deployments"]),
        _rule(READ, ["apps", "extensions"], ["replicasets"]),
        _rule(READ, [""], ["replicationcontrollers"]),
        _rule(READ, ["policy"], ["poddisruptionbudgets"]),
        _rule(READ, ["apps"], ["statefulsets"]),
        _rule(["update"], ["policy"], ["poddisruptionbudgets/status"]),
        _rule(["patch", "update"], [""], ["pods/status"]),
        _rule(["get"], ["*"], ["*/scale"]),
        _EVENTS,
    ],
    "generic-garbage-collector": [
        _rule(["get", "list", "watch", "patch", "update", "delete"], ["*"], ["*"]),
        _EVENTS,
    ],
    "namespace-controller": [
        _rule(["get", "list", "watch", "delete"], [""], ["namespaces"]),
        _rule(["update"], [""], ["namespaces/finalize", "namespaces/status"]),
        _rule(["get", "list", "delete", "deletecollection", "watch"], ["*"], ["*"]),
    ],
    "node-controller": [
        _rule(["get", "list", "update", "delete", "patch", "watch"], [""], ["nodes"]),
        _rule(["patch", "update"], [""], ["nodes/status"]),
        _rule(["patch", "update"], [""], ["pods/status"]),
        _rule(["list", "get", "delete", "watch"], [""], ["pods"]),
        _EVENTS,
    ],
    "pod-garbage-collector": [
        _rule(["list", "watch", "delete"], [""], ["pods"]),
        _rule(READ, [""], ["nodes"]),
        _rule(["patch"], [""], ["pods/status"]),
    ],
    "replicaset-controller": [
        _rule(["get", "list", "watch", "update"], ["apps", "extensions"], ["replicasets"]),
        _rule(["update"], ["apps", "extensions"], ["replicasets/status"]),
        _rule(["update"], ["apps", "extensions"], ["replicasets/finalizers"]),
        _rule(["list", "watch", "patch", "create", "delete"], [""], ["pods"]),
        _EVENTS,
    ],
    "resource-claim-controller": [
        _rule(READ, [""], ["pods"]),
        _rule(["update"], [""], ["pods/finalizers"]),
        _rule(
            ["get", "list", "watch", "create", "delete"], ["resource.k8s.io"], ["resourceclaims"]
        ),
        _rule(
            ["update", "patch"], ["resource.k8s.io"], ["resourceclaims", "resourceclaims/status"]
        ),
        _rule(["update", "patch"], [""], ["pods/status"]),
        _EVENTS,
        _rule(["update", "patch"], ["resource.k8s.io"], ["resourceclaims/binding"]),
    ],
}


_SIGNERS = {
    "system:certificates.k8s.io:legacy-unknown-approver": "kubernetes.io/legacy-unknown",
    "system:certificates.k8s.io:kubelet-serving-approver": "kubernetes.io/kubelet-serving",
    "system:certificates.k8s.io:kube-apiserver-client-approver": (
        "kubernetes.io/kube-apiserver-client"
    ),
    "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver": (
        "kubernetes.io/kube-apiserver-client-kubelet"
    ),
}

_KUBE_CONTROLLER_MANAGER = [
    _EVENTS,
    _rule(["create"], ["coordination.k8s.io"], ["leases"]),
    _rule(["get", "update"], ["coordination.k8s.io"], ["leases"], ["kube-controller-manager"]),
    _rule(["create"], [""], ["secrets", "serviceaccounts"]),
    _rule(["delete"], [""], ["secrets"]),
    _rule(["get"], [""], ["namespaces", "secrets", "serviceaccounts", "configmaps"]),
    _rule(["update"], [""], ["secrets", "serviceaccounts"]),
    _rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
    _rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
    _rule(["list", "watch"], ["*"], ["*"]),
    _rule(["create"], [""], ["serviceaccounts/token"]),
]

_KUBE_SCHEDULER = [
    _EVENTS,
    _rule(["create"], ["coordination.k8s.io"], ["leases"]),
    _rule(["get", "update"], ["coordination.k8s.io"], ["leases"], ["kube-scheduler"]),
    _rule(READ, [""], ["nodes"]),
    _rule(["get", "list", "watch", "delete"], [""], ["pods"]),
    _rule(["create"], [""], ["pods/binding", "bindings"]),
    _rule(["patch", "update"], [""], ["pods/status"]),
    _rule(READ, [""], ["services", "replicationcontrollers"]),
    _rule(READ, ["apps", "extensions"], ["replicasets"]),
    _rule(READ, ["apps"], ["statefulsets"]),
    _rule(READ, ["policy"], ["poddisruptionbudgets"]),
    _rule(READ, [""], ["persistentvolumeclaims", "persistentvolumes"]),
    _rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
    _rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
    _rule(READ, ["storage.k8s.io"], ["csinodes"]),
    _rule(READ, [""], ["namespaces"]),
    _rule(READ, ["storage.k8s.io"], ["csidrivers"]),
    _rule(READ, ["storage.k8s.io"], ["csistoragecapacities"]),
    # DynamicResourceAllocation (GA, on):
    _rule(READ, ["resource.k8s.io"], ["deviceclasses"]),
    _rule(READ_UPDATE, ["resource.k8s.io"], ["resourceclaims"]),
    _rule(READ_UPDATE, ["resource.k8s.io"], ["resourceclaims/status"]),
    _rule(READ_UPDATE, [""], ["pods/finalizers"]),
    _rule(READ, ["resource.k8s.io"], ["resourceslices"]),
]

_MONITORING_URLS = [
    "/metrics",
    "/metrics/slis",
    "/livez",
    "/readyz",
    "/healthz",
    "/livez/*",
    "/readyz/*",
    "/healthz/*",
]
_ISSUER_DISCOVERY_URLS = [
    "/.well-known/openid-configuration",
    "/.well-known/openid-configuration/",
    "/openid/v1/jwks",
    "/openid/v1/jwks/",
]


def _metadata(name: str, namespace: str = "", labels: dict[str, str] | None = None) -> Any:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    metadata["labels"] = {**BOOTSTRAP, **(labels or {})}
    metadata["annotations"] = {"rbac.authorization.kubernetes.io/autoupdate": "true"}
    return metadata


def _role(
    name: str,
    rules: list[dict[str, Any]] | None,
    labels: dict[str, str] | None = None,
    aggregate_from: str | None = None,
) -> dict[str, Any]:
    role: dict[str, Any] = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": _metadata(name, labels=labels),
        "rules": rules,
    }
    if aggregate_from:
        role["aggregationRule"] = {
            "clusterRoleSelectors": [{"matchLabels": {AGGREGATE + aggregate_from: "true"}}]
        }
    return role


def cluster_roles() -> list[dict[str, Any]]:
    """``ClusterRoles()`` then ``ControllerRoles()``, in upstream's order."""
    return [
        _role("cluster-admin", [_rule(["*"], ["*"], ["*"]), _urls(["*"], ["*"])]),
        _role("system:discovery", [_DISCOVERY]),
        _role("system:monitoring", [_urls(["get"], _MONITORING_URLS)]),
        _role("system:basic-user", _REVIEWS),
        _role("system:public-info-viewer", [_PUBLIC_INFO]),
        _role("admin", None, aggregate_from="admin"),
        _role("edit", None, {AGGREGATE + "admin": "true"}, aggregate_from="edit"),
        _role("view", None, {AGGREGATE + "edit": "true"}, aggregate_from="view"),
        _role("system:aggregate-to-admin", _ADMIN, {AGGREGATE + "admin": "true"}),
        _role("system:aggregate-to-edit", _EDIT, {AGGREGATE + "edit": "true"}),
        _role("system:aggregate-to-view", _VIEW, {AGGREGATE + "view": "true"}),
        _role(
            "system:heapster",
            [
                _rule(READ, [""], ["events", "pods", "nodes", "namespaces"]),
                _rule(READ, ["extensions"], ["deployments"]),
            ],
        ),
        _role("system:node", NODE_RULES),
        _role(
            "system:node-problem-detector",
            [
                _rule(["get"], [""], ["nodes"]),
                _rule(["patch"], [""], ["nodes/status"]),
                _EVENTS,
            ],
        ),
        _role(
            "system:node-bootstrapper",
            [
                _rule(
                    ["create", "get", "list", "watch"],
                    ["certificates.k8s.io"],
                    ["certificatesigningrequests"],
                )
            ],
        ),
        _role(
            "system:auth-delegator",
            [
                _rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
                _rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
            ],
        ),
        _role("system:kube-aggregator", [_rule(READ, [""], ["services", "endpoints"])]),
        _role("system:kube-controller-manager", _KUBE_CONTROLLER_MANAGER),
        _role("system:kube-dns", [_rule(["list", "watch"], [""], ["endpoints", "services"])]),
        _role(
            "system:persistent-volume-provisioner",
            [
                _rule(["get", "list", "watch", "create", "delete"], [""], ["persistentvolumes"]),
                _rule(["get", "list", "watch", "update"], [""], ["persistentvolumeclaims"]),
                _rule(READ, ["storage.k8s.io"], ["storageclasses"]),
                _rule(["watch"], [""], ["events"]),
                _EVENTS,
            ],
        ),
        _role(
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            [
                _rule(
                    ["create"],
                    ["certificates.k8s.io"],
                    ["certificatesigningrequests/nodeclient"],
                )
            ],
        ),
        _role(
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            [
                _rule(
                    ["create"],
                    ["certificates.k8s.io"],
                    ["certificatesigningrequests/selfnodeclient"],
                )
            ],
        ),
        _role(
            "system:volume-scheduler",
            [
                _rule(READ_UPDATE, [""], ["persistentvolumes"]),
                _rule(READ, ["storage.k8s.io"], ["storageclasses"]),
                _rule(READ_UPDATE, [""], ["persistentvolumeclaims"]),
            ],
        ),
        *(
            _role(name, [_rule(["approve"], ["certificates.k8s.io"], ["signers"], [signer])])
            for name, signer in _SIGNERS.items()
        ),
        _role("system:service-account-issuer-discovery", [_urls(["get"], _ISSUER_DISCOVERY_URLS)]),
        _role(
            "system:node-proxier",
            [
                _rule(["list", "watch"], [""], ["services", "endpoints"]),
                _rule(READ, [""], ["nodes"]),
                _EVENTS,
                _rule(["list", "watch"], ["networking.k8s.io"], ["servicecidrs"]),
                _rule(["list", "watch"], ["discovery.k8s.io"], ["endpointslices"]),
            ],
        ),
        _role("system:kube-scheduler", _KUBE_SCHEDULER),
        *(_role(CONTROLLER_PREFIX + name, rules) for name, rules in _CONTROLLERS.items()),
    ]


def _subject(kind: str, name: str) -> dict[str, Any]:
    if kind == "ServiceAccount":
        return {"kind": kind, "name": name, "namespace": SYSTEM_NAMESPACE}
    return {"apiGroup": GROUP, "kind": kind, "name": name}


def _binding(
    name: str, role: str, *subjects: tuple[str, str], namespace: str = ""
) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "RoleBinding" if namespace else "ClusterRoleBinding",
        "metadata": _metadata(name, namespace),
        "roleRef": {
            "apiGroup": GROUP,
            "kind": "Role" if namespace else "ClusterRole",
            "name": role,
        },
        # NewClusterBinding without subjects: omitted (``omitempty``), as system:node's.
        **({"subjects": [_subject(k, s) for k, s in subjects]} if subjects else {}),
    }


def _groups(*names: str) -> tuple[tuple[str, str], ...]:
    return tuple(("Group", n) for n in names)


def cluster_role_bindings() -> list[dict[str, Any]]:
    """``ClusterRoleBindings()`` then ``ControllerRoleBindings()``, in upstream's order."""
    scheduler = ("User", "system:kube-scheduler")
    return [
        _binding("cluster-admin", "cluster-admin", *_groups("system:masters")),
        _binding("system:monitoring", "system:monitoring", *_groups("system:monitoring")),
        _binding("system:discovery", "system:discovery", *_groups("system:authenticated")),
        _binding("system:basic-user", "system:basic-user", *_groups("system:authenticated")),
        _binding(
            "system:public-info-viewer",
            "system:public-info-viewer",
            *_groups("system:authenticated", "system:unauthenticated"),
        ),
        _binding("system:node-proxier", "system:node-proxier", ("User", "system:kube-proxy")),
        _binding(
            "system:kube-controller-manager",
            "system:kube-controller-manager",
            ("User", "system:kube-controller-manager"),
        ),
        _binding("system:kube-dns", "system:kube-dns", ("ServiceAccount", "kube-dns")),
        _binding("system:kube-scheduler", "system:kube-scheduler", scheduler),
        _binding("system:volume-scheduler", "system:volume-scheduler", scheduler),
        _binding("system:node", "system:node"),
        _binding(
            "system:service-account-issuer-discovery",
            "system:service-account-issuer-discovery",
            *_groups("system:serviceaccounts"),
        ),
        *(
            _binding(CONTROLLER_PREFIX + name, CONTROLLER_PREFIX + name, ("ServiceAccount", name))
            for name in _CONTROLLERS
        ),
    ]


def _namespaced_role(name: str, namespace: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Role",
        "metadata": _metadata(name, namespace),
        "rules": rules,
    }


_LEADER_LOCKING = [
    _rule(["create", "get", "list", "update", "watch"], ["coordination.k8s.io"], ["leases"]),
    _rule(
        ["create", "get", "list", "update", "watch"], ["coordination.k8s.io"], ["leasecandidates"]
    ),
]


def roles() -> list[dict[str, Any]]:
    """``NamespaceRoles()``: the Roles of kube-system and kube-public."""
    system = SYSTEM_NAMESPACE
    return [
        _namespaced_role(
            "extension-apiserver-authentication-reader",
            system,
            [_rule(READ, [""], ["configmaps"], ["extension-apiserver-authentication"])],
        ),
        _namespaced_role("system::leader-locking-kube-controller-manager", system, _LEADER_LOCKING),
        _namespaced_role("system::leader-locking-kube-scheduler", system, _LEADER_LOCKING),
        _namespaced_role(
            CONTROLLER_PREFIX + "bootstrap-signer", system, [_rule(READ, [""], ["secrets"])]
        ),
        _namespaced_role(
            CONTROLLER_PREFIX + "cloud-provider",
            system,
            [_rule(["create", "get", "list", "watch"], [""], ["configmaps"])],
        ),
        _namespaced_role(
            CONTROLLER_PREFIX + "token-cleaner",
            system,
            [_rule(["delete", "get", "list", "watch"], [""], ["secrets"]), _EVENTS],
        ),
        _namespaced_role(
            CONTROLLER_PREFIX + "bootstrap-signer",
            "kube-public",
            [
                _rule(READ, [""], ["configmaps"]),
                _rule(["update"], [""], ["configmaps"], ["cluster-info"]),
                _EVENTS,
            ],
        ),
    ]


def role_bindings() -> list[dict[str, Any]]:
    """``NamespaceRoleBindings()``: the RoleBindings of kube-system and kube-public."""
    system = SYSTEM_NAMESPACE
    manager = ("User", "system:kube-controller-manager")
    scheduler = ("User", "system:kube-scheduler")
    signer = CONTROLLER_PREFIX + "bootstrap-signer"
    return [
        _binding(
            "system::extension-apiserver-authentication-reader",
            "extension-apiserver-authentication-reader",
            manager,
            scheduler,
            namespace=system,
        ),
        _binding(
            "system::leader-locking-kube-controller-manager",
            "system::leader-locking-kube-controller-manager",
            manager,
            ("ServiceAccount", "kube-controller-manager"),
            ("ServiceAccount", "leader-election-controller"),
            namespace=system,
        ),
        _binding(
            "system::leader-locking-kube-scheduler",
            "system::leader-locking-kube-scheduler",
            scheduler,
            ("ServiceAccount", "kube-scheduler"),
            namespace=system,
        ),
        _binding(signer, signer, ("ServiceAccount", "bootstrap-signer"), namespace=system),
        *(
            _binding(
                CONTROLLER_PREFIX + name,
                CONTROLLER_PREFIX + name,
                ("ServiceAccount", name),
                namespace=system,
            )
            for name in ("cloud-provider", "token-cleaner")
        ),
        _binding(signer, signer, ("ServiceAccount", "bootstrap-signer"), namespace="kube-public"),
    ]
