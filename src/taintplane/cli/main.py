"""Entry point of the ``taintplane`` command.

Subcommands are imported when used: ``taintplane clock now`` should not pay for loading the
API server, the scheduler and NumPy.
"""

from __future__ import annotations

import importlib

import click

from taintplane import __version__

#: Command name -> "module:attribute" of its click command.
_COMMANDS = {
    "up": "taintplane.cli.up_cluster:up_command",
    "get": "taintplane.cli.lifecycle:get_group",
    "stop": "taintplane.cli.lifecycle:stop_command",
    "delete": "taintplane.cli.lifecycle:delete_command",
    "serve": "taintplane.cli.up:serve_command",
    "explain": "taintplane.cli.explain:explain_command",
    "clock": "taintplane.cli.clock:clock_group",
    "node": "taintplane.cli.node:node_group",
    "device": "taintplane.cli.device:device_group",
    "scheduler": "taintplane.cli.components:scheduler_command",
    "controller-manager": "taintplane.cli.components:controller_manager_command",
    "agents": "taintplane.cli.components:agents_command",
    "dedicate": "taintplane.cli.dedicate:dedicate_group",
    "policy": "taintplane.cli.policy:policy_group",
    "taint": "taintplane.cli.taint_devices:taint_group",
    "what-if": "taintplane.cli.whatif:what_if_group",
    "simulate": "taintplane.cli.simulate:simulate_command",
    "bench": "taintplane.cli.bench:bench_command",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, attribute = target.split(":")
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__, "--version", prog_name="taintplane", message="%(prog)s %(version)s"
)
def cli() -> None:
    """taintplane: a Kubernetes-compatible control plane for taints and tolerations.

    \b
    Examples:
      taintplane up -d                    # a cluster in the background; kubectl works at once
      kubectl taint nodes node-1 dedicated=banana:NoSchedule
      taintplane what-if taint nodes node-2 maintenance:NoExecute
      taintplane delete

    Exit codes: 0 done, 1 failed, 2 usage or input file error.
    """


def main() -> None:
    cli()
