"""``taintplane what-if taint nodes NAME… KEY[=VALUE]:EFFECT``: who is evicted, when, and where
they go, before anyone applies the taint.

The question is put to a copy of the cluster (the live one read over its API, or a snapshot
file) on virtual time; see :mod:`taintplane.sim.whatif`. Nothing is changed in the cluster.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import click
import httpx

from taintplane.api.duration import DurationError, format_duration, parse_duration
from taintplane.api.features import FeatureGates, UnknownFeatureGateError
from taintplane.api.selectors import LabelSelector, parse_label_selector
from taintplane.api.taint_spec import TaintSpecError, parse_taint_command, validate_taint_command
from taintplane.cli.errors import InputFileError
from taintplane.cli.kubeconfig import Target, load_target
from taintplane.cli.logs import quiet_components
from taintplane.cli.progress import progress_option, run_shown
from taintplane.cli.text import columns
from taintplane.cli.whatif_devices import run_devices
from taintplane.client import ApiError, Client, HTTPTransport
from taintplane.clock import RealClock
from taintplane.sim.snapshot import SnapshotError, read_live, read_snapshot_file, snapshot_instant
from taintplane.sim.whatif import PLACEMENT_NOTE, WhatIfReport, run_what_if
from taintplane.sim.whatif_outcomes import Replacement
from taintplane.sim.whatif_plan import WhatIfError, default_window, resolve_plan

__all__ = ["what_if_group"]

#: What ``what-if taint`` accepts for devices (there is no such kubectl resource).
DEVICE_RESOURCE_NAMES = frozenset({"devices", "device"})


@click.group("what-if")
def what_if_group() -> None:
    """Try a change on a copy of the cluster, on virtual time, and see what it would do.

    \b
    Example:
      taintplane what-if taint nodes node-1 node-2 maintenance=true:NoExecute
    """


@what_if_group.command("taint")
@click.argument("args", nargs=-1, required=True)
@click.option(
    "--snapshot",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Start from this file (what `kubectl get nodes,pods,replicasets,deployments,"
    "daemonsets,poddisruptionbudgets -A -o yaml` prints) instead of the live cluster.",
)
@click.option(
    "--until",
    default=None,
    metavar="DURATION",
    help="How much time to simulate (default: until the last eviction the taint causes, its "
    "grace period, and 5m for replacements to start).",
)
@click.option("-l", "--selector", default="", help="Taint the nodes matching this label selector.")
@click.option("--all", "all_nodes", is_flag=True, help="Taint every node.")
@click.option("--overwrite", is_flag=True, help="Replace a taint with the same key and effect.")
@click.option(
    "-o",
    "--output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: a summary and a timeline; json: the same, whole, for scripts.",
)
@click.option(
    "--feature-gates",
    default="",
    metavar="A=true,B=false",
    help="Feature gates of the simulated cluster (set them as the real one's).",
)
@click.option(
    "-f",
    "--filename",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="what-if taint devices: the DeviceTaintRule to try (instead of a selection).",
)
@click.option("--kubeconfig", metavar="PATH", help="Kubeconfig of the live cluster.")
@progress_option
def what_if_taint_command(
    args: tuple[str, ...],
    snapshot: Path | None,
    until: str | None,
    selector: str,
    all_nodes: bool,
    overwrite: bool,
    output: str,
    feature_gates: str,
    filename: Path | None,
    kubeconfig: str | None,
    progress: bool | None,
) -> None:
    """What `kubectl taint nodes NAME… KEY[=VALUE]:EFFECT` would do: which pods are evicted,
    when, and where their replacements go. The same arguments as kubectl taint (KEY:EFFECT-
    and KEY- remove taints); the cluster itself is not changed.

    `what-if taint devices (DRIVER[/POOL[/DEVICE]] | -f RULE.yaml) KEY[=VALUE]:EFFECT` asks
    the same of a DeviceTaintRule: which pods using the devices are evicted when, where their
    claims are allocated next, which stay Pending and why.

    \b
    Examples:
      taintplane what-if taint nodes node-1 maintenance=true:NoExecute
      taintplane what-if taint nodes -l topology.kubernetes.io/zone=a outage:NoExecute --until 1h
      taintplane what-if taint nodes worker-3 maint:NoExecute --snapshot snapshot.yaml -o json
      taintplane what-if taint devices gpu.example.com/node-1/gpu-0 overheating:NoExecute
    """
    quiet_components()
    devices = bool(args) and args[0] in DEVICE_RESOURCE_NAMES
    if not devices:
        if filename is not None:
            raise click.UsageError("-f takes a DeviceTaintRule: what-if taint devices -f FILE")
        try:
            resources, changes = parse_taint_command(args)
            validate_taint_command(resources, changes, all_nodes=all_nodes, selector=selector)
        except TaintSpecError as error:
            raise click.UsageError(error.message) from error
    label_selector: LabelSelector | None = None
    if selector:
        try:
            label_selector = parse_label_selector(selector)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--selector") from error
    window: float | None = None
    if until is not None:
        try:
            window = parse_duration(until)
        except DurationError as error:
            raise click.BadParameter(
                f"{error} (use e.g. 30m, 1h30m)", param_hint="--until"
            ) from error
        if window < 0:
            raise click.BadParameter(
                "a duration to simulate cannot be negative", param_hint="--until"
            )
    try:
        features = FeatureGates.parse(feature_gates)
    except (ValueError, UnknownFeatureGateError) as error:
        raise click.UsageError(f"--feature-gates: {error}") from error

    objects, start = _read_cluster(snapshot, kubeconfig)
    if devices:
        run_devices(args[1:], filename, objects, start, window, features, output, progress)
        return
    try:
        plan = resolve_plan(
            objects,
            resources,
            changes,
            selector=label_selector,
            all_nodes=all_nodes,
            overwrite=overwrite,
            allow_no_match=True,
        )
    except WhatIfError as error:
        raise click.ClickException(str(error)) from error
    if not plan.nodes:
        # kubectl taint -l/--all matching nothing prints nothing and succeeds: so does this.
        nothing = _nothing_matched(selector)
        if output == "json":
            click.echo(json.dumps({"nodes": [], "summary": nothing}, indent=2))
        else:
            click.echo(nothing)
        return
    if window is None:
        window = default_window(objects, plan)

    resolved = plan
    report = run_shown(
        progress,
        "predicted",
        "predicting",
        window,
        lambda shown: run_what_if(
            objects, resolved, start=start, window=window, features=features, progress=shown
        ),
    )
    if output == "json":
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        click.echo(
            render_text(
                report, taint_command(args, selector, all_nodes=all_nodes, overwrite=overwrite)
            )
        )


def _nothing_matched(selector: str) -> str:
    if selector:
        return f"No node matches -l {selector}: nothing would change."
    return "There are no nodes: nothing would change."


def taint_command(args: tuple[str, ...], selector: str, *, all_nodes: bool, overwrite: bool) -> str:
    """The kubectl taint command the question is about, as given: a reader can run it."""
    words = ["kubectl", "taint", *args]
    words += ["-l", selector] if selector else []
    words += ["--all"] if all_nodes else []
    words += ["--overwrite"] if overwrite else []
    return shlex.join(words)


def _read_cluster(
    snapshot: Path | None, kubeconfig: str | None
) -> tuple[list[dict[str, Any]], datetime]:
    """The objects to start from and the instant to start at."""
    if snapshot is not None:
        try:
            objects = read_snapshot_file(snapshot)
        except SnapshotError as error:
            raise InputFileError(str(error)) from error
        if not any(o.get("kind") == "Node" for o in objects):
            raise InputFileError(
                f"snapshot {snapshot} has no nodes: make it with `kubectl get nodes,pods,"
                "replicasets,deployments,daemonsets,poddisruptionbudgets -A -o yaml`"
            )
        return objects, snapshot_instant(objects) or RealClock().now()
    target = load_target(kubeconfig)
    try:
        return asyncio.run(_read_live(target))
    except ApiError as error:
        raise click.ClickException(f"{error} (from {target.server})") from error
    except (OSError, httpx.TransportError) as error:
        raise click.ClickException(
            f"cannot reach the cluster at {target.server}: {error}; is it running?"
        ) from error


async def _read_live(target: Target) -> tuple[list[dict[str, Any]], datetime]:
    transport = HTTPTransport(target.server, token=target.token, verify=target.verify)
    try:
        client = Client(transport)
        objects = await read_live(client)
        return objects, await _cluster_now(client)
    finally:
        await transport.close()


async def _cluster_now(client: Client) -> datetime:
    """A taintplane cluster's own clock (it may be virtual); the wall clock for any other."""
    try:
        answer = await client.get_path("/taintplane/v1/clock")
    except ApiError:
        return RealClock().now()
    return datetime.fromisoformat(str(answer["now"]).replace("Z", "+00:00"))


