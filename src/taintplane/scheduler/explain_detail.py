"""Per-node details behind a plugin's rejection, for ``taintplane explain``: the taints, the
affinity requirement or the resource numbers that failed, and the pod tolerations that would
answer a taint (whether they alone make the node feasible is for :mod:`explain_fixes`)."""

from __future__ import annotations

from typing import Any

from taintplane.api.nodeaffinity import requirement_matches, term_matches
from taintplane.api.taints import Taint, TaintEffect
from taintplane.api.tolerations import TaintFilter, find_untolerated_taint
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names

__all__ = ["detail"]


def _suggest(taint: Taint) -> dict[str, Any]:
    toleration: dict[str, Any] = {
        "key": taint.key,
        "operator": "Equal" if taint.value else "Exists",
    }
    if taint.value:
        toleration["value"] = taint.value
    toleration["effect"] = taint.effect
    return toleration


def _requirement_text(requirement: dict[str, Any], value: str | None) -> str:
    values = ",".join(str(v) for v in requirement.get("values") or [])
    wanted = f"{requirement.get('key')} {requirement.get('operator')}" + (
        f" [{values}]" if values else ""
    )
    return f"{wanted} (node has {value if value is not None else '<none>'})"


def _affinity_detail(pod: PodInfo, node: NodeInfo) -> str:
    """Which part of nodeSelector or which requirement of each required term fails here."""
    spec = pod.pod.get("spec") or {}
    parts = []
    missing = [
        f"{k}={v} (node has {node.labels.get(k, '<none>')})"
        for k, v in (spec.get("nodeSelector") or {}).items()
        if node.labels.get(k) != v
    ]
    if missing:
        parts.append("nodeSelector " + ", ".join(missing))
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    failing_terms = []
    for index, term in enumerate(terms):
        if term_matches(term, node.labels, node.name):
            return "; ".join(parts)  # the affinity holds: only the nodeSelector failed
        failed = [
            _requirement_text(r, node.labels.get(str(r.get("key"))))
            for r in term.get("matchExpressions") or []
            if not requirement_matches(r, node.labels.get(str(r.get("key"))))
        ] + [
            _requirement_text(r, node.name)
            for r in term.get("matchFields") or []
            if not requirement_matches(r, node.name if r.get("key") == "metadata.name" else None)
        ]
        failing_terms.append(f"term {index}: " + (", ".join(failed) or "empty term"))
    if failing_terms:
        parts.append("required node affinity: " + "; ".join(failing_terms))
    return "; ".join(parts) or "no required node affinity term matches"


def detail(plugin: str, pod: PodInfo, node: NodeInfo) -> tuple[str, list[dict[str, Any]]]:
    if plugin == names.TAINT_TOLERATION:
        blocking = [
            t
            for t in node.taints
            if t.effect in (TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE)
            and find_untolerated_taint([t], pod.tolerations, TaintFilter.ALL) is not None
        ]
        text = "untolerated " + ", ".join(t.to_string() for t in blocking)
        return text, [_suggest(t) for t in blocking]
    if plugin == names.NODE_UNSCHEDULABLE:
        return "the node is cordoned (spec.unschedulable)", [
            {
                "key": "node.kubernetes.io/unschedulable",
                "operator": "Exists",
                "effect": "NoSchedule",
            }
        ]
    if plugin == names.NODE_AFFINITY:
        return _affinity_detail(pod, node), []
    if plugin == names.NODE_RESOURCES_FIT:
        parts = []
        for name, wanted in sorted(pod.requests.items()):
            free = node.allocatable.get(name, 0) - node.requested.get(name, 0)
            if wanted > free:
                unit = "m" if name == "cpu" else ""
                total = node.allocatable.get(name, 0)
                parts.append(f"{name}: requests {wanted}{unit}, free {free}{unit} of {total}{unit}")
        if len(node.pods) + 1 > node.allocatable.get("pods", 0):
            parts.append(f"pods: {len(node.pods)} of {node.allocatable.get('pods', 0)} allowed")
        return "; ".join(parts), []
    return "", []
