"""The resource types taintplane serves: group, version, kind, names, scope, verbs.

This is the one table the API server's generic machinery, discovery and OpenAPI are driven
by. Versions and names are those Kubernetes 1.35 serves for these kinds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["SCHEME", "ResourceType", "Scheme", "Subresource"]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
STATUS_VERBS = ("get", "patch", "update")


@dataclass(frozen=True, slots=True)
class Subresource:
    name: str
    verbs: tuple[str, ...]
    #: (group, version, kind) of the subresource's request/response when it differs.
    kind: tuple[str, str, str] | None = None


@dataclass(frozen=True, slots=True)
class ResourceType:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[Subresource, ...] = ()
    #: Version of the group listed first (preferred) in discovery.
    preferred: bool = True
    #: The registry's ``ReturnDeletedObject``: a DELETE that removes the object answers with
    #: the object rather than a Status. (A deletion left pending on finalizers or a grace
    #: period answers with the object for every kind.)
    return_deleted_object: bool = False
    #: The hash of the fields above, computed once: a resource type keys the registry's
    #: maps several times in every request, and hashing all its fields was a measurable
    #: share of one write. Not a field of the value (no init, repr or comparison).
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "_hash",
            hash(
                (
                    self.group,
                    self.version,
                    self.kind,
                    self.plural,
                    self.namespaced,
                    self.short_names,
                    self.categories,
                    self.verbs,
                    self.subresources,
                    self.preferred,
                    self.return_deleted_object,
                )
            ),
        )

    def __hash__(self) -> int:
        return self._hash

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        return self.api_version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def group_resource(self) -> str:
        """``pods`` or ``runtimeclasses.node.k8s.io``, as messages name the resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def has_subresource(self, name: str) -> bool:
        return any(s.name == name for s in self.subresources)

    def storage_prefix(self) -> str:
        """Keys are ``/<group>/<plural>/<namespace>/<name>``; the version is not part of it."""
        return f"/{self.group or 'core'}/{self.plural}/"

    def storage_key(self, namespace: str, name: str) -> str:
        if self.namespaced:
            return f"{self.storage_prefix()}{namespace}/{name}"
        return f"{self.storage_prefix()}{name}"


_STATUS = Subresource("status", STATUS_VERBS)
_SCALE = Subresource("scale", ("get", "patch", "update"), ("autoscaling", "v1", "Scale"))


def _core(kind: str, plural: str, namespaced: bool, **kw: object) -> ResourceType:
    return ResourceType("", "v1", kind, plural, namespaced, **kw)  # type: ignore[arg-type]


