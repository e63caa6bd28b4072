"""``taintplane clock now`` and ``taintplane clock advance DURATION``."""

from __future__ import annotations

import click

from taintplane.api.duration import DurationError, parse_duration
from taintplane.cli.admin import admin_call, kubeconfig_option

__all__ = ["clock_group"]


@click.group("clock")
def clock_group() -> None:
    """Read the cluster's clock, or move a virtual one forward."""


@clock_group.command("now")
@kubeconfig_option
def now_command(kubeconfig: str | None) -> None:
    """Print the cluster's current time (RFC 3339, UTC)."""
    click.echo(admin_call(kubeconfig, "GET", "clock")["now"])


class _DurationCommand(click.Command):
    """Takes "-5s" or "-.5h" as the DURATION (to refuse it clearly), not as options."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        negative = [a for a in args if len(a) > 1 and a[0] == "-" and a[1] in "0123456789."]
        if negative:
            args = [a for a in args if a not in negative] + ["--", *negative]
        return super().parse_args(ctx, args)


@clock_group.command("advance", cls=_DurationCommand)
@click.argument("duration")
@kubeconfig_option
def advance_command(duration: str, kubeconfig: str | None) -> None:
    """Move a virtual clock forward by DURATION (Go syntax: 90s, 5m, 1h30m) and return once
    everything due by then has run; prints the new time."""
    try:
        seconds = parse_duration(duration)
    except DurationError as error:
        raise click.BadParameter(
            f"{error} (use e.g. 30s, 5m, 1h30m)", param_hint="DURATION"
        ) from error
    if seconds < 0:
        raise click.BadParameter(
            "a clock cannot go back: use a positive duration", param_hint="DURATION"
        )
    click.echo(admin_call(kubeconfig, "POST", "clock/advance", {"seconds": seconds})["now"])
