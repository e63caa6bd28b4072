"""Running a cluster (``taintplane up``, whose options live in ``up_cluster``) or the API
server alone (``taintplane serve``) in the foreground."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import click

from taintplane import runtime
from taintplane.agents.nodes import NodeShape
from taintplane.api.features import FeatureGates, UnknownFeatureGateError
from taintplane.apiserver.auth.tokens import TokenFileError
from taintplane.cli.clusters import DEFAULT_DATA_DIR
from taintplane.cli.data_dir import DataDirInUseError, DataDirLock, save_instant
from taintplane.cli.errors import InputFileError
from taintplane.cli.logs import setup_logging, verbosity_options
from taintplane.cli.up_detach import announce_ready
from taintplane.cli.up_options import (
    ADMISSION_KEY,
    admission_options,
    server_options,
)
from taintplane.clock import Clock, VirtualClock
from taintplane.controllers.manager import ControllerConfig
from taintplane.sim.cluster import Cluster, ClusterConfig, StoreSpecError
from taintplane.web.dashboard import DASHBOARD_PREFIX

__all__ = ["run_cluster", "serve_command"]


def run_cluster(
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
    retired_nodes: list[str] | None = None,
    after_start: Callable[[Cluster], list[str]] | None = None,
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
        retired_nodes=retired_nodes or [],
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
        _serve(Cluster(config, clock), lock, what, started, after_start)
    finally:
        lock.release()


def _check_token_file(path: Path) -> None:
    """As kube-apiserver's --token-auth-file (tokenfile.NewCSV): a file that cannot be read
    stops the start, rather than serving with only a generated admin token."""
    try:
        path.open().close()
    except OSError as error:
        raise InputFileError(
            f"--auth: cannot read {path}: {error.strerror}; create it with a line per user, "
            'token,user,uid[,"group1,group2"] (see the README)'
        ) from error


def _serve(
    cluster: Cluster,
    lock: DataDirLock,
    what: str,
    started: float,
    after_start: Callable[[Cluster], list[str]] | None,
) -> None:
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
            raise InputFileError(f"--auth: {error}") from error
        runtime.settle_heap()
        elapsed = time.perf_counter() - started
        lines = [
            f"taintplane {what} is up in {elapsed:.2f} s, serving {cluster.url}",
            f"export KUBECONFIG={cluster.kubeconfig_path.resolve()}",
            f"Dashboard: {cluster.url}{DASHBOARD_PREFIX}/",
        ]
        if after_start is not None:
            lines += after_start(cluster)
        for line in lines:
            click.echo(line)
        announce_ready(lines)
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


@click.command("serve")
@server_options
@verbosity_options
@admission_options
def serve_command(
    data_dir: Path | None,
    port: int | None,
    store_spec: str | None,
    sync: str,
    auth_tokens: Path | None,
    feature_gates: str,
    verbose: int,
    log_file: Path | None,
) -> None:
    """Run the API server alone (for a split deployment).

    \b
    Example:
      taintplane serve --store etcd://127.0.0.1:2379 --data-dir ./a --port 6443
    """
    setup_logging(verbose, log_file)
    run_cluster(
        DEFAULT_DATA_DIR if data_dir is None else data_dir,
        6443 if port is None else port,
        store_spec,
        sync,
        feature_gates,
        "API server",
        (),
        auth_tokens=auth_tokens,
    )
