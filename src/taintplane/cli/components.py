"""Split deployment: ``taintplane scheduler | controller-manager | agents`` run one component
against a running API server (``taintplane serve``, or another cluster's), found through the
kubeconfig, on the real clock. Several schedulers or controller managers may run: as
upstream's (``--leader-elect``, on by default), they elect a leader on a Lease in kube-system
(``kube-scheduler``, ``kube-controller-manager``) and only the leader works."""

from __future__ import annotations

import contextlib
import signal
import socket
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import click

from taintplane import runtime
from taintplane.cli.admin import kubeconfig_option
from taintplane.cli.errors import InputFileError
from taintplane.cli.kubeconfig import load_target
from taintplane.cli.logs import setup_logging, verbosity_options
from taintplane.client import ApiError, Client, HTTPTransport, resource
from taintplane.client.client import COMPONENT_FIELD_MANAGERS
from taintplane.client.leaderelection import LeaderElector
from taintplane.clock import Clock, RealClock

__all__ = ["agents_command", "controller_manager_command", "lead", "scheduler_command"]

SELF_SUBJECT_REVIEWS = resource("authentication.k8s.io", "v1", "selfsubjectreviews")


def _run(kubeconfig: str | None, what: str, build: Callable[[Client], Awaitable[None]]) -> None:
    target = load_target(kubeconfig)
    options = click.get_current_context().params
    setup_logging(options.get("verbose", 0), options.get("log_file"))

    async def main() -> None:
        transport = HTTPTransport(target.server, token=target.token, verify=target.verify)
        client = Client(transport, field_manager=COMPONENT_FIELD_MANAGERS[what])
        try:
            await client.version()
        except Exception as error:
            raise click.ClickException(
                f"cannot reach the API server at {target.server}: {error}; "
                "start it with `taintplane serve` (or `taintplane up`) first"
            ) from error
        click.echo(f"taintplane {what} running against {target.server}")
        runtime.settle_heap()
        try:
            await build(client)
        finally:
            await transport.close()

    # SIGTERM stops it as Ctrl-C does (the component's tasks are cancelled and cleaned up).
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with contextlib.suppress(KeyboardInterrupt):
        runtime.run(main())
    click.echo(f"taintplane {what} stopped")


leader_elect_option = click.option(
    "--leader-elect/--no-leader-elect",
    default=True,
    show_default=True,
    help="Elect a leader among several copies on a Lease in kube-system.",
)


async def lead(
    client: Client,
    lease: str,
    leader_elect: bool,
    work: Callable[[], Coroutine[Any, Any, None]],
    clock: Clock,
) -> None:
    if not leader_elect:
        await work()
        return
    identity = f"{socket.gethostname()}_{uuid.uuid4()}"
    elector = LeaderElector(client, clock, name=lease, identity=identity)
    await elector.run(work)
    if elector.lost:
        # As upstream's OnStoppedLeading: another copy may lead by now, so this one must not
        # go on working; it exits, for whoever supervises it to start it again.
        raise click.ClickException(
            f"leaderelection lost: the lease kube-system/{lease} could not be renewed within "
            f"{elector.renew_deadline:g}s (is the API server up?); start this component again"
        )


@click.command("scheduler")
@kubeconfig_option
@leader_elect_option
@verbosity_options
def scheduler_command(kubeconfig: str | None, leader_elect: bool, **_logging: Any) -> None:
    """Run the scheduler alone against an API server (with leader election on a Lease).

    \b
    Example:
      taintplane scheduler --kubeconfig ./a/kubeconfig
    """
    from taintplane.scheduler.scheduler import Scheduler

    async def run(client: Client) -> None:
        clock = RealClock()
        await lead(
            client, "kube-scheduler", leader_elect, lambda: Scheduler(client, clock).run(), clock
        )

    _run(kubeconfig, "scheduler", run)


