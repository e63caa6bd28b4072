"""Pure pieces of the DaemonSet controller, after upstream's ``pkg/controller/daemon/util`` and
the helpers of ``daemon_controller.go``: which nodes should run a daemon pod, the pod built
from the template, surge and unavailability counts, pod readiness and the failed-pod backoff.

Everything works on plain JSON dicts; nothing here talks to the API.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from taintplane.api.intstr import scaled_value
from taintplane.api.nodeaffinity import pod_matches_node_selector_and_affinity
from taintplane.api.taints import Taint
from taintplane.api.tolerations import TaintFilter, Toleration, find_untolerated_taint
from taintplane.api.wellknown import daemon_pod_tolerations
from taintplane.controllers.workloads import is_pod_available, is_pod_ready

__all__ = [
    "REVISION_HASH_LABEL",
    "TEMPLATE_GENERATION_ANNOTATION",
    "TEMPLATE_GENERATION_LABEL",
    "FailedPodsBackoff",
    "allows_surge",
    "daemon_pod_spec_tolerations",
    "is_pod_available",
    "is_pod_ready",
    "is_pod_updated",
    "node_should_run_daemon_pod",
    "pod_template",
    "replace_node_name_affinity",
    "surge_count",
    "target_node_name",
    "unavailable_count",
]

REVISION_HASH_LABEL = "controller-revision-hash"
TEMPLATE_GENERATION_LABEL = "pod-template-generation"
TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"


def daemon_pod_spec_tolerations(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The template's tolerations plus the automatic daemon ones (``AddOrUpdateDaemonPod…``)."""
    own = [Toleration.from_dict(t) for t in spec.get("tolerations") or [] if isinstance(t, dict)]
    wanted = daemon_pod_tolerations(own, host_network=bool(spec.get("hostNetwork")))
    return [t.to_dict() for t in wanted]


def node_should_run_daemon_pod(
    node: dict[str, Any], ds: dict[str, Any], *, comparison_operators: bool = False
) -> tuple[bool, bool]:
    """``NodeShouldRunDaemonPod``: (should a new pod start here, may an existing one stay).

    An untolerated NoSchedule taint only keeps new pods off; an untolerated NoExecute taint
    also means an existing pod must go.
    """
    spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    meta = node.get("metadata") or {}
    name = str(meta.get("name", ""))
    if spec.get("nodeName") and spec["nodeName"] != name:
        return False, False
    if not pod_matches_node_selector_and_affinity(spec, meta.get("labels") or {}, name):
        return False, False
    taints = [Taint.from_dict(t) for t in (node.get("spec") or {}).get("taints") or []]
    tolerations = [Toleration.from_dict(t) for t in daemon_pod_spec_tolerations(spec)]
    blocking = find_untolerated_taint(
        taints, tolerations, TaintFilter.DO_NOT_SCHEDULE, comparison_operators=comparison_operators
    )
    if blocking is None:
        return True, True
    evicting = find_untolerated_taint(
        taints, tolerations, TaintFilter.NO_EXECUTE, comparison_operators=comparison_operators
    )
    return False, evicting is None


def replace_node_name_affinity(affinity: dict[str, Any] | None, node: str) -> dict[str, Any]:
    """``ReplaceDaemonSetPodNodeNameNodeAffinity``: the required node selector becomes the one
    term ``metadata.name In [node]`` (every other required term is dropped, as upstream);
    preferred terms and pod (anti-)affinity are kept."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    result = copy.deepcopy(affinity) if affinity else {}
    node_affinity = result.setdefault("nodeAffinity", {})
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [term]
        }
    else:
        required["nodeSelectorTerms"] = [term]
    return result


def target_node_name(pod: dict[str, Any]) -> str | None:
    """``GetTargetNodeName``: the bound node, else the node the affinity pins the pod to."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("operator") == "In":
                values = field.get("values") or []
                return str(values[0]) if len(values) == 1 else None
    return None


def _rolling_update(ds: dict[str, Any]) -> dict[str, Any] | None:
    strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return None
    rolling = strategy.get("rollingUpdate")
    return rolling if isinstance(rolling, dict) else None


def surge_count(ds: dict[str, Any], desired: int) -> int:
    """``SurgeCount``: ``maxSurge`` of the nodes that should run a pod, rounded up; 0 when
    not rolling or not set."""
    rolling = _rolling_update(ds)
    return 0 if rolling is None else scaled_value(rolling.get("maxSurge"), desired, round_up=True)


def unavailable_count(ds: dict[str, Any], desired: int) -> int:
    """``UnavailableCount``: ``maxUnavailable`` of the nodes that should run a pod, rounded
    up; 0 when not rolling."""
    rolling = _rolling_update(ds)
    if rolling is None:
        return 0
    return scaled_value(rolling.get("maxUnavailable", 1), desired, round_up=True)


def allows_surge(ds: dict[str, Any]) -> bool:
    """``AllowsSurge``: a node may hold an old and a new pod at once."""
    try:
        return surge_count(ds, 1) != 0
    except ValueError:
        return False


def pod_template(ds: dict[str, Any], hash_: str) -> dict[str, Any]:
    """``CreatePodTemplate``: the template with the daemon tolerations and revision labels."""
    template = copy.deepcopy((ds.get("spec") or {}).get("template") or {})
    spec = template.setdefault("spec", {})
    spec["tolerations"] = daemon_pod_spec_tolerations(spec)
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    generation = ((ds.get("metadata") or {}).get("annotations") or {}).get(
        TEMPLATE_GENERATION_ANNOTATION
    )
    if generation is not None and str(generation).lstrip("-").isdigit():
        labels[TEMPLATE_GENERATION_LABEL] = str(int(generation))
    if hash_:
        labels[REVISION_HASH_LABEL] = hash_
    return template


def is_pod_updated(pod: dict[str, Any], hash_: str, ds: dict[str, Any]) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    generation = ((ds.get("metadata") or {}).get("annotations") or {}).get(
        TEMPLATE_GENERATION_ANNOTATION
    )
    by_generation = generation is not None and labels.get(TEMPLATE_GENERATION_LABEL) == str(
        generation
    )
    return by_generation or (bool(hash_) and labels.get(REVISION_HASH_LABEL) == hash_)


@dataclass
class _Entry:
    delay: float
    last_update: datetime


class FailedPodsBackoff:
    """``flowcontrol.Backoff`` as kube-controller-manager builds it for DaemonSets (1 s
    doubling to 15 min, no jitter); an entry idle for twice the maximum starts over."""

    def __init__(self, initial: float = 1.0, maximum: float = 900.0) -> None:
        self.initial = initial
        self.maximum = maximum
        self._entries: dict[str, _Entry] = {}

    def _expired(self, entry: _Entry, now: datetime) -> bool:
        return (now - entry.last_update).total_seconds() > 2 * self.maximum

    def in_backoff_since_update(self, key: str, now: datetime) -> bool:
        entry = self._entries.get(key)
        if entry is None or self._expired(entry, now):
            return False
        return (now - entry.last_update).total_seconds() < entry.delay

    def get(self, key: str) -> float:
        entry = self._entries.get(key)
        return 0.0 if entry is None else entry.delay

    def next(self, key: str, now: datetime) -> None:
        entry = self._entries.get(key)
        if entry is None or self._expired(entry, now):
            self._entries[key] = _Entry(self.initial, now)
        else:
            entry.delay = min(entry.delay * 2, self.maximum)
            entry.last_update = now

    def gc(self, now: datetime) -> None:
        for key in [k for k, e in self._entries.items() if self._expired(e, now)]:
            del self._entries[key]
