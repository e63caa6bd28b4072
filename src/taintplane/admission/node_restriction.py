"""NodeRestriction: what a kubelet (user ``system:node:NAME`` in ``system:nodes``) may write,
with upstream's messages (plugin/pkg/admission/noderestriction).

Its own Node only (and not its taints, its ownerReferences, nor labels outside the kubelet's
set, nor any ``node-restriction.kubernetes.io/`` label), its own Lease in ``kube-node-lease``,
the status of pods bound to it (not their labels nor resource claim statuses), deletion and
eviction of pods bound to it, creation of mirror pods only (bound to itself, owned as
controller by its Node of the current uid, referring to no other API object), and the
ResourceSlices of its own ``spec.nodeName``. Reads are the Node authorizer's (apiserver/auth).
"""

from __future__ import annotations

from typing import Any

from taintplane.admission.chain import Attributes, Forbidden, Lookup, NotFound, UserInfo
from taintplane.admission.pod_references import (
    references_configmaps,
    references_secrets,
)
from taintplane.api.decoding import DecodeError
from taintplane.api.taints import Taint

__all__ = ["NodeRestriction", "identify", "node_identity", "node_may_set_label"]

NODES_GROUP = "system:nodes"
NODE_PREFIX = "system:node:"
NODE_LEASE_NAMESPACE = "kube-node-lease"
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
_KUBELET_LABELS = frozenset(
    {
        "kubernetes.io/hostname",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "failure-domain.beta.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/zone",
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/os",
    }
)
_KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")


def node_identity(attributes: Attributes) -> tuple[str, bool]:
    """(node name, is a node), as upstream's default NodeIdentifier reads the user."""
    return identify(attributes.user)


def identify(user: UserInfo | None) -> tuple[str, bool]:
    """(node name, is a node) of a user: ``system:node:NAME`` in ``system:nodes``."""
    if user is None or NODES_GROUP not in user.groups:
        return "", False
    if not user.name.startswith(NODE_PREFIX):
        return "", False
    return user.name[len(NODE_PREFIX) :], True


