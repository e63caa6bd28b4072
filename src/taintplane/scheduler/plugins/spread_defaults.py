"""PodTopologySpread's system defaults (``defaultingType: System``, upstream's default).

A pod without ``topologySpreadConstraints`` of its own is scored, never filtered, as if it had
``maxSkew: 3`` over ``kubernetes.io/hostname`` and ``maxSkew: 5`` over
``topology.kubernetes.io/zone``, both ``ScheduleAnyway``, selecting the pods that the Services,
ReplicationController, ReplicaSet or StatefulSet selecting it select (upstream's
``helper.DefaultSelector``). A pod nothing selects gets no default constraints.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from taintplane.api.scheme import SCHEME
from taintplane.api.selectors import (
    LabelSelector,
    Operator,
    Requirement,
    SelectorError,
    label_selector_from_dict,
)
from taintplane.client import Informer
from taintplane.client.shared import SharedInformers
from taintplane.scheduler.nodeinfo import PodInfo

__all__ = [
    "HOSTNAME",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "SpreadListers",
    "default_selector",
    "watch_owners",
]

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"

#: Upstream's ``systemDefaultConstraints`` (podtopologyspread/plugin.go).
SYSTEM_DEFAULT_CONSTRAINTS: tuple[dict[str, Any], ...] = (
    {"maxSkew": 3, "topologyKey": HOSTNAME, "whenUnsatisfiable": "ScheduleAnyway"},
    {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"},
)

Cache = Mapping[str, dict[str, Any]]
"""An informer's cache: objects by ``namespace/name``."""


@dataclass
class SpreadListers:
    """The caches DefaultSelector reads; a kind this server does not serve stays empty."""

    services: Cache = field(default_factory=dict)
    replication_controllers: Cache = field(default_factory=dict)
    replica_sets: Cache = field(default_factory=dict)
    stateful_sets: Cache = field(default_factory=dict)


_KINDS = {
    "services": ("", "v1", "services"),
    "replication_controllers": ("", "v1", "replicationcontrollers"),
    "replica_sets": ("apps", "v1", "replicasets"),
    "stateful_sets": ("apps", "v1", "statefulsets"),
}


def watch_owners(informers: SharedInformers, listers: SpreadListers) -> list[Informer]:
    """Point ``listers`` at the shared informers' caches of the kinds this server serves
    (of the four only ReplicaSets today; watching an unserved kind would only fail)."""
    watched: list[Informer] = []
    for attr, path in _KINDS.items():
        if SCHEME.lookup(*path) is not None:
            informer = informers.informer(*path)
            setattr(listers, attr, informer.cache)
            watched.append(informer)
    return watched


def _equals(labels: Mapping[str, str]) -> tuple[Requirement, ...]:
    # labels.Set.AsSelector: one equality requirement a key, sorted by key.
    return tuple(Requirement(k, Operator.EQUALS, (str(labels[k]),)) for k in sorted(labels))


def _spec(obj: dict[str, Any] | None) -> dict[str, Any]:
    return (obj or {}).get("spec") or {}


def default_selector(pod: PodInfo, listers: SpreadListers) -> LabelSelector:
    """The selector of the pod's default constraints; empty when nothing selects the pod."""
    meta = pod.pod.get("metadata") or {}
    labels: Mapping[str, str] = meta.get("labels") or {}
    namespace = pod.namespace
    merged: dict[str, str] = {}
    # Services in the pod's namespace whose selector matches it; a service without a
    # selector matches nothing (GetPodServices). They all match the pod: no key conflicts.
    for key, service in listers.services.items():
        if not key.startswith(namespace + "/"):
            continue
        wanted = _spec(service).get("selector")
        if wanted is None:
            continue
        if all(labels.get(k) == v for k, v in wanted.items()):
            merged.update(wanted)
    requirements = _equals(merged)
    owner = next(
        (ref for ref in meta.get("ownerReferences") or [] if ref.get("controller") is True),
        None,
    )
    if owner is None:
        return LabelSelector(requirements)
    kind = (owner.get("apiVersion"), owner.get("kind"))
    found_key = f"{namespace}/{owner.get('name')}"
    if kind == ("v1", "ReplicationController"):
        rc = listers.replication_controllers.get(found_key)
        if rc is not None:
            merged.update(_spec(rc).get("selector") or {})
            requirements = _equals(merged)
    elif kind in (("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet")):
        cache = listers.replica_sets if kind[1] == "ReplicaSet" else listers.stateful_sets
        owned = cache.get(found_key)
        # A nil selector selects nothing and adds nothing; an invalid one is skipped.
        if owned is not None and _spec(owned).get("selector") is not None:
            try:
                extra = label_selector_from_dict(_spec(owned)["selector"]).requirements
            except SelectorError:
                extra = ()
            requirements += extra
    return LabelSelector(requirements)
