"""``taintplane clock now``, ``clock advance DURATION`` and ``clock sync``."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import click

from taintplane.api.duration import DurationError, format_duration, parse_duration
from taintplane.cli.admin import admin_call, kubeconfig_option
from taintplane.cli.clock_progress import advance_showing_progress
from taintplane.cli.progress import progress_option, wants_progress
from taintplane.clock import RealClock

__all__ = ["clock_group"]


@click.group("clock")
def clock_group() -> None:
    """Read the cluster's clock, or move a virtual one forward.

    \b
    Examples:
      taintplane clock now
      taintplane clock advance 5m
      taintplane clock sync
    """


@clock_group.command("now")
@kubeconfig_option
def now_command(kubeconfig: str | None) -> None:
    """Print the cluster's current time (RFC 3339, UTC).

    \b
    Example:
      taintplane clock now
    """
    click.echo(admin_call(kubeconfig, "GET", "clock")["now"])


class _DurationCommand(click.Command):
    """Takes "-5s" or "-.5h" as the DURATION (to refuse it clearly), not as options."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        negative = [a for a in args if len(a) > 1 and a[0] == "-" and a[1] in "0123456789."]
        if negative:
            # One "--" before them; the user's own (clock advance -- -5m) would be the
            # DURATION otherwise.
            args = [a for a in args if a not in negative and a != "--"] + ["--", *negative]
        return super().parse_args(ctx, args)


@clock_group.command("advance", cls=_DurationCommand)
@click.argument("duration")
@kubeconfig_option
@progress_option
def advance_command(duration: str, kubeconfig: str | None, progress: bool | None) -> None:
    """Move a virtual clock forward by DURATION (Go syntax: 90s, 5m, 1h30m) and return once
    everything due by then has run; prints the new time.

    On a terminal (or with --progress), stderr shows how far the cluster has got and how
    fast, then one line of totals: "advanced 1h of cluster time in 2.1s (1714x): 812
    objects written (387/s), 95 events (45/s)".

    \b
    Example:
      taintplane clock advance 1h30m
    """
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
    if wants_progress(progress):
        click.echo(advance_showing_progress(kubeconfig, seconds, progress)["now"])
        return
    click.echo(admin_call(kubeconfig, "POST", "clock/advance", {"seconds": seconds})["now"])


@clock_group.command("sync")
@kubeconfig_option
def sync_command(kubeconfig: str | None) -> None:
    """Move a virtual clock forward to the wall clock (whole seconds), running everything due
    meanwhile as `clock advance` does; prints the new time.

    A virtual clock stands still while the wall clock moves on, and kubectl reckons some ages
    on the wall clock (the events `kubectl describe` lists): after a sync they read true
    again. A clock that was advanced past the wall clock cannot go back: sync says
    by how much it is ahead.

    \b
    Example:
      taintplane clock sync
    """
    state = admin_call(kubeconfig, "GET", "clock")
    if not state.get("virtual"):
        click.echo(f"{state['now']} (the cluster runs on the wall clock: nothing to sync)")
        return
    cluster = datetime.fromisoformat(str(state["now"]).replace("Z", "+00:00"))
    wall = RealClock().now().astimezone(UTC)
    behind = (wall - cluster).total_seconds()
    if behind <= -1:
        ahead = format_duration(math.floor(-behind))
        raise click.ClickException(
            f"the cluster's clock ({state['now']}) is {ahead} ahead of the wall clock "
            f"({wall.strftime('%Y-%m-%dT%H:%M:%SZ')}), and a clock cannot go back: kubectl "
            f"reckons the ages of events on the wall clock, so they read <invalid> for "
            f"another {ahead}"
        )
    seconds = math.floor(behind) if behind > 0 else 0
    click.echo(admin_call(kubeconfig, "POST", "clock/advance", {"seconds": seconds})["now"])
