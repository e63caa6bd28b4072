"""How ``taintplane dedicate`` marks a node as a namespace's (seed 000's recipe), how it used
to, and the words that tell an administrator to move from the one to the other.

A dedicated node has the taint ``dedicated=NS`` (NodeRestriction refuses a node any change to
its taints) and the label ``node-restriction.kubernetes.io/dedicated=NS``, which the
namespace's pods select. NodeRestriction refuses nodes every label under
``node-restriction.kubernetes.io/``, so a node cannot label itself into a tenant's selection.
Dedications before this one used the label ``dedicated=NS``, which NodeRestriction lets a
node set on itself: a compromised kubelet that labelled itself so drew the tenant's pods
(they tolerate the taint, and the untainted node matched their selector).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from taintplane.admission.node_restriction import node_may_set_label

__all__ = [
    "LABEL",
    "OLD_LABEL",
    "TAINT_KEY",
    "dedicate_command",
    "node_warnings",
    "old_dedication",
    "self_settable",
]

TAINT_KEY = "dedicated"
LABEL = "node-restriction.kubernetes.io/dedicated"
OLD_LABEL = "dedicated"


def _labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def _taint(node: Mapping[str, Any], value: str) -> dict[str, Any] | None:
    for taint in (node.get("spec") or {}).get("taints") or []:
        if isinstance(taint, dict) and (taint.get("key"), taint.get("value") or "") == (
            TAINT_KEY,
            value,
        ):
            return taint
    return None


def old_dedication(node: Mapping[str, Any]) -> tuple[str, bool] | None:
    """(namespace, evicting) when the node is dedicated the old way: the ``dedicated`` label
    and a ``dedicated`` taint of the same value, without the new label."""
    labels = _labels(node)
    namespace = labels.get(OLD_LABEL)
    if namespace is None or LABEL in labels:
        return None
    taint = _taint(node, namespace)
    if taint is None:
        return None
    return namespace, taint.get("effect") == "NoExecute"


def dedicate_command(nodes: Iterable[str], namespace: str, evict: bool) -> str:
    return f"taintplane dedicate nodes {' '.join(nodes)} --to-namespace {namespace}" + (
        " --evict" if evict else ""
    )


def self_settable(selector: Mapping[str, str]) -> list[str]:
    """The terms of a namespace node selector that a node may satisfy by labelling itself."""
    return [f"{k}={v}" for k, v in selector.items() if node_may_set_label(k)]


def node_warnings(node: Mapping[str, Any]) -> list[str]:
    """What ``policy who-can-land`` says of a node dedicated the old way, or labelled as if
    dedicated without the taint the administrator's dedication carries."""
    name = str((node.get("metadata") or {}).get("name") or "")
    old = old_dedication(node)
    if old is not None:
        namespace, evict = old
        return [
            f"{name} is dedicated to {namespace} by the label {OLD_LABEL}={namespace}, which "
            f"NodeRestriction lets a node set on itself: any node that labels itself so draws "
            f"{namespace}'s pods. Move the dedication to {LABEL}, which nodes cannot set: "
            f"{dedicate_command([name], namespace, evict)}"
        ]
    labels = _labels(node)
    value = labels.get(OLD_LABEL)
    if value is not None and LABEL not in labels and _taint(node, value) is None:
        return [
            f"{name} has the label {OLD_LABEL}={value} but not the taint {TAINT_KEY}={value}: "
            "it may have labelled itself; a namespace that selects that label lands there"
        ]
    return []
