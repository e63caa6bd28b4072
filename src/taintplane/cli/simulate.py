"""``taintplane simulate SCENARIO.yaml [--report FILE.html]``: play a scenario (a cluster, what
runs on it, and what happens to it) on virtual time, and show what followed.

The scenario format is in :mod:`taintplane.sim.scenario` and the README.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import click

from taintplane.api.duration import format_duration
from taintplane.api.features import FeatureGates, UnknownFeatureGateError
from taintplane.cli.errors import InputFileError
from taintplane.cli.logs import quiet_components
from taintplane.cli.progress import progress_option, run_shown
from taintplane.cli.text import columns
from taintplane.sim.report_html import render_html
from taintplane.sim.scenario import ScenarioError, load_scenario
from taintplane.sim.simulate import SimulationReport, run_scenario, shown_timeline

__all__ = ["simulate_command"]

#: Timeline lines printed as text before pointing at --report or -o json.
TEXT_TIMELINE_LINES = 200


@click.command("simulate")
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--report",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE.html",
    help="Also write a page with charts of pods and nodes over time, the steps and the timeline.",
)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: counts, the steps and the timeline (its first 200 lines); json: all of it.",
)
@click.option(
    "--feature-gates",
    default="",
    metavar="A=true,B=false",
    help="Kubernetes feature gates of the simulated cluster, as for `taintplane up`.",
)
@progress_option
def simulate_command(
    scenario: Path, report: Path | None, output: str, feature_gates: str, progress: bool | None
) -> None:
    """Play SCENARIO (nodes or pools, objects, and steps such as taints, stopped kubelets or
    zones, node conditions, at offsets) on a fresh cluster on virtual time; print what
    happened and when.

    \b
    Examples:
      taintplane simulate zone-outage.yaml --report outage.html
      taintplane simulate zone-outage.yaml -o json
    """
    quiet_components()
    try:
        features = FeatureGates.parse(feature_gates)
    except (ValueError, UnknownFeatureGateError) as error:
        raise click.UsageError(f"--feature-gates: {error}") from error
    try:
        played = load_scenario(scenario)
    except ScenarioError as error:
        raise InputFileError(str(error)) from error
    if report is not None:
        _check_writable(report)
    result = run_shown(
        progress,
        "simulated",
        "simulating",
        played.until,
        lambda shown: run_scenario(played, features=features, progress=shown),
    )
    if report is not None:
        try:
            report.write_text(render_html(result))
        except OSError as error:
            raise click.ClickException(
                f"cannot write {report}: {error.strerror or error}"
            ) from error
    if output == "json":
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        click.echo(render_text(result, report))


def _check_writable(report: Path) -> None:
    """Before minutes of simulation, not after: opened for appending, so an existing report
    is kept until the new one replaces it, and a file made only for this check is removed."""
    existed = report.exists()
    try:
        with report.open("a"):
            pass
    except OSError as error:
        raise click.ClickException(f"cannot write {report}: {error.strerror or error}") from error
    if not existed:
        report.unlink()


def render_text(result: SimulationReport, report: Path | None) -> str:
    def offset(at: datetime) -> str:
        return "+" + format_duration(result.offset(at))

    lines = [
        f"Simulated {result.name!r}: {result.nodes} nodes from "
        f"{result.start.strftime('%Y-%m-%dT%H:%M:%SZ')} for "
        f"{format_duration(result.offset(result.end))}.",
        "",
        "Steps:",
    ]
    lines += [
        f"  {number}. {offset(at)}  {step.summary}"
        for number, (at, step) in enumerate(result.steps, 1)
    ]
    shown, routine, more = shown_timeline(result.timeline, TEXT_TIMELINE_LINES)
    lines.append("")
    lines += columns(
        ("TIME", "EVENT", "OBJECT", "DETAIL"),
        [(offset(h.at), h.event, h.object, h.detail) for h in shown],
    )
    if routine:
        lines.append(
            f"… {routine} routine pod happenings (created, scheduled, running, succeeded) "
            "left out; -o json has every one"
        )
    if more:
        lines.append(f"… and {more} more after these; -o json has every one")
    counts = ", ".join(f"{event} {count}" for event, count in result.counts().items())
    lines += ["", f"Happened: {counts or 'nothing'}."]
    if result.samples:
        last = result.samples[-1]
        lines.append(
            f"At the end: {last.running} pods running, {last.pending} pending, "
            f"{last.terminating} terminating; {last.nodes_ready} of {result.nodes} nodes Ready."
        )
    if report is not None:
        lines.append(f"Report: {report}")
    return "\n".join(lines)
