"""The Node authorizer (plugin/pkg/auth/authorizer/node), first in kube-apiserver's
``--authorization-mode=Node,RBAC``: what a kubelet (user ``system:node:NAME`` in group
``system:nodes``) may read and write, with upstream's reasons.

Its own Node (read by name; ``list``/``watch`` only with ``metadata.name=NAME``), the pods bound
to it (``get`` by name, ``list``/``watch`` only with ``fieldSelector=spec.nodeName=NAME``), what
those pods name (Secrets, ConfigMaps, PVCs, the service account's token, ResourceClaims), its
Lease in ``kube-node-lease``, its CSINode, the ResourceSlices whose ``spec.nodeName`` is it,
and NodeRules (node status, events, mirror pods, pod status and evictions, which
NodeRestriction admission narrows). Everything else is no opinion, left to RBAC, which binds
``system:node`` to nobody (as upstream since 1.8).

Upstream answers "is this object related to this node" from a graph its informers keep. Here
a pod and a ResourceSlice are read by name when asked for (a pod is in the graph from when it
is bound until it is deleted, a slice while its ``spec.nodeName`` is the node); what pods
name comes from ``node_graph.py``, an index of pods by node kept from a watch.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

from taintplane.admission.node_restriction import NODE_LEASE_NAMESPACE, identify
from taintplane.admission.pod_references import configmap_names, secret_names
from taintplane.api.gofmt import go_quote
from taintplane.api.scheme import ResourceType, Scheme
from taintplane.api.selectors import (
    FieldRequirement,
    FieldSelector,
    SelectorError,
    parse_field_selector,
)
from taintplane.apiserver.auth.attributes import Request
from taintplane.apiserver.auth.node_graph import NodeGraph
from taintplane.apiserver.auth.policy import NODE_RULES
from taintplane.apiserver.auth.rbac import Decision
from taintplane.apiserver.auth.rules import rule_allows
from taintplane.apiserver.registry import Registry
from taintplane.apiserver.status import APIError

__all__ = ["NodeAuthorizer"]

log = logging.getLogger(__name__)

MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
NO_OPINION = Decision(False)
ALLOW = Decision(True)

_POD_WRITES = (("status", "update"), ("status", "patch"), ("eviction", "create"))

Check = Callable[[str, Request], Awaitable[Decision]]


def _field_equals(request: Request, field: str, value: str) -> bool:
    """A ``field=value`` (or ``==``) term among the request's field selector (upstream's
    ``attrs.GetFieldSelector()``: an unparsable selector has no terms)."""
    try:
        selector = parse_field_selector(request.field_selector)
    except SelectorError:
        return False
    return any(
        r.field == field and not r.negated and r.value == value for r in selector.requirements
    )


def _claim_names(pod: Mapping[str, Any]) -> Iterator[str]:
    """The ResourceClaims the pod uses (resourceclaim.Name): named ones, those made from a
    template as its status records them, and its extended-resource claim."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    statuses = {
        s.get("name"): s for s in status.get("resourceClaimStatuses") or [] if isinstance(s, dict)
    }
    for claim in spec.get("resourceClaims") or []:
        if not isinstance(claim, dict):
            continue
        if claim.get("resourceClaimName"):
            yield str(claim["resourceClaimName"])
        elif claim.get("resourceClaimTemplateName"):
            made = statuses.get(claim.get("name"))
            if made is not None and made.get("resourceClaimName"):
                yield str(made["resourceClaimName"])
    extended = status.get("extendedResourceClaimStatus") or {}
    if isinstance(extended, dict) and extended.get("resourceClaimName"):
        yield str(extended["resourceClaimName"])


def _pvc_names(pod: Mapping[str, Any]) -> Iterator[str]:
    name = str((pod.get("metadata") or {}).get("name") or "")
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        if not isinstance(volume, dict):
            continue
        claim = volume.get("persistentVolumeClaim")
        if isinstance(claim, dict):
            yield str(claim.get("claimName") or "")
        elif volume.get("ephemeral") is not None:
            yield f"{name}-{volume.get('name', '')}"  # ephemeral.VolumeClaimName


def _service_account(pod: Mapping[str, Any]) -> Iterator[str]:
    account = (pod.get("spec") or {}).get("serviceAccountName")
    if account:
        yield str(account)


