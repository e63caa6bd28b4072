"""Required node affinity as ``component-helpers/scheduling/corev1/nodeaffinity``.

Shared by the scheduler's NodeAffinity plugin and the DaemonSet controller (which must decide
which nodes should run a daemon pod exactly as the scheduler will filter them). Works on plain
pod-spec dicts and a node's labels and name.

Required terms are ORed, the expressions and fields within a term ANDed; a term with neither
matches nothing. Operators: In, NotIn, Exists, DoesNotExist, Gt, Lt (integers). Fields:
``metadata.name`` only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from taintplane.api.tolerations import parse_int64

__all__ = ["pod_matches_node_selector_and_affinity", "requirement_matches", "term_matches"]


def requirement_matches(requirement: Mapping[str, Any], value: str | None) -> bool:
    operator = requirement.get("operator")
    values = [str(v) for v in requirement.get("values") or []]
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and len(values) == 1:
        ours, bound = parse_int64(value), parse_int64(values[0])
        if ours is None or bound is None:
            return False
        return ours > bound if operator == "Gt" else ours < bound
    return False


def term_matches(term: Mapping[str, Any], labels: Mapping[str, str], name: str) -> bool:
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False
    for requirement in expressions:
        if not requirement_matches(requirement, labels.get(str(requirement.get("key")))):
            return False
    for requirement in fields:
        if requirement.get("key") != "metadata.name" or not requirement_matches(requirement, name):
            return False
    return True


def pod_matches_node_selector_and_affinity(
    spec: Mapping[str, Any], labels: Mapping[str, str], name: str
) -> bool:
    """``spec.nodeSelector`` and the required node affinity both admit the node."""
    for key, wanted in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != wanted:
            return False
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        terms: Sequence[Mapping[str, Any]] = required.get("nodeSelectorTerms") or []
        return any(term_matches(term, labels, name) for term in terms)
    return True