@click.command("controller-manager")
@kubeconfig_option
@leader_elect_option
@click.option(
    "--controllers",
    default="*",
    show_default=True,
    help="Comma-separated controller names to run ('*' for all), as kube-controller-manager.",
)
@verbosity_options
def controller_manager_command(
    kubeconfig: str | None, leader_elect: bool, controllers: str, **_logging: Any
) -> None:
    """Run the controller manager alone against an API server.

    \b
    Examples:
      taintplane controller-manager --kubeconfig ./a/kubeconfig
      taintplane controller-manager --controllers node-lifecycle-controller
    """
    from taintplane.controllers.manager import (
        ALL_CONTROLLERS,
        ControllerConfig,
        ControllerManager,
    )

    names = (
        ALL_CONTROLLERS
        if controllers.strip() == "*"
        else tuple(n.strip() for n in controllers.split(",") if n.strip())
    )
    unknown = [n for n in names if n not in ALL_CONTROLLERS]
    if unknown:
        raise click.BadParameter(
            f"unknown controller(s) {', '.join(unknown)}; known: {', '.join(ALL_CONTROLLERS)}",
            param_hint="--controllers",
        )

    async def run(client: Client) -> None:
        clock = RealClock()
        manager = ControllerManager(client, clock, ControllerConfig(controllers=names))
        await lead(client, "kube-controller-manager", leader_elect, manager.run, clock)

    _run(kubeconfig, "controller-manager", run)


@click.command("agents")
@kubeconfig_option
@click.option(
    "--nodes",
    "node_count",
    type=click.IntRange(0, 100_000),
    default=None,
    help="Simulated nodes node-1..node-N (default 3).",
)
@click.option(
    "--cluster",
    "cluster_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="YAML file of node pools, as for `taintplane up --cluster`.",
)
@verbosity_options
def agents_command(
    kubeconfig: str | None, node_count: int | None, cluster_file: Path | None, **_logging: Any
) -> None:
    """Run simulated kubelets alone against an API server.

    \b
    Example:
      taintplane agents --kubeconfig ./a/kubeconfig --cluster pools.yaml
    """
    from taintplane.agents.kubelet import Kubelets
    from taintplane.agents.nodes import NodeShape
    from taintplane.client.shared import SharedInformers
    from taintplane.sim.clusterfile import ClusterFileError, default_nodes, load_cluster_file

    if cluster_file is not None and node_count is not None:
        raise click.UsageError("--nodes and --cluster exclude each other: pick one")
    try:
        shapes = (
            load_cluster_file(cluster_file)
            if cluster_file is not None
            else default_nodes(3 if node_count is None else node_count)
        )
    except ClusterFileError as error:
        raise InputFileError(f"--cluster: {error}") from error

    async def run(client: Client) -> None:
        node = await _node_identity(client)
        informers = SharedInformers(client, node_name=node)
        chosen = shapes
        if node:
            # A kubelet's credentials read only its own node and the pods bound to it.
            chosen = [s for s in shapes if s.name == node]
            if not chosen and cluster_file is not None:
                raise click.ClickException(
                    f"the kubeconfig's user system:node:{node} may run only node {node}, which "
                    f"{cluster_file} does not define; name a node {node} there, or use a "
                    "kubeconfig whose user may read every node and pod"
                )
            chosen = chosen or [NodeShape(node)]
            click.echo(
                f"running as system:node:{node}: simulating node {node} only (a node's "
                "credentials read only its own node and the pods bound to it)"
            )
        kubelets = Kubelets(client, RealClock(), informers=informers)
        try:
            await kubelets.add(chosen)
            click.echo(f"{len(chosen)} simulated node(s) registered")
            await kubelets.run()
        finally:
            await informers.stop()

    _run(kubeconfig, "agents", run)


async def _node_identity(client: Client) -> str:
    """NAME when the kubeconfig's user is the node identity ``system:node:NAME`` (in
    ``system:nodes``), as ``kubectl auth whoami`` tells; "" otherwise."""
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    try:
        answer = await client.create(SELF_SUBJECT_REVIEWS, review)
    except ApiError:
        return ""  # a server without the review API: not a node as far as we can tell
    info = (answer.get("status") or {}).get("userInfo") or {}
    name = str(info.get("username") or "")
    if "system:nodes" not in (info.get("groups") or []) or not name.startswith("system:node:"):
        return ""
    return name.removeprefix("system:node:")