def _name(obj: dict[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("name") or "")


def _claim_statuses(pod: dict[str, Any]) -> list[tuple[Any, Any]]:
    statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or []
    return [(s.get("name"), s.get("resourceClaimName")) for s in statuses if isinstance(s, dict)]


def _label_namespace(key: str) -> str:
    prefix, sep, _ = key.partition("/")
    return prefix if sep else ""


def _in(namespace: str, parent: str) -> bool:
    return namespace == parent or namespace.endswith("." + parent)


def _kubelet_label(key: str) -> bool:
    namespace = _label_namespace(key)
    return key in _KUBELET_LABELS or any(_in(namespace, n) for n in _KUBELET_LABEL_NAMESPACES)


def _forbidden_labels(new: dict[str, str], old: dict[str, str]) -> list[str]:
    modified = {k for k in new.keys() | old.keys() if new.get(k) != old.get(k)}
    forbidden = set()
    for key in modified:
        namespace = _label_namespace(key)
        if _in(namespace, "node-restriction.kubernetes.io"):
            forbidden.add(key)
        kubernetes = _in(namespace, "kubernetes.io") or _in(namespace, "k8s.io")
        if kubernetes and not _kubelet_label(key):
            forbidden.add(key)
    return sorted(forbidden)


def node_may_set_label(key: str) -> bool:
    """Whether NodeRestriction lets a node add, change or remove this label on itself."""
    return not _forbidden_labels({key: ""}, {})


class NodeRestriction:
    name = "NodeRestriction"

    def __init__(self, lookup: Lookup) -> None:
        self.lookup = lookup

    async def admit(self, attributes: Attributes) -> None:
        node, is_node = node_identity(attributes)
        if not is_node:
            return
        user = attributes.user
        assert user is not None
        if not node:
            raise Forbidden(f'could not determine node from user "{user.name}"')
        resource = attributes.resource
        if resource.group == "" and resource.plural == "pods":
            if attributes.operation == "CREATE" and not attributes.subresource:
                await self._mirror_pod(node, attributes.obj or {})
                return
            if attributes.subresource == "eviction":
                await self._eviction(node, attributes)
                return
            self._pod(node, attributes)
        elif resource.group == "" and resource.plural == "nodes":
            self._node(node, attributes)
        elif resource.group == "coordination.k8s.io" and resource.plural == "leases":
            self._lease(node, attributes)
        elif resource.group == "resource.k8s.io" and resource.plural == "resourceslices":
            self._resource_slice(node, attributes)

    @staticmethod
    def _pod(node: str, a: Attributes) -> None:
        if a.subresource == "status":
            if a.operation != "UPDATE":
                raise Forbidden(f'unexpected operation "{a.operation}"')
            old, new = a.old or {}, a.obj or {}
            if (old.get("spec") or {}).get("nodeName") != node:
                raise Forbidden(
                    f'node "{node}" can only update pod status for pods with spec.nodeName '
                    "set to itself"
                )
            labels = [(o.get("metadata") or {}).get("labels") or {} for o in (old, new)]
            if labels[0] != labels[1]:
                raise Forbidden(f'node "{node}" cannot update labels through pod status')
            claims = [_claim_statuses(o) for o in (old, new)]
            if claims[0] != claims[1]:
                # Upstream's spelling. The statuses name the claims the node may read.
                raise Forbidden(f'node "{node}" cannot update resource claim statues')
            return
        if a.subresource not in ("", "eviction"):
            raise Forbidden(
                f"unexpected pod subresource \"{a.subresource}\", only 'status' and "
                "'eviction' are allowed"
            )
        if a.operation == "DELETE":
            if ((a.old or {}).get("spec") or {}).get("nodeName") != node:
                raise Forbidden(
                    f'node "{node}" can only delete pods with spec.nodeName set to itself'
                )
            return
        raise Forbidden(
            f'unexpected operation "{a.operation}", node "{node}" can only create and delete '
            "mirror pods"
        )

    async def _eviction(self, node: str, a: Attributes) -> None:
        """admitPodEviction: only pods bound to this node."""
        if a.operation != "CREATE":
            raise Forbidden(f"unexpected operation {a.operation}")
        name = _name(a.obj) or _name(a.old)
        if not name:
            raise Forbidden("could not determine pod from request data")
        pod = await self.lookup.get("v1", "Pod", name, a.namespace)
        if pod is None:
            raise NotFound("pods", name)
        if (pod.get("spec") or {}).get("nodeName") != node:
            raise Forbidden(f"node {node} can only evict pods with spec.nodeName set to itself")

    async def _mirror_pod(self, node: str, pod: dict[str, Any]) -> None:
        """Upstream's admitPodCreate."""
        metadata = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        if MIRROR_POD_ANNOTATION not in (metadata.get("annotations") or {}):
            raise Forbidden(
                f'pod does not have "{MIRROR_POD_ANNOTATION}" annotation, node "{node}" '
                "can only create mirror pods"
            )
        if spec.get("nodeName") != node:
            raise Forbidden(f'node "{node}" can only create pods with spec.nodeName set to itself')
        await self._check_owner(node, metadata.get("ownerReferences") or [])
        # A mirror pod may refer to no other API object: the node could read it through the
        # pod (the kubelet's static pods are files on the node and need none).
        if spec.get("serviceAccountName"):
            raise Forbidden(f'node "{node}" can not create pods that reference a service account')
        if references_secrets(spec):
            raise Forbidden(f'node "{node}" can not create pods that reference secrets')
        if references_configmaps(spec):
            raise Forbidden(f'node "{node}" can not create pods that reference configmaps')
        volumes = [v for v in spec.get("volumes") or [] if isinstance(v, dict)]
        for volume in volumes:
            sources = (volume.get("projected") or {}).get("sources") or []
            if any(
                isinstance(s, dict) and s.get("clusterTrustBundle") is not None for s in sources
            ):
                raise Forbidden(
                    f'node "{node}" can not create pods that reference clustertrustbundles'
                )
        if any(volume.get("persistentVolumeClaim") is not None for volume in volumes):
            raise Forbidden(
                f'node "{node}" can not create pods that reference persistentvolumeclaims'
            )

    async def _check_owner(self, node: str, owners: list[Any]) -> None:
        """The mirror pod's one owner is the node, as the kubelet sets it: the garbage
        collector then deletes it with the Node (and only then)."""
        if len(owners) > 1:
            raise Forbidden(
                f'node "{node}" can only create pods with a single owner reference set to itself'
            )
        owner = owners[0] if owners and isinstance(owners[0], dict) else None
        if owner is None or (owner.get("apiVersion"), owner.get("kind"), owner.get("name")) != (
            "v1",
            "Node",
            node,
        ):
            raise Forbidden(
                f'node "{node}" can only create pods with an owner reference set to itself'
            )
        if owner.get("controller") is not True:
            raise Forbidden(
                f'node "{node}" can only create pods with a controller owner reference set to '
                "itself"
            )
        if owner.get("blockOwnerDeletion") is True:
            raise Forbidden(f'node "{node}" must not set blockOwnerDeletion on an owner reference')
        found = await self.lookup.get("v1", "Node", node)
        if found is None:
            raise NotFound("nodes", node)
        uid = str((found.get("metadata") or {}).get("uid") or "")
        if owner.get("uid", "") != uid:
            # Upstream's wording: "expected" is the reference's uid, "got" the Node's.
            raise Forbidden(f"node {node} UID mismatch: expected {owner.get('uid', '')} got {uid}")

    @staticmethod
    def _node(node: str, a: Attributes) -> None:
        requested = _name(a.obj if a.operation == "CREATE" else a.old or a.obj)
        if requested != node:
            raise Forbidden(f'node "{node}" is not allowed to modify node "{requested}"')
        new_meta = (a.obj or {}).get("metadata") or {}
        if a.operation == "CREATE":
            if ((a.obj or {}).get("spec") or {}).get("configSource") is not None:
                raise Forbidden(
                    f'node "{node}" is not allowed to create pods with a non-nil configSource'
                )
            bad = _forbidden_labels(new_meta.get("labels") or {}, {})
            if bad:
                raise Forbidden(
                    f'node "{node}" is not allowed to set the following labels: ' + ", ".join(bad)
                )
        if a.operation == "UPDATE":
            new_spec = (a.obj or {}).get("spec") or {}
            old_spec = (a.old or {}).get("spec") or {}
            source = new_spec.get("configSource")
            if source is not None and source != old_spec.get("configSource"):
                raise Forbidden(
                    f'node "{node}" is not allowed to update configSource to a new non-nil '
                    "configSource"
                )
            if not _same_taints(new_spec.get("taints"), old_spec.get("taints")):
                raise Forbidden(f'node "{node}" is not allowed to modify taints')
            # CVE-2025-5187: an owner reference to a missing object would have the garbage
            # collector delete the Node, which the node could then register anew with taints
            # and labels of its choosing. (Creating the Node with owner references is allowed.)
            old_owners = ((a.old or {}).get("metadata") or {}).get("ownerReferences") or []
            if (new_meta.get("ownerReferences") or []) != old_owners:
                raise Forbidden(f'node "{node}" is not allowed to modify ownerReferences')
            old_labels = ((a.old or {}).get("metadata") or {}).get("labels") or {}
            bad = _forbidden_labels(new_meta.get("labels") or {}, old_labels)
            if bad:
                raise Forbidden("is not allowed to modify labels: " + ", ".join(bad))

    @staticmethod
    def _resource_slice(node: str, a: Attributes) -> None:
        """The Node authorizer cannot see a create's body nor each object of a
        deletecollection: the slice must be this node's."""
        for operation, obj, verb in (("CREATE", a.obj, "create"), ("DELETE", a.old, "delete")):
            if a.operation == operation and ((obj or {}).get("spec") or {}).get("nodeName") != node:
                raise Forbidden(
                    f"can only {verb} ResourceSlice with the same NodeName as the requesting node"
                )

    @staticmethod
    def _lease(node: str, a: Attributes) -> None:
        if a.namespace != NODE_LEASE_NAMESPACE:
            raise Forbidden(
                f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace'
            )
        name = _name(a.obj if a.operation == "CREATE" else a.old or a.obj)
        if name != node:
            raise Forbidden("can only access node lease with the same name as the requesting node")


def _same_taints(new: object, old: object) -> bool:
    """``Semantic.DeepEqual`` of the decoded taints: an empty value spelled out, or a
    timeAdded written another way for the same instant, is no change."""
    first, second = new or [], old or []
    if not isinstance(first, list) or not isinstance(second, list):
        return first == second
    try:
        return [Taint.from_dict(t) for t in first] == [Taint.from_dict(t) for t in second]
    except DecodeError:
        return first == second
