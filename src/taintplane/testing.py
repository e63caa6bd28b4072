"""A whole cluster for the tests of your own controllers, operators and tools.

``local_cluster()`` starts the API server, scheduler, controller manager and simulated nodes in
a background thread, serving the real Kubernetes API on 127.0.0.1 (an ephemeral port), on a
virtual clock that moves only when the test says so. Point the official ``kubernetes`` client,
``kubectl`` or any other client at ``cluster.kubeconfig``; move time with
``cluster.advance("5m")`` and every timer due by then (heartbeats, grace periods,
tolerationSeconds, rate limits) has fired and the cluster is quiet when it returns::

    from taintplane.testing import local_cluster

    with local_cluster(nodes=3) as cluster:
        v1 = kubernetes.client.CoreV1Api(cluster.kubernetes_client())
        ...
        cluster.stop_node("node-2")
        cluster.advance("6m")   # unreachable at 50 s, evicted at 350 s

With pytest, the ``taintplane_cluster`` fixture (a plugin installed with taintplane) gives one
per test; ``@pytest.mark.taintplane(nodes=5, feature_gates="…")`` configures it.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import threading
from collections.abc import Coroutine, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from taintplane.agents.nodes import NodeShape
from taintplane.api.duration import parse_duration
from taintplane.api.features import FeatureGates
from taintplane.clock import RealClock, VirtualClock
from taintplane.sim.cluster import Cluster, running_cluster
from taintplane.sim.clusterfile import default_nodes, load_cluster_file

__all__ = ["DEFAULT_START", "LocalCluster", "local_cluster"]

#: Where a virtual clock starts unless told otherwise: a fixed instant, so tests can assert
#: exact timestamps.
DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC)

_T = TypeVar("_T")


def _instant(start: datetime | str) -> datetime:
    if isinstance(start, str):
        try:
            start = datetime.fromisoformat(start.replace("Z", "+00:00"))
        except ValueError as error:
            raise ValueError(f"start {start!r} is not an RFC 3339 time") from error
    if not isinstance(start, datetime) or start.tzinfo is None:
        raise ValueError(f"start must be a time with a zone (e.g. 2026-01-01T00:00:00Z): {start!r}")
    return start.astimezone(UTC)


class LocalCluster:
    """A running cluster, driven from the test's threads (one call at a time)."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        # A virtual clock advances one caller at a time: two advances interleaved on the
        # cluster's loop would each wait for the other's work to be quiet.
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """The API server, e.g. ``http://127.0.0.1:40123``."""
        return self._cluster.url

    @property
    def kubeconfig(self) -> Path:
        """A kubeconfig for this cluster (for ``kubectl --kubeconfig`` or ``KUBECONFIG``)."""
        return self._cluster.kubeconfig_path

    @property
    def virtual(self) -> bool:
        return isinstance(self._cluster.clock, VirtualClock)

    def now(self) -> datetime:
        """The cluster's clock."""
        return self._cluster.clock.now()

    def advance(self, duration: float | str) -> datetime:
        """Move the virtual clock by ``duration`` (seconds, or Go syntax such as ``"90s"`` or
        ``"1h30m"``); returns once everything due by then has run. The new instant."""
        clock = self._cluster.clock
        if not isinstance(clock, VirtualClock):
            raise RuntimeError("this cluster runs on the real clock; start it with clock='virtual'")
        seconds = parse_duration(duration) if isinstance(duration, str) else float(duration)
        if seconds < 0:
            raise ValueError("a clock cannot go back: use a positive duration")
        self._run(clock.advance(seconds))
        return clock.now()

    def stop_node(self, name: str) -> None:
        """The node's kubelet goes silent (no heartbeats, no status, no pod work)."""
        self._kubelets().stop(name)

    def start_node(self, name: str) -> None:
        """The node's kubelet comes back and reports at once."""
        self._run(self._kubelets().start(name))

    def set_node_condition(self, name: str, condition: str, status: str) -> None:
        """Make the node report a condition, e.g. ``("node-1", "MemoryPressure", "True")``."""
        self._run(self._kubelets().set_condition(name, condition, status))

    def kubernetes_client(self) -> Any:
        """An ``ApiClient`` of the official ``kubernetes`` package, configured for this
        cluster (the package must be installed)."""
        try:
            from kubernetes import client, config
        except ImportError as error:  # pragma: no cover - depends on the user's environment
            raise RuntimeError("pip install kubernetes to use kubernetes_client()") from error
        configuration = client.Configuration()
        config.load_kube_config(
            config_file=str(self.kubeconfig), client_configuration=configuration
        )
        return client.ApiClient(configuration)

    def _kubelets(self) -> Any:
        kubelets = self._cluster.kubelets
        if kubelets is None:  # pragma: no cover - local_cluster always runs the agents
            raise RuntimeError("this cluster runs no simulated nodes")
        return kubelets

    def _run(self, work: Coroutine[Any, Any, _T]) -> _T:
        """Run ``work`` on the cluster's event loop (in its thread) and wait for it."""
        loop = self._cluster.loop
        assert loop is not None
        with self._lock:
            return asyncio.run_coroutine_threadsafe(work, loop).result(timeout=3600)


@contextlib.contextmanager
def local_cluster(
    data_dir: Path | None = None,
    *,
    nodes: int | list[NodeShape] = 3,
    cluster_file: Path | str | None = None,
    clock: str = "virtual",
    start: datetime | str = DEFAULT_START,
    feature_gates: str = "",
) -> Iterator[LocalCluster]:
    """A cluster serving on 127.0.0.1 from a background thread, stopped on exit.

    ``nodes``: how many simulated nodes (``node-1``…), or their shapes; ``cluster_file``: node
    pools as ``taintplane up --cluster`` reads them (instead of ``nodes``). ``clock``:
    ``"virtual"`` (starting at ``start``: an aware datetime or RFC 3339 text) or ``"real"``.
    ``data_dir``: where the state lives (a temporary directory, removed afterwards, by
    default)."""
    if clock not in ("virtual", "real"):
        raise ValueError(f"clock must be 'virtual' or 'real', not {clock!r}")
    start = _instant(start)
    if cluster_file is not None:
        shapes = load_cluster_file(Path(cluster_file))
    elif isinstance(nodes, bool) or not isinstance(nodes, int | list):
        raise ValueError(f"nodes must be a number of nodes or a list of NodeShape, not {nodes!r}")
    elif isinstance(nodes, int):
        if nodes < 0:
            raise ValueError(f"nodes must be 0 or more, not {nodes}")
        shapes = default_nodes(nodes)
    else:
        shapes = list(nodes)
    features = FeatureGates.parse(feature_gates)
    the_clock = VirtualClock(start) if clock == "virtual" else RealClock()
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="taintplane-")))
        cluster = stack.enter_context(
            running_cluster(
                data_dir,
                features=features,
                clock=the_clock,
                components=("scheduler", "controller-manager", "agents"),
                nodes=shapes,
            )
        )
        handle = LocalCluster(cluster)
        if handle.virtual:
            handle.advance(0)  # start-up work (informers syncing, first statuses) done
        yield handle
