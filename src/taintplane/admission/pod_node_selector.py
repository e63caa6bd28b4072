"""PodNodeSelector: a namespace's node selector, merged into its pods ("binding a user to a
node"), and a per-namespace whitelist of the node labels its pods may select.

As upstream's plugin (``plugin/pkg/admission/podnodeselector``), on pod create only (not
subresources): the namespace annotation ``scheduler.alpha.kubernetes.io/node-selector``
(``k1=v1,k2=v2``; present but empty means none), else the configuration's
``clusterDefaultNodeSelector``, is merged into ``spec.nodeSelector``; a pod selecting a
different value for one of its keys is refused. Validation then checks the pod's selector
against the whitelist the configuration gives its namespace (by name; none allows all).

The configuration is upstream's unversioned file::

    podNodeSelectorPluginConfig:
      clusterDefaultNodeSelector: env=prod
      team-a: env=prod,team=a      # the whitelist of namespace team-a
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taintplane.admission.chain import Attributes, Forbidden, Lookup, NotFound, Rejected
from taintplane.admission.label_sets import (
    LabelMapError,
    are_labels_in_whitelist,
    conflicts,
    merge,
    parse_labels_map,
)

__all__ = [
    "CLUSTER_DEFAULT_NODE_SELECTOR",
    "NAMESPACE_NODE_SELECTOR",
    "PLUGIN_NAME",
    "PodNodeSelector",
    "load_configuration",
]

PLUGIN_NAME = "PodNodeSelector"
NAMESPACE_NODE_SELECTOR = "scheduler.alpha.kubernetes.io/node-selector"
CLUSTER_DEFAULT_NODE_SELECTOR = "clusterDefaultNodeSelector"
CONFLICT_MESSAGE = "pod node label selector conflicts with its namespace node label selector"
WHITELIST_MESSAGE = "pod node label selector labels conflict with its namespace whitelist"
_CONFIG_KEY = "podNodeSelectorPluginConfig"


def load_configuration(obj: Mapping[str, Any] | None) -> dict[str, str]:
    """The ``podNodeSelectorPluginConfig`` map (keys matched case-insensitively, as Go's JSON
    decoder does). Unlike upstream, which ignores what it cannot decode and fails only when a
    pod is admitted, a malformed map or selector is an error here, at start-up."""
    if obj is None:
        return {}
    found = next((v for k, v in obj.items() if str(k).lower() == _CONFIG_KEY.lower()), None)
    if found is None:
        return {}
    if not isinstance(found, Mapping):
        raise ValueError(
            f"{_CONFIG_KEY} must map namespaces (or {CLUSTER_DEFAULT_NODE_SELECTOR}) to "
            "node selectors"
        )
    selectors: dict[str, str] = {}
    for name, selector in found.items():
        if selector is None:
            selector = ""
        if not isinstance(selector, str | int | float) or isinstance(selector, bool):
            raise ValueError(f"{_CONFIG_KEY}.{name}: want a selector string like k1=v1,k2=v2")
        try:
            parse_labels_map(str(selector))
        except LabelMapError as error:
            raise ValueError(f"{_CONFIG_KEY}.{name}: {error}") from error
        selectors[str(name)] = str(selector)
    return selectors


def _pod_name(pod: dict[str, Any]) -> str:
    """Upstream refuses with errors.NewForbidden and pod.Name, not admission.NewForbidden: no
    fallback to generateName, so an unnamed pod is refused as ``pods is forbidden: ...``."""
    return str((pod.get("metadata") or {}).get("name") or "")


class PodNodeSelector:
    name = PLUGIN_NAME

    def __init__(self, lookup: Lookup, cluster_node_selectors: Mapping[str, str] | None = None):
        self.lookup = lookup
        self.cluster_node_selectors = dict(cluster_node_selectors or {})

    @staticmethod
    def _handles(attributes: Attributes) -> bool:
        return (
            attributes.operation == "CREATE"
            and attributes.is_pod()
            and isinstance(attributes.obj, dict)
        )

    async def admit(self, attributes: Attributes) -> None:
        if not self._handles(attributes):
            return
        pod = attributes.obj
        assert pod is not None
        spec = pod.setdefault("spec", {})
        namespace_selector = await self._namespace_selector(attributes.namespace)
        pod_selector = dict(spec.get("nodeSelector") or {})
        if conflicts(namespace_selector, pod_selector):
            raise Forbidden(CONFLICT_MESSAGE, name=_pod_name(pod))
        merged = merge(namespace_selector, pod_selector)
        if merged:
            spec["nodeSelector"] = merged
        else:
            spec.pop("nodeSelector", None)
        await self.validate(attributes)

    async def validate(self, attributes: Attributes) -> None:
        if not self._handles(attributes):
            return
        pod = attributes.obj
        assert pod is not None
        pod_selector = dict((pod.get("spec") or {}).get("nodeSelector") or {})
        if conflicts(await self._namespace_selector(attributes.namespace), pod_selector):
            raise Forbidden(CONFLICT_MESSAGE, name=_pod_name(pod))
        whitelist = _parse(self.cluster_node_selectors.get(attributes.namespace, ""))
        if not are_labels_in_whitelist(pod_selector, whitelist):
            raise Forbidden(WHITELIST_MESSAGE, name=_pod_name(pod))

    async def _namespace_selector(self, namespace: str) -> dict[str, str]:
        """``getNodeSelectorMap``: the annotation if present, else the cluster default."""
        ns = await self.lookup.get("v1", "Namespace", namespace)
        if ns is None:
            # Upstream returns the client's NotFound (404) when the namespace is gone.
            raise NotFound("namespaces", namespace)
        annotations = (ns.get("metadata") or {}).get("annotations") or {}
        if NAMESPACE_NODE_SELECTOR in annotations:
            return _parse(annotations[NAMESPACE_NODE_SELECTOR])
        return _parse(self.cluster_node_selectors.get(CLUSTER_DEFAULT_NODE_SELECTOR, ""))


def _parse(selector: str) -> dict[str, str]:
    try:
        return parse_labels_map(selector)
    except LabelMapError as error:
        raise Rejected(str(error)) from error
