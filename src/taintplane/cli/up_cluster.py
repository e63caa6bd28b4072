"""``taintplane up``: a whole local cluster, named as kind names its clusters.

The name picks the data dir (unless ``--data-dir`` is given), the context ``taintplane-NAME``
merged into the user's kubeconfig, and what ``get clusters``, ``stop`` and ``delete`` act on.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from taintplane.cli import up_detach
from taintplane.cli.clusters import (
    DEFAULT_NAME,
    ClusterRecord,
    NameType,
    default_data_dir,
    holder,
    load_record,
    save_record,
    simulated_nodes,
    write_simulated_nodes,
)
from taintplane.cli.contexts import merge_context, merge_path
from taintplane.cli.data_dir import virtual_clock
from taintplane.cli.errors import InputFileError
from taintplane.cli.logs import setup_logging, verbosity_options
from taintplane.cli.up_options import admission_options, lifecycle_options, server_options
from taintplane.clock import Clock, RealClock
from taintplane.sim.clusterfile import ClusterFileError, default_nodes, load_cluster_file

if TYPE_CHECKING:
    from taintplane.sim.cluster import Cluster

__all__ = ["up_command"]


class _UpCommand(click.Command):
    """Keeps the raw arguments: ``--detach`` starts ``up`` again with them."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[up_detach.RAW_ARGS_KEY] = list(args)
        return super().parse_args(ctx, args)


@click.command("up", cls=_UpCommand)
@click.option(
    "--name",
    type=NameType(),
    default=DEFAULT_NAME,
    show_default=True,
    help="Cluster name: its kubeconfig context is taintplane-NAME.",
)
@click.option(
    "-d",
    "--detach",
    is_flag=True,
    help="Run in the background: return once the cluster answers, logging to "
    "DATA_DIR/taintplane.log; `taintplane stop NAME` stops it.",
)
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="PATH",
    help="Merge the context into this file (default: the first file of $KUBECONFIG that "
    "exists, else ~/.kube/config, as kind does).",
)
@click.option("--ready-fd", type=int, default=None, hidden=True)
@server_options
@click.option(
    "--nodes",
    "node_count",
    type=click.IntRange(0, 100_000),
    default=None,
    help="Simulated nodes node-1..node-N (default 3; not with --cluster). Restarted with "
    "fewer, the others are removed.",
)
@click.option(
    "--cluster",
    "cluster_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="YAML file of node pools (count, labels, taints, capacity, zones).",
)
@click.option(
    "--clock",
    "clock_kind",
    type=click.Choice(["real", "virtual"]),
    default="real",
    show_default=True,
    help="'virtual' starts at the wall clock (or where it was last advanced to) and stands "
    "still until `taintplane clock advance` or `clock sync` moves it.",
)
@lifecycle_options
@verbosity_options
@admission_options
def up_command(
    name: str,
    detach: bool,
    kubeconfig: Path | None,
    ready_fd: int | None,
    data_dir: Path | None,
    port: int | None,
    node_count: int | None,
    cluster_file: Path | None,
    clock_kind: str,
    verbose: int,
    log_file: Path | None,
    **options: Any,
) -> None:
    """Run a whole local cluster: the API server on an embedded SQLite store (or etcd), the
    scheduler, the controller manager and simulated nodes. The context taintplane-NAME is
    merged into your kubeconfig and made current, so kubectl works without an export.

    \b
    Examples:
      taintplane up                       # in the foreground; Ctrl-C stops it
      taintplane up -d --name dev --nodes 5
      taintplane up --clock virtual --cluster pools.yaml
    """
    ctx = click.get_current_context()
    if cluster_file is not None:
        if node_count is not None:
            raise click.UsageError("--nodes and --cluster exclude each other: pick one")
        try:
            nodes = load_cluster_file(cluster_file)
        except ClusterFileError as error:
            raise InputFileError(f"--cluster: {error}") from error
    else:
        nodes = default_nodes(3 if node_count is None else node_count)
    if data_dir is None:
        data_dir = default_data_dir(name)
    if port is None:
        port = 6443 if name == DEFAULT_NAME else 0
    if detach:
        up_detach.detach(ctx, name, data_dir, log_file)
        return
    # Imported once the cluster runs here: `up -d` only starts the process that does.
    from taintplane.cli.up import run_cluster
    from taintplane.controllers.manager import ControllerConfig
    from taintplane.controllers.nodelifecycle import NodeLifecycleConfig

    if ready_fd is not None:
        ctx.meta[up_detach.READY_FD_KEY] = ready_fd
    setup_logging(verbose, log_file)
    _refuse_a_running_namesake(name, data_dir)
    target = merge_path(kubeconfig).absolute()
    names = [shape.name for shape in nodes]
    previous = simulated_nodes(data_dir) or []
    retired = [node for node in previous if node not in set(names)]

    def after_start(cluster: Cluster) -> list[str]:
        write_simulated_nodes(data_dir, names)
        record = ClusterRecord(name, data_dir, target)
        try:
            save_record(record)
            merge_context(target, record.context, cluster.kubeconfig_path)
            lines = [f'Set kubectl context to "{record.context}" in {target}']
        except (click.ClickException, OSError) as error:
            # The cluster runs all the same: the export line above reaches it.
            problem = error.message if isinstance(error, click.ClickException) else str(error)
            lines = [f"Could not set the kubectl context ({problem}): use the export line"]
        if retired:
            shown = ", ".join(retired[:10]) + (
                f" and {len(retired) - 10} more" if len(retired) > 10 else ""
            )
            lines.append(
                f"Removed {len(retired)} simulated node(s) the last start had and this one "
                f"does not: {shown}"
            )
        return lines

    # A virtual clock starts where the last run on this data dir left it (or at the wall-clock
    # second the cluster starts, if later), then stands still.
    clock: Clock = (
        virtual_clock(data_dir, RealClock().now()) if clock_kind == "virtual" else RealClock()
    )
    run_cluster(
        data_dir,
        port,
        options["store_spec"],
        options["sync"],
        options["feature_gates"],
        "cluster",
        ("scheduler", "controller-manager", "agents"),
        nodes=nodes,
        clock=clock,
        controller_config=ControllerConfig(
            node_lifecycle=NodeLifecycleConfig(
                node_monitor_period=options["node_monitor_period"],
                node_monitor_grace_period=options["node_monitor_grace_period"],
                node_startup_grace_period=options["node_startup_grace_period"],
                node_eviction_rate=options["node_eviction_rate"],
                secondary_node_eviction_rate=options["secondary_node_eviction_rate"],
                large_cluster_size_threshold=options["large_cluster_size_threshold"],
                unhealthy_zone_threshold=options["unhealthy_zone_threshold"],
            )
        ),
        default_toleration_seconds=(
            options["default_not_ready_toleration_seconds"],
            options["default_unreachable_toleration_seconds"],
        ),
        auth_tokens=options["auth_tokens"],
        retired_nodes=retired,
        after_start=after_start,
    )


def _refuse_a_running_namesake(name: str, data_dir: Path) -> None:
    """Names are unique, as kind's: a second cluster of a name would take over its context."""
    record = load_record(name)
    if record is None or record.data_dir.resolve() == data_dir.resolve():
        return
    running = holder(record.data_dir)
    if running is not None:
        raise click.ClickException(
            f'a cluster named "{name}" is already running from {record.data_dir} ({running}): '
            f"stop it first (`taintplane stop {name}`), or pick another --name"
        )