# ---- text report -------------------------------------------------------------------------------


def _offset(report: WhatIfReport, moment: datetime | None) -> str:
    return "-" if moment is None else "+" + format_duration(report.offset(moment))


def render_text(report: WhatIfReport, command: str | None = None) -> str:
    plan = report.plan
    if command is None:
        changes = [t.to_string() for t in plan.changes.add] + [
            t.to_string() + "-" for t in plan.changes.remove
        ]
        given = ["kubectl", "taint", "nodes", *plan.nodes, *changes]
        command = shlex.join(given + (["--overwrite"] if plan.overwrite else []))
    lines = [
        f"What if: {command}",
        f"Simulated from {report.start.strftime('%Y-%m-%dT%H:%M:%SZ')} for "
        f"{format_duration(report.offset(report.end))} (nothing was changed in the cluster).",
        "",
    ]
    if not set(plan.nodes) <= set(shlex.split(command)):
        # Chosen by -l or --all: say which nodes that was.
        lines[1:1] = [f"Nodes: {' '.join(plan.nodes)}"]
    lines[2:2] = [f"Warning: {warning}" for warning in report.warnings]
    lines += columns(
        ("TIME", "EVENT", "OBJECT", "DETAIL"),
        [(_offset(report, h.at), h.event, h.object, h.detail) for h in report.timeline],
    )
    if report.affected:
        lines += ["", "Pods on the tainted nodes:"]
        lines += columns(
            ("NAMESPACE", "POD", "NODE", "OUTCOME", "AT", "WHY"),
            [
                (p.namespace, p.name, p.node, p.outcome, _offset(report, p.at), p.detail)
                for p in report.affected
            ],
        )
    if report.replacements:
        lines += ["", "Pods created meanwhile:"]
        lines += _placed_columns(report.replacements)
    if report.scheduled_pending:
        lines += ["", "Pending pods scheduled meanwhile:"]
        lines += _placed_columns(report.scheduled_pending)
    if report.not_simulated:
        lines += [
            "",
            "Not simulated (the copy runs without them): " + ", ".join(report.not_simulated),
        ]
    if any(r.node for r in [*report.replacements, *report.scheduled_pending]):
        lines += ["", f"Note: {PLACEMENT_NOTE}."]
    lines += ["", _summary(report)]
    return "\n".join(lines)


