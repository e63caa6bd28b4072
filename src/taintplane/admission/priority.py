"""Priority: resolves a pod's ``priorityClassName`` into ``spec.priority`` and
``spec.preemptionPolicy``, and keeps a single ``globalDefault`` PriorityClass.

As upstream's plugin: a pod without a class name gets the global default class (its name,
value and policy), or priority 0 and ``PreemptLowerPriority`` when there is none. A pod naming
a class that does not exist, or carrying a priority that differs from its class's value, is
refused. Updates keep the priority the pod was admitted with.
"""

from __future__ import annotations

from typing import Any

from taintplane.admission.chain import Attributes, Forbidden, Lookup

__all__ = [
    "DEFAULT_PREEMPTION_POLICY",
    "HIGHEST_USER_DEFINABLE_PRIORITY",
    "SYSTEM_PRIORITY_CLASSES",
    "Priority",
]

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
DEFAULT_PREEMPTION_POLICY = "PreemptLowerPriority"
SYSTEM_PRIORITY_CLASSES: dict[str, tuple[int, str]] = {
    "system-node-critical": (
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    "system-cluster-critical": (
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to "
        "another node if necessary.",
    ),
}
_API_VERSION = "scheduling.k8s.io/v1"
_KIND = "PriorityClass"


class Priority:
    name = "Priority"

    def __init__(self, lookup: Lookup) -> None:
        self.lookup = lookup

    async def admit(self, attributes: Attributes) -> None:
        if attributes.subresource:
            # As upstream: subresources (pods/status, pods/eviction, ...) are not admitted.
            return
        resource = attributes.resource
        if resource.group == "" and resource.kind == "Pod":
            await self._admit_pod(attributes)
        elif resource.api_version == _API_VERSION and resource.kind == _KIND:
            await self._admit_priority_class(attributes)

    async def _class(self, name: str) -> dict[str, Any] | None:
        classes = await self.lookup.list(_API_VERSION, _KIND)
        return next((pc for pc in classes if pc["metadata"]["name"] == name), None)

    async def _default_class(self) -> dict[str, Any] | None:
        defaults = [
            pc for pc in await self.lookup.list(_API_VERSION, _KIND) if pc.get("globalDefault")
        ]
        # Should several exist (created concurrently), upstream takes the lowest value.
        return min(defaults, key=lambda pc: int(pc.get("value") or 0), default=None)

    async def _admit_pod(self, attributes: Attributes) -> None:
        pod = attributes.obj
        if pod is None:
            return
        spec = pod.setdefault("spec", {})
        if attributes.operation == "UPDATE":
            old_spec = (attributes.old or {}).get("spec") or {}
            for field in ("priority", "preemptionPolicy"):
                if spec.get(field) is None and old_spec.get(field) is not None:
                    spec[field] = old_spec[field]
            return
        if attributes.operation != "CREATE":
            return
        class_name = spec.get("priorityClassName") or ""
        if not class_name:
            found = await self._default_class()
            if found is None:
                priority, policy = 0, DEFAULT_PREEMPTION_POLICY
            else:
                spec["priorityClassName"] = found["metadata"]["name"]
                priority = int(found.get("value") or 0)
                policy = found.get("preemptionPolicy") or DEFAULT_PREEMPTION_POLICY
        else:
            found = await self._class(class_name)
            if found is None:
                raise Forbidden(f"no PriorityClass with name {class_name} was found")
            priority = int(found.get("value") or 0)
            policy = found.get("preemptionPolicy") or DEFAULT_PREEMPTION_POLICY
        given = spec.get("priority")
        if given is not None and given != priority:
            raise Forbidden(
                f"the integer value of priority ({given}) must not be provided in pod spec; "
                f"priority admission controller computed {priority} from the given "
                "PriorityClass name"
            )
        spec["priority"] = priority
        given_policy = spec.get("preemptionPolicy")
        if given_policy is not None and given_policy != policy:
            raise Forbidden(
                f"the string value of PreemptionPolicy ({given_policy}) must not be provided "
                f"in pod spec; priority admission controller computed {policy} from the "
                "given PriorityClass name"
            )
        spec["preemptionPolicy"] = policy

    async def _admit_priority_class(self, attributes: Attributes) -> None:
        pc = attributes.obj
        if pc is None or attributes.operation not in ("CREATE", "UPDATE"):
            return
        if not pc.get("globalDefault"):
            return
        existing = await self._default_class()
        if existing is None:
            return
        existing_name = existing["metadata"]["name"]
        if attributes.operation == "CREATE" or existing_name != pc["metadata"].get("name"):
            raise Forbidden(
                f"PriorityClass {existing_name} is marked as default. Only one default can exist"
            )
