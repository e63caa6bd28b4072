"""``taintplane explain pod NAME``: what ``0/N nodes are available`` does not say, per node
(the report is :mod:`taintplane.scheduler.explain`'s, shared with the dashboard), printed as a
table or JSON."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import click

from taintplane.cli.admin import talking_to
from taintplane.cli.kubeconfig import load_target
from taintplane.cli.text import columns
from taintplane.client import Client, HTTPTransport
from taintplane.scheduler.explain import explain_pod

__all__ = ["explain_command", "explain_pod"]


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
