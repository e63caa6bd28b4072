"""Who can land on a node: for every namespace, whether its pods can be placed there under the
admission configuration in force — the question dedicated nodes must answer "only one".

A pod reaches a node in two ways. **Scheduled**: it must tolerate the node's NoSchedule and
NoExecute taints and match its labels. **Direct** (``spec.nodeName`` set by the pod's author,
bypassing the scheduler): the kubelet only refuses untolerated NoExecute taints and a node
selector that does not match — a NoSchedule taint does not stop it.

A namespace node selector a node can satisfy by labelling itself (any label outside
``node-restriction.kubernetes.io/`` and kubernetes.io's reserved ones) is pointed out: it keeps
out only well-behaved nodes.

What a namespace's pods can tolerate is bounded by PodTolerationRestriction's whitelist (the
namespace's annotation, else the cluster's; none or empty means anything); the labels they
must match come from PodNodeSelector (the namespace's annotation, else the cluster default).
A whitelist entry that tolerates a taint is one a pod may carry, and anything a pod may carry
tolerates no more than some entry does, so "some entry tolerates it" is exact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from taintplane.admission import pod_node_selector, pod_toleration_restriction
from taintplane.admission.dedication import self_settable
from taintplane.admission.label_sets import LabelMapError, parse_labels_map
from taintplane.admission.plugins import AdmissionSetup
from taintplane.admission.toleration_annotation import unmarshal_tolerations
from taintplane.api.field import Path
from taintplane.api.taints import Taint, TaintEffect
from taintplane.api.tolerations import Toleration, parse_tolerations

__all__ = ["Landing", "who_can_land"]


@dataclass(frozen=True)
class Landing:
    namespace: str
    scheduled: bool
    direct: bool
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "scheduled": self.scheduled,
            "direct": self.direct,
            "why": self.why,
        }


def _whitelist(
    namespace: Mapping[str, Any], setup: AdmissionSetup
) -> tuple[list[Toleration], str] | None:
    """The tolerations pods of the namespace may carry (None: anything) and where that rule
    comes from."""
    if pod_toleration_restriction.PLUGIN_NAME not in setup.enabled:
        return None
    annotations = (namespace.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(pod_toleration_restriction.NS_WL_TOLERATIONS)
    if text is not None:
        try:
            items = unmarshal_tolerations(text) if text else []
            whitelist = parse_tolerations(items, Path.root("tolerations"))
        except (ValueError, RecursionError):  # JSON nested past Python's stack too
            return [], "namespace whitelist (unreadable: every pod is refused)"
        return (whitelist, "namespace whitelist") if whitelist else None
    cluster = setup.toleration_restriction.whitelist
    return (list(cluster), "cluster whitelist") if cluster else None


def _selector(namespace: Mapping[str, Any], setup: AdmissionSetup) -> dict[str, str]:
    if pod_node_selector.PLUGIN_NAME not in setup.enabled:
        return {}
    annotations = (namespace.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(pod_node_selector.NAMESPACE_NODE_SELECTOR)
    if text is None:
        text = setup.node_selectors.get(pod_node_selector.CLUSTER_DEFAULT_NODE_SELECTOR, "")
    return parse_labels_map(str(text))  # LabelMapError: PodNodeSelector refuses every pod


def _untolerable(
    taints: Sequence[Taint], allowed: tuple[list[Toleration], str] | None
) -> tuple[Taint | None, str]:
    if allowed is None:
        return None, "any toleration allowed"
    whitelist, scope = allowed
    for taint in taints:
        if not any(t.tolerates(taint) for t in whitelist):
            return taint, scope
    return None, scope


def who_can_land(
    node: Mapping[str, Any], namespaces: Sequence[Mapping[str, Any]], setup: AdmissionSetup
) -> list[Landing]:
    taints = [Taint.from_dict(t) for t in (node.get("spec") or {}).get("taints") or []]
    blocking = [t for t in taints if t.effect in (TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE)]
    evicting = [t for t in taints if t.effect == TaintEffect.NO_EXECUTE]
    labels = (node.get("metadata") or {}).get("labels") or {}
    rows = []
    for namespace in sorted(namespaces, key=lambda n: str(n["metadata"]["name"])):
        name = str(namespace["metadata"]["name"])
        if (namespace["metadata"]).get("deletionTimestamp"):
            continue
        try:
            selector = _selector(namespace, setup)
        except LabelMapError as error:
            rows.append(Landing(name, False, False, f"namespace node selector: {error}"))
            continue
        mismatch = [f"{k}={v}" for k, v in selector.items() if labels.get(k) != v]
        settable = self_settable(selector)
        allowed = _whitelist(namespace, setup)
        blocked, scope = _untolerable(blocking, allowed)
        evicted, _ = _untolerable(evicting, allowed)
        reasons = []
        if mismatch:
            reason = f"node selector {','.join(mismatch)} does not match the node"
            if all(term in settable for term in mismatch):
                # What a compromised kubelet could do: label itself into the selection.
                reason += " (but the node may set that label on itself)"
            reasons.append(reason)
        elif settable:
            reasons.append(
                f"node selector {','.join(settable)} is a label the node may set on itself"
            )
        if blocked is not None:
            reasons.append(f"{blocked} is not tolerated by the {scope}")
        elif blocking:
            reasons.append(f"taints tolerable ({scope})")
        if blocked is not None and evicted is None and not mismatch:
            reasons.append("only NoSchedule taints: spec.nodeName bypasses them")
        rows.append(
            Landing(
                namespace=name,
                scheduled=not mismatch and blocked is None,
                direct=not mismatch and evicted is None,
                why="; ".join(reasons) or "nothing restricts it",
            )
        )
    return rows
