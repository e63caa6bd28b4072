"""``taintplane up`` and ``taintplane serve``: run the cluster (or the API server alone)."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from pathlib import Path

import click

from taintplane import runtime
from taintplane.agents.nodes import NodeShape
from taintplane.api.features import FeatureGates, UnknownFeatureGateError
from taintplane.apiserver.auth.tokens import TokenFileError
from taintplane.cli.data_dir import DataDirInUseError, DataDirLock, save_instant, virtual_clock
from taintplane.cli.up_options import (
    ADMISSION_KEY,
    admission_options,
    lifecycle_options,
    server_options,
)
from taintplane.clock import Clock, RealClock, VirtualClock
from taintplane.controllers.manager import ControllerConfig
from taintplane.controllers.nodelifecycle import NodeLifecycleConfig
from taintplane.sim.cluster import Cluster, ClusterConfig, StoreSpecError
from taintplane.sim.clusterfile import ClusterFileError, default_nodes, load_cluster_file

__all__ = ["serve_command", "up_command"]


def _run(
    data_dir: Path,
    port: int,
    store_spec: str | None,
    sync: str,
    feature_gates: str,
    what: str,
    components: tuple[str, ...],
    *,
    nodes: list[NodeShape] | None = None,
    clock: Clock | None = None,
    controller_config: ControllerConfig | None = None,
    default_toleration_seconds: tuple[int, int] = (300, 300),
    auth_tokens: Path | None = None,
) -> None:
    started = time.perf_counter()  # wall time of start-up, for the user
    try:
        features = FeatureGates.parse(feature_gates)
    except (ValueError, UnknownFeatureGateError) as error:
        raise click.UsageError(f"--feature-gates: {error}") from error
    if auth_tokens is not None:
        _check_token_file(auth_tokens)
    config = ClusterConfig(
        data_dir=data_dir,
        port=port,
        store=store_spec,
        synchronous="FULL" if sync == "full" else "NORMAL",
        features=features,
        components=components,
        nodes=nodes or [],
        controller_config=controller_config,
        default_toleration_seconds=default_toleration_seconds,
        admission=click.get_current_context().meta.get(ADMISSION_KEY),
        auth_tokens=auth_tokens,
    )
    # One cluster per data dir: a second would share the store, overwrite the kubeconfig and
    # register kubelets over the first one's nodes.
    lock = DataDirLock(data_dir)
    try:
        lock.acquire()
    except DataDirInUseError as error:
        raise click.ClickException(str(error)) from error
    except OSError as error:
        raise click.ClickException(f"cannot use --data-dir {data_dir}: {error}") from error
    try:
        _serve(Cluster(config, clock), lock, what, started)
    finally:
        lock.release()


def _check_token_file(path: Path) -> None:
    """As kube-apiserver's --token-auth-file (tokenfile.NewCSV): a file that cannot be read
    stops the start, rather than serving with only a generated admin token."""
    try:
        path.open().close()
    except OSError as error:
        raise click.UsageError(
            f"--auth: cannot read {path}: {error.strerror}; create it with a line per user, "
            'token,user,uid[,"group1,group2"] (see the README)'
        ) from error


def _serve(cluster: Cluster, lock: DataDirLock, what: str, started: float) -> None:
    port = cluster.config.port
    try:
        cluster.bind()
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise click.ClickException(
                f"port {port} on 127.0.0.1 is in use (another taintplane?): "
                "stop it or pass --port with a free port (or 0 for any)"
            ) from error
        raise click.ClickException(
            f"cannot listen on 127.0.0.1:{port}: {error.strerror}"
        ) from error
    lock.describe(f"pid {os.getpid()}, serving {cluster.url}")

    async def main() -> None:
        try:
            await cluster.start()
        except StoreSpecError as error:
            raise click.UsageError(f"--store: {error}") from error
        except TokenFileError as error:
            raise click.UsageError(f"--auth: {error}") from error
        runtime.settle_heap()
        elapsed = time.perf_counter() - started
        click.echo(f"taintplane {what} is up in {elapsed:.2f} s, serving {cluster.url}")
        click.echo(f"export KUBECONFIG={cluster.kubeconfig_path.resolve()}")
        try:
            await cluster.serve()
        finally:
            await cluster.close()

    # SIGTERM (kill, systemd, docker stop) stops it as Ctrl-C does: uvicorn shuts down, then
    # re-raises the signal, which must reach cluster.close() rather than end the process.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a user stops it
        runtime.run(main(), virtual_time=isinstance(cluster.clock, VirtualClock))
    if isinstance(cluster.clock, VirtualClock):
        # The next start on this data dir must not begin before what this run stamped objects
        # with (advances were recorded already; this is the instant at the very end).
        save_instant(cluster.config.data_dir, cluster.clock.now())
    click.echo("taintplane stopped")


@click.command("up")
@server_options
@click.option(
    "--nodes",
    "node_count",
    type=click.IntRange(0, 100_000),
    default=None,
    help="Simulated nodes node-1..node-N (default 3; not with --cluster).",
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
    help="'virtual' stands still until `taintplane clock advance` moves it.",
)
@lifecycle_options
@admission_options
def up_command(
    data_dir: Path,
    port: int,
    store_spec: str | None,
    sync: str,
    auth_tokens: Path | None,
    feature_gates: str,
    node_count: int | None,
    cluster_file: Path | None,
    clock_kind: str,
    node_monitor_period: float,
    node_monitor_grace_period: float,
    node_startup_grace_period: float,
    node_eviction_rate: float,
    secondary_node_eviction_rate: float,
    large_cluster_size_threshold: int,
    unhealthy_zone_threshold: float,
    default_not_ready_toleration_seconds: int,
    default_unreachable_toleration_seconds: int,
) -> None:
    """Run a whole local cluster: the API server on an embedded SQLite store (or etcd), the
    scheduler, the controller manager and simulated nodes."""
    if cluster_file is not None:
        if node_count is not None:
            raise click.UsageError("--nodes and --cluster exclude each other: pick one")
        try:
            nodes = load_cluster_file(cluster_file)
        except ClusterFileError as error:
            raise click.UsageError(f"--cluster: {error}") from error
    else:
        nodes = default_nodes(3 if node_count is None else node_count)
    # A virtual clock starts where the last run on this data dir left it (or at the wall-clock
    # second the cluster starts, if later), then stands still.
    clock: Clock = (
        virtual_clock(data_dir, RealClock().now()) if clock_kind == "virtual" else RealClock()
    )
    _run(
        data_dir,
        port,
        store_spec,
        sync,
        feature_gates,
        "cluster",
        ("scheduler", "controller-manager", "agents"),
        nodes=nodes,
        clock=clock,
        controller_config=ControllerConfig(
            node_lifecycle=NodeLifecycleConfig(
                node_monitor_period=node_monitor_period,
                node_monitor_grace_period=node_monitor_grace_period,
                node_startup_grace_period=node_startup_grace_period,
                node_eviction_rate=node_eviction_rate,
                secondary_node_eviction_rate=secondary_node_eviction_rate,
                large_cluster_size_threshold=large_cluster_size_threshold,
                unhealthy_zone_threshold=unhealthy_zone_threshold,
            )
        ),
        default_toleration_seconds=(
            default_not_ready_toleration_seconds,
            default_unreachable_toleration_seconds,
        ),
        auth_tokens=auth_tokens,
    )


@click.command("serve")
@server_options
@admission_options
def serve_command(
    data_dir: Path,
    port: int,
    store_spec: str | None,
    sync: str,
    auth_tokens: Path | None,
    feature_gates: str,
) -> None:
    """Run the API server alone (for a split deployment)."""
    _run(
        data_dir,
        port,
        store_spec,
        sync,
        feature_gates,
        "API server",
        (),
        auth_tokens=auth_tokens,
    )