def _placed_columns(pods: list[Replacement]) -> list[str]:
    return columns(
        ("NAMESPACE", "POD", "OWNER", "NODE", "DETAIL"),
        [
            (
                r.namespace,
                r.name,
                r.owner or "-",
                r.node or ("<none>" if r.gone else "<pending>"),
                r.detail,
            )
            for r in pods
        ],
    )


def _summary(report: WhatIfReport) -> str:
    evicted = sum(1 for p in report.affected if p.outcome == "evicted")
    placed = Counter(r.node for r in report.replacements if r.node)
    pending = sum(1 for r in report.replacements if r.pending)
    where = ", ".join(f"{node}: {count}" for node, count in sorted(placed.items()))
    deleted = sum(1 for p in report.affected if p.outcome == "deleted")
    terminating = sum(1 for p in report.affected if p.outcome == "terminating")
    created = len(report.replacements)
    text = (
        f"Summary: of {_count(len(report.affected), 'pod')} on the tainted nodes, {evicted} "
        f"evicted, {deleted} deleted"
    )
    text += f", {terminating} already terminating" if terminating else ""
    text += f"; {_count(created, 'pod')} created, {sum(placed.values())} scheduled"
    text += f" ({where})" if where else ""
    text += f", {pending} pending"
    if report.scheduled_pending:
        landed = Counter(r.node for r in report.scheduled_pending if r.node)
        text += (
            f"; {len(report.scheduled_pending)} Pending "
            f"{'pod' if len(report.scheduled_pending) == 1 else 'pods'} scheduled ("
            + ", ".join(f"{node}: {count}" for node, count in sorted(landed.items()))
            + ")"
        )
    return text + "."


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
