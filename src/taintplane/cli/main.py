"""Entry point of the ``taintplane`` command."""

from __future__ import annotations

import click

from taintplane import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__, "--version", prog_name="taintplane", message="%(prog)s %(version)s"
)
def cli() -> None:
    """taintplane: a Kubernetes-compatible control plane for taints and tolerations."""


def main() -> None:
    cli()
