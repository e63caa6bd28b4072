"""``taintplane explain pod NAME``: what ``0/N nodes are available`` does not say.

For every node: the verdict, the plugin that decided it and why, with the actual taint,
affinity term or resource numbers; for tainted nodes, the toleration that would let the pod
on; for the nodes that fit, the score of each plugin. Computed by the scheduler's own code on
the cluster as the API shows it now.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import click

from taintplane.api.nodeaffinity import requirement_matches, term_matches
from taintplane.api.taints import Taint, TaintEffect
from taintplane.api.tolerations import TaintFilter, find_untolerated_taint
from taintplane.cli.admin import talking_to
from taintplane.cli.kubeconfig import load_target
from taintplane.cli.text import columns
from taintplane.client import Client, HTTPTransport, resource
from taintplane.clock import RealClock
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names
from taintplane.scheduler.scheduler import Scheduler

__all__ = ["explain_command", "explain_pod"]

NODES = resource("", "v1", "nodes")
PODS = resource("", "v1", "pods")


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


def _detail(plugin: str, pod: PodInfo, node: NodeInfo) -> tuple[str, list[dict[str, Any]]]:
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


async def explain_pod(client: Client, name: str, namespace: str) -> dict[str, Any]:
    pod = await client.get(PODS, name, namespace)
    nodes, _ = await client.list(NODES)
    pods, _ = await client.list(PODS)
    view = Scheduler(client, RealClock(), seed=0)
    for node_object in nodes:
        view._node_added(node_object)
    for other in pods:
        if other["metadata"].get("uid") != pod["metadata"].get("uid"):
            view._pod_added(other)
    # As the scheduler would see it now: a bound pod is explained as if it were pending.
    pending = {**pod, "spec": {k: v for k, v in (pod.get("spec") or {}).items() if k != "nodeName"}}
    info = PodInfo.of(pending)
    decision = view.explain(pending)
    rows = []
    statuses = decision.diagnosis.node_statuses if decision.diagnosis else {}
    for node in view.placement.node_order():
        status = statuses.get(node.name)
        if status is None and decision.diagnosis and node.name not in decision.feasible:
            # Not filtered at all: a PreFilter rejected the pod, or named other nodes.
            status = decision.diagnosis.absent_status
        if status is None:
            scores = {
                plugin: per_node[node.name] for plugin, per_node in (decision.scores or {}).items()
            }
            rows.append(
                {
                    "node": node.name,
                    "verdict": "fits",
                    "plugin": "",
                    "reason": "",
                    "detail": "",
                    "tolerations": [],
                    "scores": scores,
                    "total": sum(scores.values()),
                }
            )
        else:
            detail, tolerations = _detail(status.plugin, info, node)
            rows.append(
                {
                    "node": node.name,
                    "verdict": "rejected",
                    "plugin": status.plugin,
                    "reason": status.message,
                    "detail": detail,
                    "tolerations": tolerations,
                    "scores": {},
                    "total": None,
                }
            )
    return {
        "pod": f"{namespace}/{name}",
        "boundTo": (pod.get("spec") or {}).get("nodeName") or None,
        "message": decision.message or None,
        "choice": decision.node or None,
        "preemption": (
            {
                "node": decision.nominated,
                "victims": [f"{v.namespace}/{v.name}" for v in decision.victims],
            }
            if decision.nominated
            else None
        ),
        "nodes": rows,
    }


def _table(report: dict[str, Any]) -> str:
    lines = [
        f"Pod {report['pod']}" + (f" is bound to {report['boundTo']}" if report["boundTo"] else "")
    ]
    if report["message"]:
        lines.append(f"Scheduler: {report['message']}")
    elif report["choice"]:
        lines.append(f"Scheduler would choose: {report['choice']}")
    if report.get("preemption"):
        preemption = report["preemption"]
        lines.append(
            f"Preemption would nominate {preemption['node']}, evicting "
            + ", ".join(preemption["victims"])
        )
    header = ("NODE", "VERDICT", "PLUGIN", "WHY", "SCORE")
    table: list[tuple[str, ...]] = []
    for row in report["nodes"]:
        if row["verdict"] == "fits":
            why = " ".join(f"{plugin}={value}" for plugin, value in row["scores"].items())
            table.append((row["node"], "fits", "", why, str(row["total"])))
        else:
            why = row["reason"] + (f" ({row['detail']})" if row["detail"] else "")
            table.append((row["node"], "rejected", row["plugin"], why, ""))
    lines.append("")
    lines += columns(header, table)
    fixes = [(row["node"], t) for row in report["nodes"] for t in row["tolerations"]]
    if fixes:
        lines.append("")
        lines.append("Tolerations that would let the pod onto rejected nodes:")
        for node, toleration in fixes:
            lines.append(f"  {node}: {json.dumps(toleration)}")
    return "\n".join(lines)


@click.group("explain")
def explain_command() -> None:
    """Explain scheduling decisions."""


@explain_command.command("pod")
@click.argument("name")
@click.option("-n", "--namespace", default=None, help="Namespace (default: the kubeconfig's).")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
@click.option("--kubeconfig", default=None, help="Path to the kubeconfig (default: $KUBECONFIG).")
def explain_pod_command(
    name: str, namespace: str | None, output: str, kubeconfig: str | None
) -> None:
    """For every node: fits or not, which plugin decided, why, and what would fix it."""
    target = load_target(kubeconfig)

    async def run() -> dict[str, Any]:
        transport = HTTPTransport(target.server, token=target.token, verify=target.verify)
        try:
            return await explain_pod(Client(transport), name, namespace or target.namespace)
        finally:
            await transport.close()

    with talking_to(target):
        report = asyncio.run(run())
    click.echo(json.dumps(report, indent=2) if output == "json" else _table(report))
