"""ExtendedResourceToleration: a pod that requests an extended resource tolerates the taint
named after it, so nodes tainted ``example.com/gpu:NoSchedule`` keep everything else away.

As upstream's plugin (``plugin/pkg/admission/extendedresourcetoleration``), on pod create and
update (not subresources): for every extended resource requested by a container or init
container, in sorted order, ``{key: <resource>, operator: Exists, effect: NoSchedule}`` is added
with ``AddOrUpdateTolerationInPod`` (an identical toleration is left alone).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taintplane.admission.chain import Attributes
from taintplane.api import names
from taintplane.api.toleration_algebra import add_or_update
from taintplane.api.tolerations import Toleration, tolerations_to_list

__all__ = ["PLUGIN_NAME", "ExtendedResourceToleration", "is_extended_resource_name"]

PLUGIN_NAME = "ExtendedResourceToleration"
_REQUESTS_PREFIX = "requests."
_NATIVE_PREFIX = "kubernetes.io/"


def is_extended_resource_name(name: str) -> bool:
    """``helper.IsExtendedResourceName``: a domain-prefixed name outside ``kubernetes.io/``
    that would still be a qualified name as a quota name (``requests.<name>``)."""
    if "/" not in name or _NATIVE_PREFIX in name or name.startswith(_REQUESTS_PREFIX):
        return False
    return not names.is_qualified_name(_REQUESTS_PREFIX + name)


def requested_extended_resources(spec: Mapping[str, Any]) -> list[str]:
    found: set[str] = set()
    for kind in ("containers", "initContainers"):
        for container in spec.get(kind) or []:
            if not isinstance(container, Mapping):
                continue
            requests = (container.get("resources") or {}).get("requests") or {}
            found.update(name for name in requests if is_extended_resource_name(str(name)))
    return sorted(found)


class ExtendedResourceToleration:
    name = PLUGIN_NAME

    async def admit(self, attributes: Attributes) -> None:
        pod = attributes.obj
        if attributes.operation not in ("CREATE", "UPDATE") or not attributes.is_pod():
            return
        if not isinstance(pod, dict):
            return
        spec = pod.setdefault("spec", {})
        resources = requested_extended_resources(spec)
        if not resources:
            return
        tolerations = [
            Toleration.from_dict(item)
            for item in spec.get("tolerations") or []
            if isinstance(item, Mapping)
        ]
        changed = False
        for resource in resources:
            wanted = Toleration(key=resource, operator="Exists", effect="NoSchedule")
            tolerations, updated = add_or_update(tolerations, wanted)
            changed = changed or updated
        if changed:
            spec["tolerations"] = tolerations_to_list(tolerations)
