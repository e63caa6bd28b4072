"""``taintplane node stop|start|condition``: fault injection on simulated nodes."""

from __future__ import annotations

import click

from taintplane.cli.admin import admin_call, kubeconfig_option

__all__ = ["node_group"]


@click.group("node")
def node_group() -> None:
    """Make simulated nodes fail and recover (the nodes `taintplane up` runs).

    \b
    Examples:
      taintplane node stop node-2
      taintplane node stop --zone zone-a
      taintplane node condition node-1 MemoryPressure=True
    """


def _targets(names: tuple[str, ...], zone: str | None) -> list[str]:
    if zone and names:
        raise click.UsageError("give node names or --zone, not both")
    if not zone and not names:
        raise click.UsageError("name at least one node, or pass --zone ZONE")
    return [f"zones/{zone}"] if zone else [f"nodes/{name}" for name in names]


@node_group.command("stop")
@click.argument("names", nargs=-1)
@click.option("--zone", help="Every simulated node of this zone (a partition).")
@kubeconfig_option
def stop_command(names: tuple[str, ...], zone: str | None, kubeconfig: str | None) -> None:
    """Stop the kubelets of NAMES: no more heartbeats, no pod work.

    \b
    Example:
      taintplane node stop node-2 node-3
    """
    for target in _targets(names, zone):
        done = admin_call(kubeconfig, "POST", f"{target}/stop")
        for name in done["nodes"]:
            click.echo(f"node/{name} stopped")


@node_group.command("start")
@click.argument("names", nargs=-1)
@click.option("--zone", help="Every simulated node of this zone.")
@kubeconfig_option
def start_command(names: tuple[str, ...], zone: str | None, kubeconfig: str | None) -> None:
    """Start the kubelets of NAMES again.

    \b
    Example:
      taintplane node start node-2
    """
    for target in _targets(names, zone):
        done = admin_call(kubeconfig, "POST", f"{target}/start")
        for name in done["nodes"]:
            click.echo(f"node/{name} started")


@node_group.command("condition")
@click.argument("name")
@click.argument("condition", metavar="TYPE=STATUS")
@kubeconfig_option
def condition_command(name: str, condition: str, kubeconfig: str | None) -> None:
    """Have NAME's kubelet report a condition, e.g. MemoryPressure=True or Ready=False.

    \b
    Example:
      taintplane node condition node-1 DiskPressure=True
    """
    type_, sep, status = condition.partition("=")
    if not sep or not type_ or not status:
        raise click.BadParameter(
            "expected TYPE=STATUS, e.g. MemoryPressure=True", param_hint="TYPE=STATUS"
        )
    admin_call(kubeconfig, "POST", f"nodes/{name}/condition", {"type": type_, "status": status})
    click.echo(f"node/{name} condition {type_}={status}")
