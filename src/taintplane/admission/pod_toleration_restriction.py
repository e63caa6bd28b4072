"""PodTolerationRestriction: tolerations a namespace gives its pods, and the only ones it allows.

As upstream's plugin (``plugin/pkg/admission/podtolerationrestriction``), for pods themselves
(not subresources), on create and update:

- mutating: on create, the namespace's ``scheduler.alpha.kubernetes.io/defaultTolerations``
  (a JSON list; the cluster default from the plugin configuration when the annotation is
  absent, none when it is empty) are merged after the pod's own with ``MergeTolerations``, so a
  pod toleration that covers a default one replaces it; every pod that is not BestEffort also
  gets ``node.kubernetes.io/memory-pressure:NoSchedule`` (Exists), on update too;
- validating: a pod with tolerations must have each covered by the namespace's
  ``scheduler.alpha.kubernetes.io/tolerationsWhitelist`` (the cluster whitelist when the
  annotation is absent; an empty list allows everything). The whitelist sees the tolerations
  other plugins added too (DefaultTolerationSeconds runs before this one).

Upstream refuses with a plain error, not a Status: the API server answers 500 with the text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from taintplane.admission.chain import Attributes, Lookup, NotFound, Rejected
from taintplane.admission.toleration_annotation import unmarshal_tolerations
from taintplane.api.decoding import DecodeError
from taintplane.api.field import Path
from taintplane.api.quantity import QuantityError, parse_quantity
from taintplane.api.toleration_algebra import merge, verify_against_whitelist
from taintplane.api.tolerations import Toleration, parse_tolerations, tolerations_to_list
from taintplane.api.validation import validate_tolerations

__all__ = [
    "CONFIG_API_VERSIONS",
    "NS_DEFAULT_TOLERATIONS",
    "NS_WL_TOLERATIONS",
    "PLUGIN_NAME",
    "PodTolerationRestriction",
    "PodTolerationRestrictionConfig",
    "is_best_effort",
    "load_configuration",
]

PLUGIN_NAME = "PodTolerationRestriction"
NS_DEFAULT_TOLERATIONS = "scheduler.alpha.kubernetes.io/defaultTolerations"
NS_WL_TOLERATIONS = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"
CONFIG_GROUP = "podtolerationrestriction.admission.k8s.io"
CONFIG_API_VERSIONS = (f"{CONFIG_GROUP}/v1alpha1", f"{CONFIG_GROUP}/v1")
CONFIG_KIND = "Configuration"
CONFLICT_MESSAGE = (
    "pod tolerations (possibly merged with namespace default tolerations) conflict with "
    "its {scope} whitelist"
)
_MEMORY_PRESSURE = Toleration(
    key="node.kubernetes.io/memory-pressure", operator="Exists", effect="NoSchedule"
)
_QOS_RESOURCES = ("cpu", "memory")


@dataclass(frozen=True)
class PodTolerationRestrictionConfig:
    """``Configuration``: the cluster-level default tolerations and whitelist."""

    default: list[Toleration] = field(default_factory=list)
    whitelist: list[Toleration] = field(default_factory=list)


def load_configuration(obj: Mapping[str, Any] | None) -> PodTolerationRestrictionConfig:
    """Decode and validate the plugin's configuration object (None: the defaults)."""
    if obj is None:
        return PodTolerationRestrictionConfig()
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not kind:
        raise ValueError("Object 'Kind' is missing")
    if api_version not in CONFIG_API_VERSIONS or kind != CONFIG_KIND:
        raise ValueError(f'no kind "{kind}" is registered for version "{api_version}"')
    root = Path.root("podtolerationrestriction")
    try:
        default = parse_tolerations(obj.get("default"), root.child("default"))
        whitelist = parse_tolerations(obj.get("whitelist"), root.child("whitelist"))
    except DecodeError as error:
        raise ValueError(str(error)) from error
    errors = validate_tolerations(default, root.child("default"))
    errors += validate_tolerations(whitelist, root.child("whitelist"))
    if errors:
        raise ValueError("invalid config: [" + " ".join(str(e) for e in errors) + "]")
    return PodTolerationRestrictionConfig(default, whitelist)


