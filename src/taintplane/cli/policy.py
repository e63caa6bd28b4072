"""``taintplane policy who-can-land NODE``: which namespaces' pods can be placed on a node under
the cluster's admission configuration, scheduled and by ``spec.nodeName``."""

from __future__ import annotations

import json

import click

from taintplane.cli.admin import admin_call, kubeconfig_option

__all__ = ["policy_group"]


@click.group("policy")
def policy_group() -> None:
    """Questions about what the admission configuration allows.

    \b
    Example:
      taintplane policy who-can-land foo
    """


@policy_group.command("who-can-land")
@click.argument("node")
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="table: one line per namespace; json: the whole report, for scripts.",
)
@kubeconfig_option
def who_can_land_command(node: str, output: str, kubeconfig: str | None) -> None:
    """For every namespace: can its pods land on NODE, and why (not).

    \b
    Examples:
      taintplane policy who-can-land foo
      taintplane policy who-can-land foo -o json
    """
    report = admin_call(kubeconfig, "GET", f"policy/who-can-land/{node}")
    if output == "json":
        click.echo(json.dumps(report, indent=2))
        return
    rows = [("NAMESPACE", "SCHEDULED", "DIRECT", "WHY")]
    for row in report["namespaces"]:
        rows.append(
            (
                row["namespace"],
                "yes" if row["scheduled"] else "no",
                "yes" if row["direct"] else "no",
                row["why"],
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        click.echo("   ".join(cell.ljust(widths[i]) for i, cell in enumerate(r[:3])) + "   " + r[3])
    for warning in report.get("warnings") or []:
        click.echo(f"warning: {warning}", err=True)
