"""The flags of ``taintplane up`` and ``taintplane serve``, grouped as kube-apiserver and
kube-controller-manager group them: storage and listening, admission, node lifecycle."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from taintplane.admission.admission_config import AdmissionConfigError
from taintplane.admission.plugins import AdmissionOptions
from taintplane.api.duration import DurationError, parse_duration
from taintplane.cli.errors import InputFileError
from taintplane.controllers.nodelifecycle import NodeLifecycleConfig

__all__ = [
    "ADMISSION_KEY",
    "GoDuration",
    "admission_options",
    "lifecycle_options",
    "server_options",
]


def server_options(function: click.decorators.FC) -> click.decorators.FC:
    decorators = [
        click.option(
            "--data-dir",
            type=click.Path(file_okay=False, path_type=Path),
            default=None,
            help="Where the state and the kubeconfig live (and taintplane.log with up "
            "--detach). Default: ./.taintplane; `up` restarts a cluster where it lived last, "
            "and puts a new one named with --name in ~/.taintplane/clusters/NAME.",
        ),
        click.option(
            "--port",
            type=click.IntRange(0, 65535),
            default=None,
            help="Port of the API server on 127.0.0.1; 0 picks a free one. Default: 6443; for "
            "up --name NAME, a free one.",
        ),
        click.option(
            "--store",
            "store_spec",
            metavar="sqlite:PATH|etcd://HOST:PORT[,…]",
            help="Storage backend; default sqlite:DATA_DIR/state.db. API servers sharing one "
            "etcd serve one cluster.",
        ),
        click.option(
            "--sync",
            type=click.Choice(["normal", "full"]),
            default="normal",
            show_default=True,
            help="SQLite durability: 'full' also survives power loss, more slowly "
            "(not for etcd, which syncs every commit).",
        ),
        click.option(
            "--auth",
            "auth_tokens",
            type=click.Path(dir_okay=False, path_type=Path),
            default=None,
            metavar="TOKENS_FILE",
            help="Serve HTTPS with static bearer tokens from this existing file "
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


ADMISSION_KEY = "taintplane.admission"


def admission_options(function: Callable[..., None]) -> Callable[..., None]:
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
            raise InputFileError(str(error)) from error
        click.get_current_context().meta[ADMISSION_KEY] = setup
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


def lifecycle_options(function: click.decorators.FC) -> click.decorators.FC:
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