def _positive(amount: object) -> bool:
    try:
        return parse_quantity(amount) > 0  # type: ignore[arg-type]
    except (QuantityError, TypeError):
        return False


def _has_compute(resources: object) -> bool:
    if not isinstance(resources, Mapping):
        return False
    for kind in ("requests", "limits"):
        amounts = resources.get(kind)
        if isinstance(amounts, Mapping) and any(
            _positive(amounts.get(name)) for name in _QOS_RESOURCES if name in amounts
        ):
            return True
    return False


def is_best_effort(pod: Mapping[str, Any]) -> bool:
    """``GetPodQOS(pod) == BestEffort``: no CPU or memory request or limit above zero, at
    pod level when the pod sets resources there, else in any container or init container."""
    spec = pod.get("spec") or {}
    pod_level = spec.get("resources")
    if isinstance(pod_level, Mapping) and (pod_level.get("requests") or pod_level.get("limits")):
        return not _has_compute(pod_level)
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    return not any(
        isinstance(container, Mapping) and _has_compute(container.get("resources"))
        for container in containers
    )


class PodTolerationRestriction:
    name = PLUGIN_NAME

    def __init__(
        self, lookup: Lookup, config: PodTolerationRestrictionConfig | None = None
    ) -> None:
        self.lookup = lookup
        self.config = config or PodTolerationRestrictionConfig()

    @staticmethod
    def _handles(attributes: Attributes) -> bool:
        return (
            attributes.operation in ("CREATE", "UPDATE")
            and attributes.is_pod()
            and isinstance(attributes.obj, dict)
        )

    async def admit(self, attributes: Attributes) -> None:
        if not self._handles(attributes):
            return
        pod = attributes.obj
        assert pod is not None
        extra: list[Toleration] = []
        if attributes.operation == "CREATE":
            defaults = await self._namespace_tolerations(
                attributes.namespace, NS_DEFAULT_TOLERATIONS
            )
            extra = list(self.config.default if defaults is None else defaults)
        if not is_best_effort(pod):
            extra.append(_MEMORY_PRESSURE)
        if extra:
            spec = pod.setdefault("spec", {})
            own = _pod_tolerations(spec)
            merged = merge(own, extra)
            if merged:
                spec["tolerations"] = tolerations_to_list(merged)
            else:
                spec.pop("tolerations", None)
        await self.validate(attributes)

    async def validate(self, attributes: Attributes) -> None:
        if not self._handles(attributes):
            return
        pod = attributes.obj
        assert pod is not None
        tolerations = _pod_tolerations(pod.get("spec") or {})
        if not tolerations:
            return
        whitelist = await self._namespace_tolerations(attributes.namespace, NS_WL_TOLERATIONS)
        scope = "namespace"
        if whitelist is None:
            whitelist, scope = self.config.whitelist, "cluster"
        if whitelist and not verify_against_whitelist(tolerations, whitelist):
            raise Rejected(CONFLICT_MESSAGE.format(scope=scope))

    async def _namespace_tolerations(self, namespace: str, key: str) -> list[Toleration] | None:
        """``extractNSTolerations``: None when the annotation is absent, [] when empty."""
        ns = await self.lookup.get("v1", "Namespace", namespace)
        if ns is None:
            # Upstream returns the client's NotFound (404) when the namespace is gone.
            raise NotFound("namespaces", namespace)
        annotations = (ns.get("metadata") or {}).get("annotations") or {}
        if key not in annotations:
            return None
        text = annotations[key]
        if not text:
            return []
        try:
            return parse_tolerations(unmarshal_tolerations(text), Path.root("tolerations"))
        except (ValueError, DecodeError) as error:
            raise Rejected(str(error)) from error


def _pod_tolerations(spec: Mapping[str, Any]) -> Sequence[Toleration]:
    items = spec.get("tolerations") or []
    return [Toleration.from_dict(item) for item in items if isinstance(item, Mapping)]
