"""``taintplane up`` and ``taintplane serve``: run the cluster (or the API server alone)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import gc
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import uvloop

from taintplane.admission.admission_config import AdmissionConfigError
from taintplane.admission.plugins import AdmissionOptions
from taintplane.agents.nodes import NodeShape
from taintplane.api.duration import DurationError, parse_duration
from taintplane.api.features import FeatureGates, UnknownFeatureGateError
from taintplane.apiserver.auth.tokens import TokenFileError
from taintplane.clock import Clock, RealClock, VirtualClock
from taintplane.controllers.manager import ControllerConfig
from taintplane.controllers.nodelifecycle import NodeLifecycleConfig
from taintplane.sim.cluster import Cluster, ClusterConfig, StoreSpecError
from taintplane.sim.clusterfile import ClusterFileError, default_nodes, load_cluster_file

__all__ = ["serve_command", "up_command"]


def _options(function: click.decorators.FC) -> click.decorators.FC:
    decorators = [
        click.option(
            "--data-dir",
            type=click.Path(file_okay=False, path_type=Path),
            default=Path(".taintplane"),
            show_default=True,
            help="Where the state, the kubeconfig and logs live.",
        ),
        click.option(
            "--port",
            type=click.IntRange(0, 65535),
            default=6443,
            show_default=True,
            help="Port of the API server on 127.0.0.1 (0 picks a free one).",
        ),
        click.option(
            "--store",
            "store_spec",
            metavar="sqlite:PATH",
            help="Storage backend; default sqlite:DATA_DIR/state.db.",
        ),
        click.option(
            "--sync",
            type=click.Choice(["normal", "full"]),
            default="normal",
            show_default=True,
            help="SQLite durability: 'full' also survives power loss, more slowly.",
        ),
        click.option(
            "--auth",
            "auth_tokens",
            type=click.Path(dir_okay=False, path_type=Path),
            default=None,
            metavar="TOKENS_FILE",
            help="Serve HTTPS with static bearer tokens from this file "
            "(kube-apiserver's --token-auth-file format) and RBAC; a system:masters "
            "token is added to it if it has none.",
        ),
        click.option(
            "--feature-gates",
            default="",
            metavar="A=true,B=false",
            help="Kubernetes feature gates, e.g. TaintTolerationComparisonOperators=true.",
        ),
    ]
    for decorator in reversed(decorators):
        function = decorator(function)
    return function


_ADMISSION = "taintplane.admission"


def _admission_options(function: Callable[..., None]) -> Callable[..., None]:
    """kube-apiserver's admission flags. They are checked (and the configuration file read)
    before anything starts; the result reaches ``_run`` through the click context."""

    @functools.wraps(function)
    def wrapper(
        *args: Any,
        admission_config: Path | None,
        enable_admission_plugins: tuple[str, ...],
        disable_admission_plugins: tuple[str, ...],
        **kwargs: Any,
    ) -> None:
        options = AdmissionOptions(
            enable_admission_plugins, disable_admission_plugins, admission_config
        )
        try:
            setup = options.load()
        except AdmissionConfigError as error:
            raise click.ClickException(str(error)) from error
        click.get_current_context().meta[_ADMISSION] = setup
        function(*args, **kwargs)

    decorators = [
        click.option(
            "--admission-config",
            "--admission-control-config-file",
            "admission_config",
            type=click.Path(dir_okay=False, path_type=Path),
            default=None,
            metavar="FILE",
            help="AdmissionConfiguration file (apiserver.config.k8s.io/v1): plugin "
            "configurations, e.g. PodTolerationRestriction's cluster default and whitelist.",
        ),
        click.option(
            "--enable-admission-plugins",
            multiple=True,
            metavar="A,B",
            help="Admission plugins to run besides the default ones, e.g. "
            "PodTolerationRestriction,PodNodeSelector,ExtendedResourceToleration.",
        ),
        click.option(
            "--disable-admission-plugins",
            multiple=True,
            metavar="A,B",
            help="Default admission plugins not to run.",
        ),
    ]
    decorated: Callable[..., None] = wrapper
    for decorator in reversed(decorators):
        decorated = decorator(decorated)
    return decorated


class GoDuration(click.ParamType):  # type: ignore[type-arg]
    """A Go duration ("5s", "1m30s"), as kube-controller-manager's flags take; in seconds."""

    name = "duration"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, int | float):
            return float(value)
        try:
            seconds = parse_duration(str(value))
        except DurationError as error:
            self.fail(f"{error} (use e.g. 5s, 50s, 1m)", param, ctx)
        if seconds < 0:
            self.fail("must not be negative", param, ctx)
        return seconds


_DEFAULTS = NodeLifecycleConfig()


