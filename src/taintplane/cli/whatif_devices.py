"""``taintplane what-if taint devices (DRIVER[/POOL[/DEVICE]] | -f RULE.yaml) KEY[=VALUE]:EFFECT``:
which pods a device taint would evict and when, where their claims are allocated next, and
which stay Pending and why — before anyone creates the rule.

The selection and taint are those of ``taintplane taint devices`` (the rule it would create,
with the same name); ``-f`` takes a DeviceTaintRule manifest instead (a taint argument then
overrides its taint). The question is put to a copy of the cluster on virtual time; see
:mod:`taintplane.sim.whatif_devices`.
"""

from __future__ import annotations

import json
import shlex
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from taintplane.api.duration import format_duration
from taintplane.api.features import FeatureGates
from taintplane.cli.errors import InputFileError
from taintplane.cli.progress import run_shown
from taintplane.cli.taint_devices import Selection, parse_device_taint, rule_name
from taintplane.cli.text import columns
from taintplane.sim.snapshot import SnapshotError, load_yaml_documents, objects_of
from taintplane.sim.whatif_devices import (
    DevicePlan,
    DeviceWhatIfReport,
    default_device_window,
    run_device_what_if,
)

__all__ = ["device_plan", "render_device_text", "run_devices"]


def _rule_from_file(path: Path) -> dict[str, Any]:
    try:
        found = objects_of(load_yaml_documents(path.read_text()), str(path))
    except (OSError, SnapshotError) as error:
        raise InputFileError(str(error)) from error
    rules = [o for o in found if o.get("kind") == "DeviceTaintRule"]
    if len(rules) != 1:
        raise InputFileError(f"{path}: expected one DeviceTaintRule, found {len(rules)}")
    return rules[0]


def device_plan(args: tuple[str, ...], filename: Path | None) -> DevicePlan:
    """The rule ``taintplane taint devices`` would create for ``args`` (SELECTION TAINT), or
    the one in ``filename`` (with ``args``' TAINT, if any, as its taint)."""
    if filename is not None:
        if len(args) > 1:
            raise click.UsageError("with -f, give at most one taint (KEY[=VALUE]:EFFECT)")
        rule = _rule_from_file(filename)
        if args:
            rule.setdefault("spec", {})["taint"] = _taint(args[0])
        if not ((rule.get("spec") or {}).get("taint") or {}).get("effect"):
            raise click.UsageError(f"{filename}: the rule has no taint effect")
        rule.setdefault("metadata", {}).setdefault("name", "what-if")
        rule["apiVersion"], rule["kind"] = "resource.k8s.io/v1alpha3", "DeviceTaintRule"
        return DevicePlan(rule)
    if len(args) != 2:
        raise click.UsageError(
            "what-if taint devices needs DRIVER[/POOL[/DEVICE]] and KEY[=VALUE]:EFFECT "
            "(or -f RULE.yaml)"
        )
    selection = Selection.parse(args[0])
    taint = _taint(args[1])
    return DevicePlan(
        {
            "apiVersion": "resource.k8s.io/v1alpha3",
            "kind": "DeviceTaintRule",
            "metadata": {"name": rule_name(selection, taint["key"])},
            "spec": {"deviceSelector": selection.selector(), "taint": taint},
        }
    )


def _taint(spec: str) -> dict[str, Any]:
    taint, remove = parse_device_taint(spec)
    if remove:
        raise click.UsageError("what-if taint devices adds a taint: KEY[=VALUE]:EFFECT")
    return taint.to_dict()


def run_devices(
    args: tuple[str, ...],
    filename: Path | None,
    objects: list[dict[str, Any]],
    start: datetime,
    window: float | None,
    features: FeatureGates,
    output: str,
    progress: bool | None = None,
) -> None:
    plan = device_plan(args, filename)
    if window is None:
        window = default_device_window(objects, plan)
    span = window
    report = run_shown(
        progress,
        "predicted",
        "predicting",
        span,
        lambda shown: run_device_what_if(
            objects, plan, start=start, window=span, features=features, progress=shown
        ),
    )
    if output == "json":
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        given = ["taintplane", "what-if", "taint", "devices", *args]
        given += ["-f", str(filename)] if filename is not None else []
        click.echo(render_device_text(report, shlex.join(given)))


def _offset(report: DeviceWhatIfReport, moment: datetime | None) -> str:
    return "-" if moment is None else "+" + format_duration(report.offset(moment))


def render_device_text(report: DeviceWhatIfReport, command: str) -> str:
    taint = report.plan.taint
    lines = [
        f"What if: {command}",
        f"DeviceTaintRule {report.plan.name}: {taint.to_string()} on "
        + (", ".join("/".join(d) for d in report.devices) or "no published device"),
        f"Simulated from {report.start.strftime('%Y-%m-%dT%H:%M:%SZ')} for "
        f"{format_duration(report.offset(report.end))} (nothing was changed in the cluster).",
        "",
    ]
    lines += columns(
        ("TIME", "EVENT", "OBJECT", "DETAIL"),
        [(_offset(report, h.at), h.event, h.object, h.detail) for h in report.timeline],
    )
    if report.affected:
        lines += ["", "Pods using the selected devices:"]
        lines += columns(
            ("NAMESPACE", "POD", "NODE", "OUTCOME", "AT", "WHY"),
            [
                (p.namespace, p.name, p.node, p.outcome, _offset(report, p.at), p.detail)
                for p in report.affected
            ],
        )
    if report.replacements:
        lines += ["", "Pods created meanwhile:"]
        lines += columns(
            ("NAMESPACE", "POD", "OWNER", "NODE", "CLAIMS", "DETAIL"),
            [
                (
                    r.namespace,
                    r.name,
                    r.owner or "-",
                    r.node or ("<none>" if r.gone else "<pending>"),
                    "; ".join(report.allocations.get(f"{r.namespace}/{r.name}", [])) or "-",
                    r.detail,
                )
                for r in report.replacements
            ],
        )
    if report.not_simulated:
        lines += ["", "Not simulated: " + ", ".join(report.not_simulated)]
    evicted = sum(1 for p in report.affected if p.outcome == "evicted")
    placed = Counter(r.node for r in report.replacements if r.node)
    pending = sum(1 for r in report.replacements if r.pending)
    where = ", ".join(f"{node}: {count}" for node, count in sorted(placed.items()))
    lines += [
        "",
        f"Summary: {len(report.devices)} device(s) selected, {len(report.affected)} pod(s) "
        f"using them, {evicted} evicted; {len(report.replacements)} pod(s) created, "
        f"{sum(placed.values())} scheduled"
        + (f" ({where})" if where else "")
        + f", {pending} pending.",
    ]
    return "\n".join(lines)
