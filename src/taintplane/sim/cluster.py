"""The ``Cluster`` composition root: store, API server and HTTP listener in one process.

``taintplane up`` runs one in the foreground; tests run one in a background thread through
:func:`running_cluster`. Later components (scheduler, controllers, simulated nodes) join here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import uvicorn

from taintplane.admission.plugins import AdmissionSetup
from taintplane.agents.kubelet import KubeletConfig, Kubelets
from taintplane.agents.nodes import NodeShape
from taintplane.api.features import FeatureGates
from taintplane.apiserver.app import APIServer
from taintplane.apiserver.auth.tokens import ensure_admin_token
from taintplane.client import ApiError, resource
from taintplane.client.client import COMPONENT_FIELD_MANAGERS, Client
from taintplane.client.shared import SharedInformers
from taintplane.client.transport import InProcessTransport
from taintplane.clock import Clock, RealClock, VirtualClock
from taintplane.controllers.manager import ALL_CONTROLLERS, ControllerConfig, ControllerManager
from taintplane.controllers.nodelifecycle import NodeLifecycleController
from taintplane.controllers.tainteviction import TaintEvictionController
from taintplane.scheduler.explain import explain_pods
from taintplane.scheduler.scheduler import Scheduler
from taintplane.sim.admin import ADMIN_PREFIX, AdminApp
from taintplane.sim.kubeconfig import write_kubeconfig
from taintplane.sim.pki import ensure_tls
from taintplane.sim.snapshot import restore
from taintplane.sim.steady import HeartbeatElision
from taintplane.store.etcd_target import EtcdTarget, EtcdURLError, parse_etcd_url
from taintplane.store.sqlite import SqliteStore
from taintplane.web.dashboard import DASHBOARD_PREFIX, Dashboard
from taintplane.web.signin import SignIn

if TYPE_CHECKING:
    from taintplane.store.etcd import EtcdStore

log = logging.getLogger(__name__)

_NODES = resource("", "v1", "nodes")
_LEASES = resource("coordination.k8s.io", "v1", "leases")

__all__ = [
    "Cluster",
    "ClusterConfig",
    "StoreSpecError",
    "StoreUnavailableError",
    "in_process_cluster",
    "parse_store_spec",
    "running_cluster",
]


class StoreSpecError(ValueError):
    pass


class StoreUnavailableError(StoreSpecError):
    """The store named could not be reached at start-up (etcd down or elsewhere)."""


def parse_store_spec(spec: str | None, data_dir: Path) -> Path | EtcdTarget:
    """``sqlite:PATH`` or ``etcd://HOST:PORT[,HOST:PORT…][/PREFIX]``; the default is
    ``DATA_DIR/state.db``."""
    if not spec:
        return data_dir / "state.db"
    kind, sep, rest = spec.partition(":")
    if kind == "sqlite" and sep and rest:
        return Path(rest)
    if kind == "etcd":
        try:
            return parse_etcd_url(spec)
        except EtcdURLError as error:
            raise StoreSpecError(str(error)) from error
    raise StoreSpecError(
        f"store {spec!r} is not understood: use sqlite:PATH (e.g. sqlite:./state.db) "
        "or etcd://HOST:PORT[,HOST:PORT…]"
    )


def _quiet_upgrades(record: logging.LogRecord) -> bool:
    """Drop uvicorn's warnings for every upgrade request (and the missing WebSocket library
    it then suggests): answering them as plain requests is what the server means to do (see
    ws="none" in Cluster)."""
    return not record.getMessage().startswith(
        ("Unsupported upgrade request.", "No supported WebSocket library detected.")
    )


@dataclass
class ClusterConfig:
    data_dir: Path
    port: int = 6443
    host: str = "127.0.0.1"
    store: str | None = None
    synchronous: Literal["NORMAL", "FULL"] = "NORMAL"
    features: FeatureGates = field(default_factory=FeatureGates)
    #: Components to run beside the API server (``serve`` runs none).
    components: tuple[str, ...] = ("scheduler", "controller-manager", "agents")
    #: The controllers the controller manager runs.
    controllers: tuple[str, ...] = ALL_CONTROLLERS
    #: Simulated nodes registered at start-up (by the "agents" component).
    nodes: list[NodeShape] = field(default_factory=list)
    kubelet: KubeletConfig = field(default_factory=KubeletConfig)
    controller_config: ControllerConfig | None = None
    #: kube-apiserver's --default-not-ready-toleration-seconds / --default-unreachable-...
    default_toleration_seconds: tuple[int, int] = (300, 300)
    #: Enabled admission plugins and their configuration (--enable-admission-plugins, ...).
    admission: AdmissionSetup | None = None
    #: ``--auth``: the token file (kube-apiserver's --token-auth-file format); turns on TLS,
    #: authentication and RBAC.
    auth_tokens: Path | None = None
    #: Objects written into the (empty) store before anything starts: a snapshot to simulate
    #: from (``what-if``), restored as an etcd backup is.
    seed: list[dict[str, Any]] = field(default_factory=list)
    #: Simulated nodes an earlier start on this data dir registered and this one does not
    #: (``up --nodes 2`` after 5): deleted, with their Leases, before any component starts,
    #: rather than left to go NotReady and be tainted unreachable.
    retired_nodes: list[str] = field(default_factory=list)
    #: Under a virtual clock, elide the heartbeats of a steady cluster (written down when
    #: time stands still or anything changes; ``taintplane.sim.steady``). Off: every tick of
    #: every kubelet and every node lifecycle pass runs in full.
    elide_heartbeats: bool = True


def _not_the_api(path: str) -> bool:
    """Paths served beside the Kubernetes API, authorized as non-resource requests."""
    return path in ("/metrics", DASHBOARD_PREFIX) or path.startswith(
        (ADMIN_PREFIX, DASHBOARD_PREFIX + "/")
    )


class Cluster:
    def __init__(self, config: ClusterConfig, clock: Clock | None = None) -> None:
        self.config = config
        self.clock = clock or RealClock()
        self.store: SqliteStore | EtcdStore | None = None
        self.apiserver: APIServer | None = None
        self._server: uvicorn.Server | None = None
        self._socket: socket.socket | None = None
        self.port = config.port
        #: The event loop the cluster runs on (for tests that drive it from another thread).
        self.loop: asyncio.AbstractEventLoop | None = None
        self.client: Client | None = None
        self.scheduler: Scheduler | None = None
        self.controller_manager: ControllerManager | None = None
        self.kubelets: Kubelets | None = None
        #: The informers every component of this process shares (None until started).
        self.informers: SharedInformers | None = None
        self._components: list[asyncio.Task[None]] = []

    @property
    def url(self) -> str:
        scheme = "https" if self.config.auth_tokens is not None else "http"
        return f"{scheme}://{self.config.host}:{self.port}"

    @property
    def kubeconfig_path(self) -> Path:
        return self.config.data_dir / "kubeconfig"

    def bind(self) -> None:
        """Take the listening socket (early, so a busy port fails before anything starts)."""
        # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted sockets only when the
        # listener says so, and without it every keep-alive response waits 40 ms (Nagle).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.config.host, self.config.port))
        except OSError:
            sock.close()
            raise
        sock.listen(512)
        sock.setblocking(False)
        self._socket = sock
        self.port = sock.getsockname()[1]

    async def start(self, *, listen: bool = True) -> None:
        """Open the store and start every component; ``listen=False`` serves no HTTP (tests
        that drive the cluster in-process, on their own event loop)."""
        self.loop = asyncio.get_running_loop()
        if self._socket is None and listen:
            self.bind()
        self.config.data_dir.mkdir(parents=True, exist_ok=True)
        self.store = await self._open_store()
        if self.config.seed:
            await restore(self.store, self.config.seed)
        if isinstance(self.clock, VirtualClock):
            # Advancing virtual time waits for the writer thread too.
            self.clock.add_quiescence_check(self.store.drained)
        tokens, admin_token, tls = None, None, None
        if self.config.auth_tokens is not None:
            tokens, admin_token = ensure_admin_token(self.config.auth_tokens)
            tls = ensure_tls(self.config.data_dir / "pki")
        self.apiserver = APIServer(
            self.store,
            self.clock,
            features=self.config.features,
            server_address=f"{self.config.host}:{self.port}",
            default_not_ready_toleration_seconds=self.config.default_toleration_seconds[0],
            default_unreachable_toleration_seconds=self.config.default_toleration_seconds[1],
            admission=self.config.admission,
            tokens=tokens,
        )
        await self.apiserver.bootstrap()
        write_kubeconfig(
            self.kubeconfig_path,
            self.url,
            ca_pem=tls.ca_pem() if tls else None,
            token=admin_token,
        )
        self.client = Client(
            InProcessTransport(self.apiserver.loopback_app, user_agent="taintplane-components")
        )
        if self.config.retired_nodes:
            await self._retire(self.config.retired_nodes)
        # One informer per kind for every component in this process (one cache of each pod,
        # not one per component: a third of the memory for the pods of a large cluster).
        informers = self.informers = SharedInformers(self.client, clock=self.clock)
        if "scheduler" in self.config.components:
            self.scheduler = Scheduler(
                self.client.with_field_manager(COMPONENT_FIELD_MANAGERS["scheduler"]),
                self.clock,
                features=self.config.features,
                informers=informers,
            )
            self._spawn(self.scheduler.run(), "scheduler")
        if "controller-manager" in self.config.components:
            controller_config = self.config.controller_config or ControllerConfig()
            controller_config.features = self.config.features
            if controller_config.controllers is None:
                controller_config.controllers = self.config.controllers
            self.controller_manager = ControllerManager(
                self.client.with_field_manager(COMPONENT_FIELD_MANAGERS["controller-manager"]),
                self.clock,
                controller_config,
                informers=informers,
            )
            if self.config.seed:
                # A copy of a cluster: its controllers know its nodes already.
                found = self.controller_manager.controllers.get("node-lifecycle-controller")
                if isinstance(found, NodeLifecycleController):
                    found.adopt([o for o in self.config.seed if o.get("kind") == "Node"])
            self._spawn(self.controller_manager.run(), "controller-manager")
        if "agents" in self.config.components:
            self.kubelets = Kubelets(
                self.client.with_field_manager(COMPONENT_FIELD_MANAGERS["agents"]),
                self.clock,
                config=self.config.kubelet,
                informers=informers,
            )
            if self.config.seed:
                # A copy of a cluster: its nodes are there, as their kubelets left them.
                await self.kubelets.adopt(self.config.nodes)
            else:
                await self.kubelets.add(self.config.nodes)
            self._spawn(self.kubelets.run(), "agents")
            if self.config.elide_heartbeats and isinstance(self.clock, VirtualClock):
                nlc = None
                if self.controller_manager is not None:
                    found = self.controller_manager.controllers.get("node-lifecycle-controller")
                    nlc = found if isinstance(found, NodeLifecycleController) else None
                HeartbeatElision(self.clock, self.kubelets, nlc)
        # The dashboard reads eviction deadlines from the taint eviction controller's own
        # queue when it runs here (nothing in the API records them).
        evictions = None
        if self.controller_manager is not None:
            controller = self.controller_manager.controllers.get("taint-eviction-controller")
            if isinstance(controller, TaintEvictionController):
                evictions = controller
        guard = self.apiserver.guard
        app: Any = Dashboard(
            self.client,
            self.clock,
            AdminApp(self, self.apiserver.app),
            evictions=evictions,
            explain=explain_pods,
            # Under --auth the dashboard reads as the signed-in user, through RBAC.
            as_user=guard is not None,
        )
        if guard is not None:
            app = SignIn(guard.gate(app, _not_the_api))
        config = uvicorn.Config(
            app,
            log_level="warning",
            # uvicorn's records reach the handlers `taintplane up` set (its --log-file)
            # instead of uvicorn's own stderr ones.
            log_config=None,
            interface="asgi3",
            lifespan="off",
            access_log=False,
            # Open watches are cut at shutdown (clients re-watch), as kube-apiserver does.
            timeout_graceful_shutdown=1,
            timeout_keep_alive=60,
            ssl_certfile=str(tls.cert) if tls else None,
            ssl_keyfile=str(tls.key) if tls else None,
            # No WebSocket protocol: kubectl exec, attach and port-forward's upgrades (its
            # WebSocket first, then SPDY) are answered as plain requests, whose Status tells
            # why no stream is served (apiserver/pod_streams.py), instead of a handshake
            # abandoned with an error line in the log.
            ws="none",
        )
        logging.getLogger("uvicorn.error").addFilter(_quiet_upgrades)
        self._server = uvicorn.Server(config)

    async def _retire(self, names: list[str]) -> None:
        assert self.client is not None
        for name in names:
            for kind, namespace in ((_NODES, ""), (_LEASES, "kube-node-lease")):
                try:
                    await self.client.delete(kind, name, namespace)
                except ApiError as error:
                    if error.code != 404:
                        raise

    async def _open_store(self) -> SqliteStore | EtcdStore:
        spec = parse_store_spec(self.config.store, self.config.data_dir)
        if isinstance(spec, Path):
            spec.parent.mkdir(parents=True, exist_ok=True)
            return await SqliteStore(spec, synchronous=self.config.synchronous).open()
        if self.config.synchronous != "NORMAL":
            raise StoreSpecError(
                f"{spec.url()}: --sync is for the SQLite store (etcd syncs every commit itself)"
            )
        # Imported here: gRPC loads only for an etcd store.
        from taintplane.store.etcd import EtcdStore, Unavailable

        try:
            return await EtcdStore(spec).open()
        except Unavailable as error:
            raise StoreUnavailableError(str(error)) from error

    async def serve(self) -> None:
        """Serve until :meth:`stop` (or a signal, in the main thread)."""
        assert self._server is not None
        assert self._socket is not None
        await self._server.serve(sockets=[self._socket])

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.create_task(work, name=name)
        self._components.append(task)

        def report(done: asyncio.Task[None]) -> None:
            if not done.cancelled() and done.exception() is not None:
                log.error("component %s stopped", name, exc_info=done.exception())

        task.add_done_callback(report)

    async def close(self) -> None:
        for task in self._components:
            task.cancel()
        await asyncio.gather(*self._components, return_exceptions=True)
        if self.apiserver is not None:
            await self.apiserver.close()
        if self.store is not None:
            await self.store.close()
        if self._socket is not None:
            self._socket.close()


@contextlib.contextmanager
def running_cluster(
    data_dir: Path,
    *,
    features: FeatureGates | None = None,
    clock: Clock | None = None,
    components: tuple[str, ...] = ("scheduler", "controller-manager"),
    nodes: list[NodeShape] | None = None,
    admission: AdmissionSetup | None = None,
) -> Iterator[Cluster]:
    """A cluster serving on an ephemeral port from a background thread, stopped on exit."""
    config = ClusterConfig(
        data_dir=data_dir,
        port=0,
        features=features or FeatureGates(),
        components=components,
        nodes=list(nodes or []),
        admission=admission,
    )
    cluster = Cluster(config, clock)
    cluster.bind()
    ready = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        async def main() -> None:
            try:
                await cluster.start()
            except BaseException as error:
                failure.append(error)
                # What did start (the store's writer thread, components) stops with it.
                await cluster.close()
                ready.set()
                return
            serving = asyncio.create_task(cluster.serve())
            while not (cluster._server and cluster._server.started) and not serving.done():
                await asyncio.sleep(0.005)
            ready.set()
            await serving
            await cluster.close()

        asyncio.run(main())

    thread = threading.Thread(target=run, name="taintplane-cluster", daemon=True)
    thread.start()
    ready.wait(30)
    if failure:
        raise failure[0]
    try:
        yield cluster
    finally:
        cluster.stop()
        thread.join(30)


@contextlib.asynccontextmanager
async def in_process_cluster(
    data_dir: Path,
    clock: Clock,
    *,
    components: tuple[str, ...] = ("scheduler", "controller-manager", "agents"),
    controllers: tuple[str, ...] = ALL_CONTROLLERS,
    features: FeatureGates | None = None,
    nodes: list[NodeShape] | None = None,
    controller_config: ControllerConfig | None = None,
    admission: AdmissionSetup | None = None,
    seed: list[dict[str, Any]] | None = None,
    elide_heartbeats: bool = True,
) -> AsyncIterator[Cluster]:
    """A cluster on the caller's event loop with no HTTP listener: components talk through
    the in-process transport, and a virtual clock drives everything deterministically."""
    config = ClusterConfig(
        data_dir=data_dir,
        port=0,
        features=features or FeatureGates(),
        components=components,
        controllers=controllers,
        nodes=list(nodes or []),
        controller_config=controller_config,
        admission=admission,
        seed=list(seed or []),
        elide_heartbeats=elide_heartbeats,
    )
    cluster = Cluster(config, clock)
    await cluster.start(listen=False)
    try:
        if isinstance(clock, VirtualClock):
            await clock.advance(0)
        yield cluster
    finally:
        await cluster.close()
