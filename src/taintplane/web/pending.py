"""The dashboard's Pending pods: the scheduler's own sentence (the PodScheduled condition's
message, as FailedScheduling has it), then what ``taintplane explain pod`` knows — every node's
verdict, each plugin that rejects it and why, and the toleration that would let the pod in.

The report is :func:`taintplane.scheduler.explain.explain_pods`'; the web layer does not import
the scheduler, so the composition root hands it over as a :class:`PodsExplainer`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from html import escape
from typing import Any, Protocol

from taintplane.api.podconditions import find_condition
from taintplane.client import ApiError, Client
from taintplane.web.page import table

__all__ = ["MAX_EXPLAINED", "PodsExplainer", "pending_section"]

log = logging.getLogger(__name__)

#: Pods explained node by node on one page (each costs a filter pass over every node).
MAX_EXPLAINED = 20


class PodsExplainer(Protocol):
    async def __call__(
        self, client: Client, pods: Sequence[dict[str, Any]]
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


def _report_table(report: dict[str, Any]) -> str:
    rows = []
    for row in report["nodes"]:
        if row["verdict"] == "fits":
            rows.append(
                (
                    escape(row["node"]),
                    '<span class="verdict fits">fits</span>',
                    "",
                    escape(f"score {row['total']}"),
                    "",
                )
            )
            continue
        why = "<br>".join(
            escape(f["reason"] + (f" ({f['detail']})" if f["detail"] else ""))
            for f in row["failures"]
        )
        plugins = "<br>".join(escape(f["plugin"]) for f in row["failures"])
        rows.append(
            (
                escape(row["node"]),
                '<span class="verdict rejected">rejected</span>',
                plugins,
                why,
                _fix(row),
            )
        )
    ident = "explain-" + report["pod"].replace("/", "-")
    return table(ident, ("node", "verdict", "plugin", "why", "toleration that lets it in"), rows)


async def pending_section(
    client: Client,
    pending: Sequence[dict[str, Any]],
    explain: PodsExplainer | None,
    node_link: Any,
) -> str:
    rows = [
        (
            escape(pod_name(p)),
            node_link(str((p.get("spec") or {}).get("nodeName") or "")),
            escape(waiting_because(p)),
        )
        for p in pending
    ]
    out = table("pending", ("pod", "node", "why"), rows, empty="No pod is waiting.")
    unbound = [p for p in pending if not (p.get("spec") or {}).get("nodeName")]
    if explain is None or not unbound:
        return out
    chosen = sorted(unbound, key=pod_name)[:MAX_EXPLAINED]
    try:
        reports = await explain(client, chosen)
    except ApiError as error:
        # Explaining needs nodes, pods and DRA objects: a user RBAC lets see less gets the
        # scheduler's sentence only.
        log.info("dashboard: cannot explain pending pods: %s", error)
        return out + f'<p class="note">Per-node reasons unavailable: {escape(str(error))}</p>'
    for report in reports:
        out += f'<h3 class="explained">{escape(report["pod"])}: node by node</h3>' + _report_table(
            report
        )
    if len(unbound) > len(chosen):
        out += (
            f'<p class="note">{len(unbound) - len(chosen)} more pending pods not explained here: '
            "<code>taintplane explain pod NAME -n NAMESPACE</code> explains any of them.</p>"
        )
    return out
