"""The dashboard's Pending pods: the scheduler's own sentence (the PodScheduled condition's
message, as FailedScheduling has it), then what ``taintplane explain pod`` knows — every node's
verdict, each plugin that rejects it and why, and the toleration that would let the pod in.

The report is :func:`taintplane.scheduler.explain.explain_pods`'; the web layer does not import
the scheduler, so the composition root hands it over as a :class:`PodsExplainer`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from html import escape
from typing import Any, Protocol

from taintplane.api.podconditions import find_condition
from taintplane.client import ApiError, Client
from taintplane.web.page import table

__all__ = ["MAX_EXPLAINED", "PodsExplainer", "pending_section"]

log = logging.getLogger(__name__)

#: Pending pods listed (a page of thousands helps nobody; kubectl lists them all).
MAX_LISTED = 100
#: Pods explained node by node on one page (each costs a filter pass over every node); pods
#: of one controller are explained once, since they share a template.
MAX_EXPLAINED = 10
#: Kinds of outcome shown per pod (nodes with the same verdict, reasons and fix share a row).
MAX_GROUPS = 8
#: Node names written out in a row before the rest are counted.
MAX_NAMES = 5


class PodsExplainer(Protocol):
    """:func:`taintplane.scheduler.explain.explain_pods`."""

    async def __call__(
        self,
        client: Client,
        pods: Sequence[dict[str, Any]],
        *,
        nodes: Sequence[dict[str, Any]] | None = None,
        cluster_pods: Sequence[dict[str, Any]] | None = None,
    ) -> list[dict[str, Any]]: ...


def pod_name(pod: dict[str, Any]) -> str:
    meta = pod["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


def waiting_because(pod: dict[str, Any]) -> str:
    """Why a Pending pod is not running: the scheduler's message, or that its kubelet has not
    started it."""
    node = (pod.get("spec") or {}).get("nodeName")
    if not node:
        return str((find_condition(pod, "PodScheduled") or {}).get("message", ""))
    return f"bound to {node}, not started by its kubelet"


def _fix(row: dict[str, Any]) -> str:
    """The tolerations that make the node feasible (all of them together), or why none does."""
    lines = [f"<code>{escape(json.dumps(t))}</code>" for t in row["tolerations"]]
    for entry in row["deviceTolerations"]:
        where = (
            f"ResourceClaimTemplate {entry['template']}"
            if entry.get("template")
            else f"ResourceClaim {entry['claim']}"
        )
        lines.append(
            f"{escape(where)} request {escape(str(entry['request']))}: "
            f"<code>{escape(json.dumps(entry['toleration']))}</code>"
        )
    if row["stillRejectedBy"]:
        lines.append(
            "no toleration alone: still rejected by "
            + escape(", ".join(s["plugin"] for s in row["stillRejectedBy"]))
        )
    return "<br>".join(lines)


def _outcome(row: dict[str, Any]) -> str:
    """What a node's row says, less its name: nodes alike share one row."""
    if row["verdict"] == "fits":
        return "fits"
    same = (
        row["failures"],
        row["tolerations"],
        row["deviceTolerations"],
        row["stillRejectedBy"],
    )
    return json.dumps(same, sort_keys=True)


def _names(nodes: list[str]) -> str:
    shown = ", ".join(nodes[:MAX_NAMES])
    more = len(nodes) - MAX_NAMES
    return escape(shown + (f" and {more} more" if more > 0 else ""))


def _report_table(report: dict[str, Any]) -> str:
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in report["nodes"]:
        groups.setdefault(_outcome(row), []).append(row)
    # Nodes that fit first, then the largest groups.
    ordered = sorted(groups.values(), key=lambda g: (g[0]["verdict"] != "fits", -len(g)))
    rows = []
    for group in ordered[:MAX_GROUPS]:
        row = group[0]
        names = _names([r["node"] for r in group])
        if row["verdict"] == "fits":
            best = max(group, key=lambda r: r["total"] or 0)
            score = f"score {best['total']}"
            if len(group) > 1:
                score += f" (best: {best['node']})"
            rows.append((names, '<span class="verdict fits">fits</span>', "", escape(score), ""))
            continue
        why = "<br>".join(
            escape(f["reason"] + (f" ({f['detail']})" if f["detail"] else ""))
            for f in row["failures"]
        )
        plugins = "<br>".join(escape(f["plugin"]) for f in row["failures"])
        rows.append(
            (
                names,
                '<span class="verdict rejected">rejected</span>',
                plugins,
                why,
                _fix(row),
            )
        )
    ident = "explain-" + report["pod"].replace("/", "-")
    out = table(ident, ("node", "verdict", "plugin", "why", "toleration that lets it in"), rows)
    rest = ordered[MAX_GROUPS:]
    if rest:
        namespace, name = report["pod"].split("/", 1)
        out += (
            f'<p class="note">{sum(len(g) for g in rest)} more nodes, rejected for other '
            f"reasons: <code>taintplane explain pod {escape(name)} -n {escape(namespace)}</code> "
            "lists every node.</p>"
        )
    return out


def _family(pod: dict[str, Any]) -> str:
    """The controller a pod belongs to (its pods share one template), else the pod itself."""
    for owner in pod["metadata"].get("ownerReferences") or []:
        if owner.get("controller"):
            return f"{owner.get('kind')} {owner.get('name')}"
    return pod_name(pod)


async def pending_section(
    client: Client,
    pending: Sequence[dict[str, Any]],
    explain: PodsExplainer | None,
    node_link: Callable[[str], str],
    cluster: tuple[Sequence[dict[str, Any]], Sequence[dict[str, Any]]],
) -> str:
    """The Pending table and the explanations; ``cluster``: every node and pod, as just read."""
    rows = [
        (
            escape(pod_name(p)),
            node_link(str((p.get("spec") or {}).get("nodeName") or "")),
            escape(waiting_because(p)),
        )
        for p in sorted(pending, key=pod_name)[:MAX_LISTED]
    ]
    out = table("pending", ("pod", "node", "why"), rows, empty="No pod is waiting.")
    if len(pending) > MAX_LISTED:
        out += (
            f'<p class="note">and {len(pending) - MAX_LISTED} more: '
            "<code>kubectl get pods -A --field-selector=status.phase=Pending</code></p>"
        )
    unbound = [p for p in pending if not (p.get("spec") or {}).get("nodeName")]
    if explain is None or not unbound:
        return out
    families: dict[str, list[dict[str, Any]]] = {}
    for p in sorted(unbound, key=pod_name):
        families.setdefault(_family(p), []).append(p)
    chosen = [members[0] for members in families.values()][:MAX_EXPLAINED]
    try:
        nodes, everyone = cluster
        reports = await explain(client, chosen, nodes=nodes, cluster_pods=everyone)
    except ApiError as error:
        # Explaining needs nodes, pods and DRA objects: a user RBAC lets see less gets the
        # scheduler's sentence only.
        log.info("dashboard: cannot explain pending pods: %s", error)
        return out + f'<p class="note">Per-node reasons unavailable: {escape(str(error))}</p>'
    for pod, report in zip(chosen, reports, strict=True):
        family = _family(pod)
        others = len(families[family]) - 1
        alike = f" (and {others} more of {family})" if others else ""
        heading = escape(report["pod"] + alike)
        out += f'<h3 class="explained">{heading}: node by node</h3>' + _report_table(report)
    if len(families) > len(chosen):
        out += (
            f'<p class="note">{len(families) - len(chosen)} more kinds of pending pod not '
            "explained here: <code>taintplane explain pod NAME -n NAMESPACE</code> explains "
            "any of them.</p>"
        )
    return out
