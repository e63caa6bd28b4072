"""``taintplane explain pod NAME``: what ``0/N nodes are available`` does not say.

For every node: the verdict, every plugin that rejects it and why (the scheduler's own reason
first), with the actual taint, affinity term, resource numbers or device taints; the
tolerations (pod tolerations, DeviceTolerations on a claim's request) that would let the pod
on, offered only when they alone make the node feasible; for the nodes that fit, the score of
each plugin. Computed by the scheduler's own code on the cluster as the API shows it now,
ResourceClaims, ResourceSlices, DeviceClasses and DeviceTaintRules included.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import click

from taintplane.cli.admin import talking_to
from taintplane.cli.explain_detail import detail
from taintplane.cli.explain_fixes import device_detail, failures, verified_fix
from taintplane.cli.kubeconfig import load_target
from taintplane.cli.text import columns
from taintplane.client import ApiError, Client, HTTPTransport, resource
from taintplane.client.informer import object_key
from taintplane.clock import RealClock
from taintplane.scheduler.framework import CycleState, Status
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names
from taintplane.scheduler.scheduler import (
    DEVICE_CLASSES,
    DEVICE_TAINT_RULES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    Scheduler,
)

__all__ = ["explain_command", "explain_pod"]

NODES = resource("", "v1", "nodes")
PODS = resource("", "v1", "pods")


async def _list(client: Client, rt: Any) -> list[dict[str, Any]]:
    """Every object of a kind; none when the server does not serve it (DeviceTaintRules are
    alpha, served only with their feature gate)."""
    try:
        items, _ = await client.list(rt)
    except ApiError as error:
        if error.code == 404:
            return []
        raise
    return items


async def _view(client: Client, pod: dict[str, Any]) -> Scheduler:
    """A scheduler that has seen the cluster as the API shows it now, less ``pod`` itself:
    nodes, pods, and the claims, slices, classes and DeviceTaintRules DynamicResources reads."""
    view = Scheduler(client, RealClock(), seed=0)
    for node_object in await _list(client, NODES):
        view._node_added(node_object)
    for other in await _list(client, PODS):
        if other["metadata"].get("uid") != pod["metadata"].get("uid"):
            view._pod_added(other)
    caches = view.dra_caches
    caches.claims = {object_key(c): c for c in await _list(client, RESOURCE_CLAIMS)}
    caches.slices = {object_key(s): s for s in await _list(client, RESOURCE_SLICES)}
    caches.classes = {object_key(c): c for c in await _list(client, DEVICE_CLASSES)}
    caches.rules = {object_key(r): r for r in await _list(client, DEVICE_TAINT_RULES)}
    return view


def _rejected_row(
    view: Scheduler,
    pending: dict[str, Any],
    state: CycleState | None,
    status: Status,
    node: NodeInfo,
    prefilter_rejected: bool,
) -> dict[str, Any]:
    """The scheduler's own verdict first, then every other plugin that rejects the node, and
    the tolerations that would make it feasible when there are such."""
    info = PodInfo.of(pending)
    found = [status]
    if state is not None and not prefilter_rejected:
        found += [s for s in failures(view, state, info, node) if s.plugin != status.plugin]
    rows = []
    tolerations: list[dict[str, Any]] = []
    for failure in found:
        text, suggested = detail(failure.plugin, info, node)
        if failure.plugin == names.DYNAMIC_RESOURCES and state is not None:
            text = device_detail(view, state, node)
        tolerations += suggested
        rows.append({"plugin": failure.plugin, "reason": failure.message, "detail": text})
    fix = None
    if state is not None and not prefilter_rejected:
        fix = verified_fix(view, pending, state, node, found, tolerations)
    works = fix is not None and not fix.remaining
    return {
        "node": node.name,
        "verdict": "rejected",
        **rows[0],
        "failures": rows,
        "tolerations": fix.pod_tolerations if fix is not None and works else [],
        "deviceTolerations": fix.device_tolerations if fix is not None and works else [],
        # Tolerations were tried and would not be enough: what would still reject the node.
        "stillRejectedBy": (
            [{"plugin": s.plugin, "reason": s.message} for s in fix.remaining]
            if fix is not None
            else []
        ),
        "scores": {},
        "total": None,
    }


async def explain_pod(client: Client, name: str, namespace: str) -> dict[str, Any]:
    pod = await client.get(PODS, name, namespace)
    view = await _view(client, pod)
    # As the scheduler would see it now: a bound pod is explained as if it were pending.
    pending = {**pod, "spec": {k: v for k, v in (pod.get("spec") or {}).items() if k != "nodeName"}}
    decision = view.explain(pending)
    rows = []
    diagnosis = decision.diagnosis
    statuses = diagnosis.node_statuses if diagnosis else {}
    prefilter_rejected = bool(diagnosis and diagnosis.pre_filter_message)
    for node in view.placement.node_order():
        status = statuses.get(node.name)
        if status is None and diagnosis and node.name not in decision.feasible:
            # Not filtered at all: a PreFilter rejected the pod, or named other nodes.
            status = diagnosis.absent_status
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
                    "failures": [],
                    "tolerations": [],
                    "deviceTolerations": [],
                    "stillRejectedBy": [],
                    "scores": scores,
                    "total": sum(scores.values()),
                }
            )
        else:
            rows.append(
                _rejected_row(view, pending, decision.state, status, node, prefilter_rejected)
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
            for index, failure in enumerate(row["failures"]):
                why = failure["reason"] + (f" ({failure['detail']})" if failure["detail"] else "")
                first = index == 0
                table.append(
                    (
                        row["node"] if first else "",
                        "rejected" if first else "",
                        failure["plugin"],
                        why,
                        "",
                    )
                )
    lines.append("")
    lines += columns(header, table)
    lines += _fixes(report["nodes"])
    return "\n".join(lines)


def _fixes(rows: list[dict[str, Any]]) -> list[str]:
    """One line per toleration; a node with several needs all of them together."""
    lines: list[str] = []
    for row in rows:
        for toleration in row["tolerations"]:
            lines.append(f"  {row['node']}: {json.dumps(toleration)}")
        for entry in row["deviceTolerations"]:
            where = (
                f"ResourceClaimTemplate {entry['template']}"
                if entry.get("template")
                else f"ResourceClaim {entry['claim']}"
            )
            lines.append(
                f"  {row['node']}: {where} request {entry['request']}: "
                + json.dumps(entry["toleration"])
            )
    if lines:
        lines = ["", "Tolerations that would let the pod onto rejected nodes:", *lines]
    short = [
        f"  {row['node']}: still rejected by "
        + ", ".join(f"{s['plugin']} ({s['reason']})" for s in row["stillRejectedBy"])
        for row in rows
        if row["stillRejectedBy"]
    ]
    if short:
        lines += ["", "Tolerations alone would not make these nodes feasible:", *short]
    return lines


@click.group("explain")
def explain_command() -> None:
    """Explain scheduling decisions.

    \b
    Example:
      taintplane explain pod web-0 -n shop
    """


@explain_command.command("pod")
@click.argument("name")
@click.option("-n", "--namespace", default=None, help="Namespace (default: the kubeconfig's).")
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="table: one line per node; json: the whole report, for scripts.",
)
@click.option("--kubeconfig", default=None, help="Path to the kubeconfig (default: $KUBECONFIG).")
def explain_pod_command(
    name: str, namespace: str | None, output: str, kubeconfig: str | None
) -> None:
    """For every node: fits or not, which plugin decided, why, and what would fix it.

    \b
    Examples:
      taintplane explain pod web-0 -n shop
      taintplane explain pod web-0 -n shop -o json
    """
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
