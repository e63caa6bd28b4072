"""``taintplane get clusters``, ``taintplane stop [NAME]`` and ``taintplane delete [NAME]``:
the clusters ``up`` made, found by name from any directory (see ``clusters``)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import click
import httpx

from taintplane.cli.clusters import (
    DEFAULT_NAME,
    ClusterRecord,
    NameType,
    holder,
    holder_pid,
    holder_url,
    list_records,
    load_record,
    remove_data_dir,
    remove_record,
    simulated_nodes,
)
from taintplane.cli.contexts import merge_path, remove_context
from taintplane.cli.kubeconfig import load_target
from taintplane.cli.text import columns

__all__ = ["delete_command", "get_group", "stop_command"]

STOP_TIMEOUT = 60.0  # seconds: closing flushes the store and cuts watches (1 s grace)


@click.group("get")
def get_group() -> None:
    """List taintplane's own objects (clusters); use kubectl for the cluster's.

    \b
    Example:
      taintplane get clusters
    """


@get_group.command("clusters")
def get_clusters_command() -> None:
    """List the clusters `taintplane up` made: name, URL, state, nodes.

    NODES counts the cluster's Node objects while it runs, and the simulated nodes it starts
    with when it is stopped.

    \b
    Example:
      taintplane get clusters
    """
    records = list_records()
    if not records:
        click.echo("No clusters found.", err=True)
        return
    rows = []
    for record in records:
        running = holder(record.data_dir)
        if running is None:
            known = simulated_nodes(record.data_dir)
            rows.append([record.name, "-", "Stopped", str(len(known)) if known else "-"])
        else:
            url = holder_url(running) or "-"
            rows.append([record.name, url, "Running", _count_nodes(record.data_dir)])
    for line in columns(["NAME", "URL", "STATE", "NODES"], rows):
        click.echo(line)


def _count_nodes(data_dir: Path) -> str:
    """One page of one Node: the count is that plus remainingItemCount (cheap at any size)."""
    try:
        target = load_target(str(data_dir / "kubeconfig"))
        headers = {"Authorization": f"Bearer {target.token}"} if target.token else {}
        response = httpx.get(
            f"{target.server}/api/v1/nodes",
            params={"limit": 1},
            headers=headers,
            verify=target.verify,
            timeout=5,
        )
        body = response.json()
        items = len(body.get("items") or [])
        return str(items + int(body.get("metadata", {}).get("remainingItemCount") or 0))
    except (click.ClickException, httpx.HTTPError, ValueError, AttributeError):
        return "?"


def _stop(record: ClusterRecord) -> bool:
    """SIGTERM the process serving ``record`` (it stops as on Ctrl-C) and wait until its lock
    is released. Returns whether it was running."""
    running = holder(record.data_dir)
    if running is None:
        return False
    pid = holder_pid(running)
    if pid is None:
        raise click.ClickException(
            f"cluster {record.name!r} is starting and did not say its process yet: retry"
        )
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    except PermissionError as error:
        raise click.ClickException(
            f"cannot stop cluster {record.name!r} (pid {pid}): it belongs to another user"
        ) from error
    deadline = time.monotonic() + STOP_TIMEOUT
    while holder(record.data_dir) is not None:
        if time.monotonic() > deadline:
            raise click.ClickException(
                f"cluster {record.name!r} (pid {pid}) did not stop within {STOP_TIMEOUT:.0f} s: "
                f"see its log, or `kill -9 {pid}`"
            )
        time.sleep(0.05)
    return True


def _named(name: str) -> ClusterRecord:
    record = load_record(name)
    if record is None:
        raise click.ClickException(
            f'no cluster named "{name}": `taintplane get clusters` lists them'
        )
    return record


@click.command("stop")
@click.argument("name", type=NameType(), default=DEFAULT_NAME, required=False)
def stop_command(name: str) -> None:
    """Stop the cluster NAME (default: taintplane), keeping its state and its kubeconfig
    context; `taintplane up --name NAME` starts it again where it was.

    \b
    Example:
      taintplane stop dev
    """
    record = _named(name)
    if _stop(record):
        click.echo(f'Stopped cluster "{name}"')
    else:
        click.echo(f'Cluster "{name}" is not running')


@click.command("delete")
@click.argument("name", type=NameType(), default=DEFAULT_NAME, required=False)
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="PATH",
    help="Remove the context from this file as well as from the one `up` merged it into.",
)
def delete_command(name: str, kubeconfig: Path | None) -> None:
    """Delete the cluster NAME (default: taintplane): stop it, remove its data dir and its
    context taintplane-NAME from the kubeconfig. Deleting a cluster that does not exist
    succeeds, as kind's does.

    \b
    Example:
      taintplane delete dev
    """
    click.echo(f'Deleting cluster "{name}" ...')
    record = load_record(name)
    context = f"taintplane-{name}"
    files = [merge_path(kubeconfig).absolute()]
    if record is not None:
        _stop(record)
        if record.kubeconfig is not None and record.kubeconfig not in files:
            files.append(record.kubeconfig)
    for file in files:
        remove_context(file, context)
    if record is None:
        return
    left = remove_data_dir(record.data_dir)
    remove_record(name)
    if left:
        click.echo(
            f"Kept {record.data_dir}: it also holds files taintplane did not write "
            f"({', '.join(left[:5])}{' …' if len(left) > 5 else ''})"
        )