def _lifecycle_options(function: click.decorators.FC) -> click.decorators.FC:
    """kube-controller-manager's node lifecycle flags and kube-apiserver's default toleration
    seconds, with upstream's names and defaults."""
    decorators = [
        click.option(
            "--node-monitor-period",
            type=GoDuration(),
            default="5s",
            show_default=True,
            help="How often node health is reviewed.",
        ),
        click.option(
            "--node-monitor-grace-period",
            type=GoDuration(),
            default="50s",
            show_default=True,
            help="Silence after which a node's Ready condition becomes Unknown.",
        ),
        click.option(
            "--node-startup-grace-period",
            type=GoDuration(),
            default="60s",
            show_default=True,
            help="The same for a node that never reported its status.",
        ),
        click.option(
            "--node-eviction-rate",
            type=click.FloatRange(0),
            show_default=True,
            default=_DEFAULTS.node_eviction_rate,
            help="Nodes per second tainted NoExecute in a healthy zone.",
        ),
        click.option(
            "--secondary-node-eviction-rate",
            type=click.FloatRange(0),
            show_default=True,
            default=_DEFAULTS.secondary_node_eviction_rate,
            help="The same in an unhealthy zone larger than the threshold.",
        ),
        click.option(
            "--large-cluster-size-threshold",
            type=click.IntRange(0),
            show_default=True,
            default=_DEFAULTS.large_cluster_size_threshold,
            help="Zones with more nodes keep the secondary rate when unhealthy.",
        ),
        click.option(
            "--unhealthy-zone-threshold",
            type=click.FloatRange(0, 1),
            show_default=True,
            default=_DEFAULTS.unhealthy_zone_threshold,
            help="Fraction of nodes down (at least 3) that makes a zone unhealthy.",
        ),
        click.option(
            "--default-not-ready-toleration-seconds",
            type=click.IntRange(0),
            default=300,
            show_default=True,
            help="tolerationSeconds DefaultTolerationSeconds gives for not-ready.",
        ),
        click.option(
            "--default-unreachable-toleration-seconds",
            type=click.IntRange(0),
            default=300,
            show_default=True,
            help="tolerationSeconds DefaultTolerationSeconds gives for unreachable.",
        ),
    ]
    for decorator in reversed(decorators):
        function = decorator(function)
    return function


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
        admission=click.get_current_context().meta.get(_ADMISSION),
        auth_tokens=auth_tokens,
    )
    cluster = Cluster(config, clock)
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

    async def main() -> None:
        try:
            await cluster.start()
        except StoreSpecError as error:
            raise click.UsageError(f"--store: {error}") from error
        except TokenFileError as error:
            raise click.UsageError(f"--auth: {error}") from error
        # Start-up objects live for the whole run: keep them out of every collection, and
        # collect the young generation less often (request handling allocates many short-
        # lived dicts; the default threshold makes collections a visible latency tail).
        gc.freeze()
        gc.set_threshold(50_000, 20, 20)
        elapsed = time.perf_counter() - started
        click.echo(f"taintplane {what} is up in {elapsed:.2f} s, serving {cluster.url}")
        click.echo(f"export KUBECONFIG={cluster.kubeconfig_path.resolve()}")
        try:
            await cluster.serve()
        finally:
            await cluster.close()

    # uvloop and httptools (picked by uvicorn when installed) make each request cheaper; virtual
    # time needs asyncio's own loop (it watches the loop's ready queue to know it is quiet).
    if not isinstance(cluster.clock, VirtualClock):
        uvloop.install()
    # SIGTERM (kill, systemd, docker stop) stops it as Ctrl-C does: uvicorn shuts down, then
    # re-raises the signal, which must reach cluster.close() rather than end the process.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a user stops it
        asyncio.run(main())
    click.echo("taintplane stopped")


@click.command("up")
@_options
@click.option(
    "--nodes",
    "node_count",
    type=click.IntRange(0, 100_000),
    default=None,
    help="Simulated nodes node-1..node-N (default 3; ignored with --cluster).",
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
@_lifecycle_options
@_admission_options
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
    """Run a whole local cluster: the API server on an embedded SQLite store, the scheduler,
    the controller manager and simulated nodes."""
    if cluster_file is not None:
        if node_count is not None:
            raise click.UsageError("--nodes and --cluster exclude each other: pick one")
        try:
            nodes = load_cluster_file(cluster_file)
        except ClusterFileError as error:
            raise click.UsageError(f"--cluster: {error}") from error
    else:
        nodes = default_nodes(3 if node_count is None else node_count)
    # A virtual clock starts at the wall-clock second the cluster starts, then stands still.
    clock: Clock = (
        VirtualClock(RealClock().now().replace(microsecond=0))
        if clock_kind == "virtual"
        else RealClock()
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
@_options
@_admission_options
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