RESOURCE_TYPES: tuple[ResourceType, ...] = (
    _core(
        "Namespace",
        "namespaces",
        False,
        short_names=("ns",),
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
        subresources=(_STATUS, Subresource("finalize", ("update",))),
        return_deleted_object=True,
    ),
    _core("Node", "nodes", False, short_names=("no",), subresources=(_STATUS,)),
    _core(
        "Pod",
        "pods",
        True,
        short_names=("po",),
        categories=("all",),
        subresources=(
            # Served to fail as upstream does when no kubelet answers (pod_streams.py).
            Subresource("attach", ("create", "get"), ("", "v1", "PodAttachOptions")),
            Subresource("binding", ("create",), ("", "v1", "Binding")),
            Subresource("eviction", ("create",), ("policy", "v1", "Eviction")),
            Subresource("exec", ("create", "get"), ("", "v1", "PodExecOptions")),
            Subresource("log", ("get",), ("", "v1", "Pod")),
            Subresource("portforward", ("create", "get"), ("", "v1", "PodPortForwardOptions")),
            _STATUS,
        ),
        return_deleted_object=True,
    ),
    # The older way to bind a pod (POST …/bindings with the pod's name in the Binding's
    # metadata), served beside pods/binding as kube-apiserver does; nothing is stored.
    _core("Binding", "bindings", True, verbs=("create",)),
    _core("Event", "events", True, short_names=("ev",)),
    ResourceType("events.k8s.io", "v1", "Event", "events", True, short_names=("ev",)),
    ResourceType("coordination.k8s.io", "v1", "Lease", "leases", True),
    ResourceType("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", False),
    ResourceType(
        "scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, short_names=("pc",)
    ),
    ResourceType("apps", "v1", "ControllerRevision", "controllerrevisions", True),
    ResourceType(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        True,
        short_names=("deploy",),
        categories=("all",),
        subresources=(_STATUS, _SCALE),
    ),
    ResourceType(
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        True,
        short_names=("rs",),
        categories=("all",),
        subresources=(_STATUS, _SCALE),
    ),
    ResourceType(
        "apps",
        "v1",
        "DaemonSet",
        "daemonsets",
        True,
        short_names=("ds",),
        categories=("all",),
        subresources=(_STATUS,),
    ),
    # The reviews: asked, answered, never stored (pkg/registry/authentication and
    # pkg/registry/authorization); served as create-only resources.
    *(
        ResourceType(
            group, "v1", kind, kind.lower() + "s", kind.startswith("Local"), verbs=("create",)
        )
        for group, kind in (
            ("authentication.k8s.io", "SelfSubjectReview"),
            ("authentication.k8s.io", "TokenReview"),
            ("authorization.k8s.io", "LocalSubjectAccessReview"),
            ("authorization.k8s.io", "SelfSubjectAccessReview"),
            ("authorization.k8s.io", "SelfSubjectRulesReview"),
            ("authorization.k8s.io", "SubjectAccessReview"),
        )
    ),
    ResourceType(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        True,
        short_names=("pdb",),
        subresources=(_STATUS,),
    ),
    ResourceType("rbac.authorization.k8s.io", "v1", "Role", "roles", True),
    ResourceType("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True),
    ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    ResourceType(
        "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False
    ),
    ResourceType(
        "resource.k8s.io",
        "v1",
        "DeviceClass",
        "deviceclasses",
        False,
        return_deleted_object=True,
    ),
    ResourceType(
        "resource.k8s.io",
        "v1",
        "ResourceSlice",
        "resourceslices",
        False,
        return_deleted_object=True,
    ),
    ResourceType(
        "resource.k8s.io",
        "v1",
        "ResourceClaim",
        "resourceclaims",
        True,
        subresources=(_STATUS,),
        return_deleted_object=True,
    ),
    ResourceType(
        "resource.k8s.io",
        "v1",
        "ResourceClaimTemplate",
        "resourceclaimtemplates",
        True,
        return_deleted_object=True,
    ),
    # Upstream's NewRESTLegacy: versions before v1 return the deleted rule, v1 a Status.
    ResourceType(
        "resource.k8s.io",
        "v1alpha3",
        "DeviceTaintRule",
        "devicetaintrules",
        False,
        subresources=(_STATUS,),
        preferred=False,
        return_deleted_object=True,
    ),
)


@dataclass(frozen=True)
class Scheme:
    types: tuple[ResourceType, ...]
    _by_path: dict[tuple[str, str, str], ResourceType] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        index = {(t.group, t.version, t.plural): t for t in self.types}
        if len(index) != len(self.types):
            raise ValueError("a resource is registered twice")
        object.__setattr__(self, "_by_path", index)

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(self.types)

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_path.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        for t in self.types:
            if t.api_version == api_version and t.kind == kind:
                return t
        return None

    def groups(self) -> list[str]:
        """Non-core groups in a stable order (the order of first registration)."""
        seen: list[str] = []
        for t in self.types:
            if t.group and t.group not in seen:
                seen.append(t.group)
        return seen

    def versions(self, group: str) -> list[str]:
        """A group's versions, preferred first."""
        ordered: list[str] = []
        for preferred in (True, False):
            for t in self.types:
                if t.group == group and t.preferred is preferred and t.version not in ordered:
                    ordered.append(t.version)
        return ordered

    def resources(self, group: str, version: str) -> list[ResourceType]:
        return [t for t in self.types if t.group == group and t.version == version]

    def group_versions(self) -> set[tuple[str, str]]:
        return {(t.group, t.version) for t in self.types}

    def without(self, group: str, plural: str) -> Scheme:
        """The scheme minus a resource (every version), for APIs a feature gate turns off."""
        return Scheme(tuple(t for t in self.types if (t.group, t.plural) != (group, plural)))


SCHEME = Scheme(RESOURCE_TYPES)
