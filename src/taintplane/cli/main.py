"""Entry point of the ``taintplane`` command."""

from __future__ import annotations

import click

from taintplane import __version__
from taintplane.cli.clock import clock_group
from taintplane.cli.explain import explain_command
from taintplane.cli.node import node_group
from taintplane.cli.up import serve_command, up_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__, "--version", prog_name="taintplane", message="%(prog)s %(version)s"
)
def cli() -> None:
    """taintplane: a Kubernetes-compatible control plane for taints and tolerations."""


cli.add_command(up_command)
cli.add_command(serve_command)
cli.add_command(explain_command)
cli.add_command(clock_group)
cli.add_command(node_group)


def main() -> None:
    cli()