#: What a pod relates to its node, by the resource a node asks for (the graph's edges).
_REFERENCES: dict[str, Callable[[Mapping[str, Any]], Iterator[str]]] = {
    "secrets": lambda pod: secret_names(pod.get("spec") or {}),
    "configmaps": lambda pod: configmap_names(pod.get("spec") or {}),
    "persistentvolumeclaims": _pvc_names,
    "resourceclaims": _claim_names,
    "serviceaccounts": _service_account,
}
_KIND_NAMES = {
    "secrets": "secret",
    "configmaps": "configmap",
    "persistentvolumeclaims": "pvc",
    "persistentvolumes": "pv",
    "resourceclaims": "resourceclaim",
    "volumeattachments": "volumeattachment",
    "serviceaccounts": "serviceAccount",
    "pods": "pod",
    "resourceslices": "resourceslice",
}


class NodeAuthorizer:
    def __init__(self, registry: Registry, scheme: Scheme) -> None:
        self.registry = registry
        pods = scheme.by_kind("v1", "Pod")
        assert pods is not None
        self.pods: ResourceType = pods
        self.slices = scheme.by_kind("resource.k8s.io/v1", "ResourceSlice")
        self.graph = NodeGraph(registry, _REFERENCES)
        self._checks: dict[tuple[str, str], Check] = {
            ("", "secrets"): self._read_namespaced,
            ("", "configmaps"): self._read_namespaced,
            ("", "persistentvolumeclaims"): self._pvc,
            ("", "persistentvolumes"): self._get,
            ("resource.k8s.io", "resourceclaims"): self._get,
            ("storage.k8s.io", "volumeattachments"): self._get,
            ("", "serviceaccounts"): self._token,
            ("coordination.k8s.io", "leases"): self._lease,
            ("storage.k8s.io", "csinodes"): self._csinode,
            ("resource.k8s.io", "resourceslices"): self._resource_slice,
            ("", "nodes"): self._node,
            ("", "pods"): self._pod,
        }

    async def authorize(self, request: Request) -> Decision:
        node, is_node = identify(request.user)
        if not is_node:
            return NO_OPINION
        if not node:
            return Decision(False, f"unknown node for user {go_quote(request.user.name)}")
        if request.resource_request:
            check = self._checks.get((request.api_group, request.resource))
            if check is not None:
                return await check(node, request)
        # Other resources are not subdivided: the same static rules for every node.
        if any(rule_allows(rule, request) for rule in NODE_RULES):
            return ALLOW
        return NO_OPINION

    # ---- checks by resource, as upstream's authorizeX -----------------------------------------

    async def _read_namespaced(self, node: str, r: Request) -> Decision:
        if r.verb not in ("get", "list", "watch"):
            return Decision(False, "can only read resources of this type")
        if r.subresource:
            return Decision(False, "cannot read subresource")
        if not r.namespace:
            return Decision(False, "can only read namespaced object of this type")
        return await self._related(node, r)

    async def _pvc(self, node: str, r: Request) -> Decision:
        if r.subresource == "status":
            if r.verb not in ("update", "patch"):
                return Decision(False, "can only get/update/patch this type")
            return await self._related(node, r)
        return await self._get(node, r)

    async def _get(self, node: str, r: Request) -> Decision:
        if r.verb != "get":
            return Decision(False, "can only get individual resources of this type")
        if r.subresource:
            return Decision(False, "cannot get subresource")
        return await self._related(node, r)

    async def _token(self, node: str, r: Request) -> Decision:
        if r.verb != "create" or not r.name:
            return Decision(False, "can only create tokens for individual service accounts")
        if r.subresource != "token":
            return Decision(False, "can only create token subresource of serviceaccount")
        return await self._related(node, r)

    async def _lease(self, node: str, r: Request) -> Decision:
        if r.verb not in ("get", "create", "update", "patch", "delete"):
            return Decision(False, "can only get, create, update, patch, or delete a node lease")
        if r.namespace != NODE_LEASE_NAMESPACE:
            return Decision(
                False, f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace'
            )
        # The name of a create is in the body: NodeRestriction checks it.
        if r.verb != "create" and r.name != node:
            return Decision(
                False, "can only access node lease with the same name as the requesting node"
            )
        return ALLOW

    async def _csinode(self, node: str, r: Request) -> Decision:
        if r.verb not in ("get", "create", "update", "patch", "delete"):
            return Decision(False, "can only get, create, update, patch, or delete a CSINode")
        if r.subresource:
            return Decision(False, "cannot authorize CSINode subresources")
        if r.verb != "create" and r.name != node:
            return Decision(
                False, "can only access CSINode with the same name as the requesting node"
            )
        return ALLOW

    async def _resource_slice(self, node: str, r: Request) -> Decision:
        if r.subresource:
            return Decision(False, "cannot authorize ResourceSlice subresources")
        if r.verb == "create":
            return ALLOW  # NodeRestriction checks spec.nodeName
        if r.verb in ("get", "update", "patch", "delete"):
            return await self._related(node, r)
        if r.verb in ("watch", "list", "deletecollection"):
            if _field_equals(r, "spec.nodeName", node):
                return ALLOW
            return Decision(
                False,
                "can only list/watch/deletecollection resourceslices with nodeName field selector",
            )
        return Decision(
            False,
            "only the following verbs are allowed for a ResourceSlice: get, watch, list, create, "
            "update, patch, delete, deletecollection",
        )

    async def _node(self, node: str, r: Request) -> Decision:
        if not r.subresource:
            if r.verb in ("create", "update", "patch"):
                return ALLOW  # NodeRestriction: only its own Node
            if r.verb in ("get", "list", "watch"):
                # By name, not through the graph: a kubelet reads its Node before creating it.
                if r.name == node:
                    return ALLOW
                if not r.name:
                    return Decision(
                        False, f"node '{node}' cannot read all nodes, only its own Node object"
                    )
                return Decision(
                    False, f"node '{node}' cannot read '{r.name}', only its own Node object"
                )
        elif r.subresource == "status" and r.verb in ("update", "patch"):
            return ALLOW
        return NO_OPINION

    async def _pod(self, node: str, r: Request) -> Decision:
        if not r.subresource:
            if r.verb == "get":
                return await self._get(node, r)
            if r.verb in ("list", "watch"):
                if _field_equals(r, "spec.nodeName", node):
                    return ALLOW
                if r.name:
                    return await self._related(node, r)
                return Decision(False, "can only list/watch pods with spec.nodeName field selector")
            if r.verb in ("create", "delete"):
                return ALLOW  # mirror pods, which NodeRestriction limits to this node
        elif (r.subresource, r.verb) in _POD_WRITES:
            return ALLOW  # NodeRestriction: only pods bound to this node
        return NO_OPINION

    # ---- the relation (upstream's graph) -----------------------------------------------------

    async def _related(self, node: str, r: Request) -> Decision:
        if not r.name:
            return Decision(False, "No Object name found")
        problem = await self._path_problem(node, r.resource, r.namespace, r.name)
        if problem:
            log.debug("NODE DENY: %s", problem)
            return Decision(False, f"no relationship found between node '{node}' and this object")
        return ALLOW

    async def _path_problem(self, node: str, resource: str, namespace: str, name: str) -> str:
        """Why no path leads from the object to the node (upstream's hasPathFrom error, which
        it logs but does not return), or "" when one does."""
        kind = _KIND_NAMES.get(resource, resource)
        unknown = f"node '{node}' cannot get unknown {kind} {namespace}/{name}"
        if resource == "pods":
            pod = await self._read(self.pods, namespace, name)
            if pod is None or not (pod.get("spec") or {}).get("nodeName"):
                return unknown
            bound = (pod.get("spec") or {}).get("nodeName")
            return "" if bound == node else self._unrelated(node, kind, namespace, name)
        if resource == "resourceslices":
            found = await self._read(self.slices, "", name) if self.slices else None
            if found is None or not (found.get("spec") or {}).get("nodeName"):
                return unknown
            bound = (found.get("spec") or {}).get("nodeName")
            return "" if bound == node else self._unrelated(node, kind, namespace, name)
        references = _REFERENCES.get(resource)
        if references is None:  # PersistentVolumes, VolumeAttachments: taintplane has none
            return unknown
        named = await self.graph.pods_on(node, namespace)
        if named is not None:
            if any(name in refs.get(resource, ()) for refs in named):
                return ""
            return self._unrelated(node, kind, namespace, name)
        # No index (its watch just failed): read the namespace's pods on the node.
        selector = FieldSelector((FieldRequirement("spec.nodeName", node),))
        pods = (await self.registry.list(self.pods, namespace, fields=selector)).items
        for pod in pods:
            annotations = (pod.get("metadata") or {}).get("annotations") or {}
            # A mirror pod relates only itself: a node must not grant itself other objects.
            if MIRROR_POD_ANNOTATION not in annotations and name in references(pod):
                return ""
        return self._unrelated(node, kind, namespace, name)

    @staticmethod
    def _unrelated(node: str, kind: str, namespace: str, name: str) -> str:
        return (
            f"node '{node}' cannot get {kind} {namespace}/{name}, no relationship to this "
            "object was found in the node authorizer graph"
        )

    async def _read(
        self, resource: ResourceType, namespace: str, name: str
    ) -> dict[str, Any] | None:
        try:
            return await self.registry.get(resource, namespace, name)
        except APIError as error:
            if error.code == 404:
                return None
            raise
