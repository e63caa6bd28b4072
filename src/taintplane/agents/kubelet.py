"""Simulated kubelets: many nodes driven by one component, at little cost per node.

Each node registers itself (labels, capacity, registration taints), renews its Lease in
``kube-node-lease`` every 10 s (40 s lease times 0.25), and posts its status when it changes or
every 5 minutes, as a kubelet does. Pods bound to a node are admitted (a pod that does not
tolerate the node's NoExecute taints is rejected, as upstream's kubelet does), started, and on
deletion stopped once their grace period — or their simulated shutdown time, if shorter — is
over. Fault injection stops a node's heartbeats (``stop``), or sets a condition.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from taintplane.agents.dra_driver import DraDriver
from taintplane.agents.nodes import (
    HEALTHY,
    NodeShape,
    machine_resources,
    node_capacity,
    node_object,
    node_status,
    resources_changed,
    set_conditions,
    status_changed,
)
from taintplane.agents.pods import PodRuntime
from taintplane.api.decoding import format_micro_time, parse_timestamp
from taintplane.client import ApiError, Client, Op, resource
from taintplane.client.events import EventRecorder
from taintplane.client.shared import SharedInformers
from taintplane.clock import Clock

__all__ = ["KubeletConfig", "KubeletElision", "Kubelets", "SimulatedNode", "UnknownNodeError"]

log = logging.getLogger(__name__)

NODES = resource("", "v1", "nodes")
LEASES = resource("coordination.k8s.io", "v1", "leases")
LEASE_NAMESPACE = "kube-node-lease"
#: Writes of one tick go out in batches of this many (``Client.batch``: one store
#: transaction and one watch fan-out each, in process), every request still whole.
BATCH = 128


class UnknownNodeError(KeyError):
    pass


class KubeletElision(Protocol):
    """Under a virtual clock, what lets heartbeat ticks of a steady cluster be skipped and
    written down later (``taintplane.sim.steady``); the kubelets only ask and report."""

    async def kubelet_tick(self) -> bool:
        """Whether this tick is elided (what of it shows is written in time)."""
        ...

    async def kubelet_idle(self) -> None:
        """After an elided tick: return at the instant of the next tick to run (the ticks
        between are elided too)."""
        ...

    def after_kubelet_tick(self) -> None:
        """A full tick is done: the cluster may have become steady."""
        ...

    def interrupt(self) -> None:
        """Something a heartbeat depends on is about to change: stop eliding, now."""
        ...

    async def settled(self) -> None:
        """Wait until elided heartbeats are written down."""
        ...


@dataclass
class KubeletConfig:
    node_lease_duration_seconds: int = 40
    #: nodeStatusUpdateFrequency: how often status is computed (and the lease renewed,
    #: 40 s times 0.25 = 10 s coincides).
    node_status_update_frequency: float = 10.0
    #: nodeStatusReportFrequency: an unchanged status is posted this often.
    node_status_report_frequency: float = 300.0

    @property
    def lease_renew_interval(self) -> float:
        return self.node_lease_duration_seconds * 0.25


@dataclass
class SimulatedNode:
    shape: NodeShape
    index: int
    running: bool = True
    uid: str = ""
    #: The conditions of the newest Node the kubelet has seen (its own writes, its informer,
    #: a GET), and that Node's resourceVersion: what its status setters start from.
    stored_conditions: list[dict[str, Any]] = field(default_factory=list)
    stored_version: int = -1
    #: Injected condition statuses that override the healthy defaults.
    overrides: dict[str, str] = field(default_factory=dict)
    last_report: datetime | None = None
    last_renew: datetime | None = None
    #: spec.unschedulable as the kubelet last saw it (upstream's lastNodeUnschedulable).
    last_unschedulable: bool = False

    @property
    def name(self) -> str:
        return self.shape.name


class Kubelets:
    def __init__(
        self,
        client: Client,
        clock: Clock,
        informers: SharedInformers | None = None,
        config: KubeletConfig | None = None,
    ) -> None:
        self.client = client
        self.clock = clock
        self.config = config or KubeletConfig()
        self.informers = informers or SharedInformers(client, clock=clock)
        self._own_informers = informers is None
        # Ask for every informer now: they start together, before any pod is admitted.
        self.node_informer = self.informers.nodes
        self.nodes: dict[str, SimulatedNode] = {}
        self.recorders: dict[str, EventRecorder] = {}
        self.pods = PodRuntime(self)
        #: The simulated DRA driver publishing the nodes' devices (``NodeShape.devices``).
        self.dra = DraDriver(client, clock)
        self._next_index = 1
        self._wake = asyncio.Event()
        #: Set by the cluster under a virtual clock (None: every tick runs in full).
        self.elision: KubeletElision | None = None
        #: The instant of the first tick when nodes were adopted (``adopt``): their kubelets'
        #: own schedule, not one restarted at adoption.
        self._first_tick: datetime | None = None

    # ---- registration ------------------------------------------------------------------------

    async def add(self, shapes: Iterable[NodeShape], *, concurrency: int = 32) -> None:
        """Register nodes (concurrently), each with its status and Lease."""
        if self.elision is not None:
            self.elision.interrupt()
            await self.elision.settled()
        slots = asyncio.Semaphore(concurrency)

        async def one(shape: NodeShape) -> None:
            async with slots:
                await self._register(shape)

        await asyncio.gather(*(one(shape) for shape in shapes))

    async def adopt(self, shapes: Iterable[NodeShape]) -> None:
        """Take over nodes the store already holds as their own kubelets left them (what-if's
        copy of a snapshot), instead of registering them: each starts from its Node and Lease
        as stored (conditions and resourceVersion, the last status report as the Ready
        condition's lastHeartbeatTime, the last renewal as the Lease's renewTime, the cordon
        as told), and nothing is written until the first tick, which falls where theirs would
        (a tick after the newest renewal: one loop ticks for every node, and the nodes of a
        taintplane cluster renew together). The copy is no kubelet restart: no Starting event,
        no forced status post or renewal. Two lists, not requests per node; a node the store
        does not hold is registered as ``add`` does, and one no kubelet has reported (no
        allocatable: a hand-written snapshot) has its status posted at once, for pods are
        admitted against it."""
        if self.elision is not None:
            self.elision.interrupt()
            await self.elision.settled()
        stored_nodes, _ = await self.client.list(NODES)
        stored_leases, _ = await self.client.list(LEASES, LEASE_NAMESPACE)
        nodes = {n["metadata"]["name"]: n for n in stored_nodes}
        leases = {lease["metadata"]["name"]: lease for lease in stored_leases}
        fresh: list[NodeShape] = []
        unreported: list[SimulatedNode] = []
        renewals: list[datetime] = []
        for shape in shapes:
            stored = nodes.get(shape.name)
            if stored is None:
                fresh.append(shape)
                continue
            node = _adopted(shape, self._next_index, stored, leases.get(shape.name))
            self._next_index += 1
            self.nodes[shape.name] = node
            self.recorders[shape.name] = EventRecorder(
                self.client, self.clock, "kubelet", shape.name
            )
            if node.last_renew is not None:
                renewals.append(node.last_renew)
            if not (stored.get("status") or {}).get("allocatable"):
                unreported.append(node)
        if renewals:
            self._first_tick = max(renewals) + timedelta(
                seconds=self.config.node_status_update_frequency
            )
        if unreported:
            await self._post_statuses(unreported, force=True)
        if fresh:
            await self.add(fresh)

    async def _register(self, shape: NodeShape) -> None:
        node = SimulatedNode(shape, self._next_index)
        self._next_index += 1
        self.nodes[shape.name] = node
        self.recorders[shape.name] = EventRecorder(self.client, self.clock, "kubelet", shape.name)
        try:
            created = await self.client.create(NODES, node_object(shape))
        except ApiError as error:
            if error.code != 409:
                raise
            created = await self.client.get(NODES, shape.name)  # registered before a restart
        node.uid = str(created["metadata"].get("uid", ""))
        _remember(node, created)
        # What a starting kubelet tells about itself before its first status.
        recorder = self.recorders[shape.name]
        reference = _node_reference(shape.name)
        recorder.event({}, "Normal", "Starting", "Starting kubelet.", reference=reference)
        recorder.event(
            {},
            "Normal",
            "NodeAllocatableEnforced",
            "Updated Node Allocatable limit across pods",
            reference=reference,
        )
        await self._post_status(node, force=True)
        await self._renew_lease(node)
        await self.dra.publish_node(shape, node.uid)

    def node(self, name: str) -> SimulatedNode:
        found = self.nodes.get(name)
        if found is None:
            raise UnknownNodeError(name)
        return found

    # ---- fault injection -------------------------------------------------------------------------

    def stop(self, name: str) -> None:
        """The kubelet goes silent: no lease renewals, no status, no pod work."""
        node = self.node(name)
        if self.elision is not None:
            self.elision.interrupt()
        node.running = False

    async def start(self, name: str) -> None:
        node = self.node(name)
        if node.running:
            return
        if self.elision is not None:
            self.elision.interrupt()
            await self.elision.settled()
        node.running = True
        # While it was silent the node lifecycle controller may have set its conditions
        # Unknown; read them from the API server, as upstream's status update does, rather
        # than trust an informer that may not have caught up yet.
        try:
            _remember(node, await self.client.get(NODES, name))
        except ApiError as error:
            log.info("kubelet %s: reading its node failed: %s", name, error)
        await self._post_status(node, force=True)
        await self._renew_lease(node)
        self.pods.resync(name)

    def zone_nodes(self, zone: str) -> list[str]:
        return [n.name for n in self.nodes.values() if n.shape.zone == zone]

    async def set_condition(self, name: str, type_: str, status: str) -> None:
        node = self.node(name)
        if self.elision is not None:
            self.elision.interrupt()
            await self.elision.settled()
        if status == HEALTHY.get(type_) or (type_ == "NetworkUnavailable" and status == ""):
            node.overrides.pop(type_, None)
        else:
            node.overrides[type_] = status
        if node.running:
            await self._post_status(node)

    # ---- heartbeats ------------------------------------------------------------------------------

    def _desired(self, node: SimulatedNode) -> dict[str, str]:
        wanted = dict(HEALTHY)
        wanted.update(node.overrides)
        return wanted

    def _schedulable_event(self, node: SimulatedNode) -> None:
        """Upstream's recordNodeSchedulableEvent, run with the status setters on every status
        update: NodeNotSchedulable / NodeSchedulable when spec.unschedulable has changed
        (cordon, uncordon) since the kubelet last looked."""
        seen = self.node_informer.get(node.name)
        unschedulable = bool(((seen or {}).get("spec") or {}).get("unschedulable"))
        if seen is None or unschedulable == node.last_unschedulable:
            return
        node.last_unschedulable = unschedulable
        reason = "NodeNotSchedulable" if unschedulable else "NodeSchedulable"
        self.recorders[node.name].event(
            {},
            "Normal",
            reason,
            f"Node {node.name} status is now: {reason}",
            reference=_node_reference(node.name),
        )

    async def _post_status(
        self, node: SimulatedNode, *, force: bool = False, at: datetime | None = None
    ) -> None:
        """Upstream's tryUpdateNodeStatus: run the condition setters on the stored node (as
        the informer has it, unless the kubelet's own last write is newer), post the status
        if it changed or is due, then tell the changes. ``at``: the instant of an elided
        tick being written down (its timestamps, not the clock's)."""
        await self._post_statuses([node], force=force, at=at)

    def _status_due(
        self, node: SimulatedNode, force: bool, now: datetime
    ) -> tuple[dict[str, Any], list[str]] | None:
        """The status to post at ``now`` and the events it tells, or None when unchanged
        and not yet due again."""
        self._schedulable_event(node)
        seen = self.node_informer.get(node.name)
        if seen is not None:
            _remember(node, seen)
        conditions, events = set_conditions(node.stored_conditions, self._desired(node), now)
        capacity, allocatable = machine_resources(node_capacity(node.shape), seen)
        changed = status_changed(node.stored_conditions, conditions) or (
            seen is not None and resources_changed(capacity, allocatable, seen)
        )
        due = node.last_report is None or (
            (now - node.last_report).total_seconds() >= self.config.node_status_report_frequency
        )
        if not (force or changed or due):
            return None
        status = node_status(node.shape, node.index, conditions)
        status["capacity"], status["allocatable"] = capacity, allocatable
        if seen is not None and int(seen["metadata"].get("resourceVersion") or 0) >= (
            node.stored_version
        ):
            # As upstream's PatchNodeStatus: only what differs from the node as read (the
            # conditions always), not the whole status every 5 minutes — a smaller write.
            stored = seen.get("status") or {}
            status = {
                key: value
                for key, value in status.items()
                if key == "conditions" or stored.get(key) != value
            }
        return status, events

    async def _post_statuses(
        self, nodes: list[SimulatedNode], *, force: bool = False, at: datetime | None = None
    ) -> None:
        """_post_status for several nodes, their posts in batches."""
        now = at or self.clock.now()
        wanted = [(node, self._status_due(node, force, now)) for node in nodes]
        due = [(node, found) for node, found in wanted if found is not None]
        for start in range(0, len(due), BATCH):
            chunk = due[start : start + BATCH]
            ops = [
                Op.patch(NODES, node.name, {"status": status}, subresource="status")
                for node, (status, _) in chunk
            ]
            answers = await self.client.batch(ops)
            for (node, (_, events)), answer in zip(chunk, answers, strict=True):
                if isinstance(answer, ApiError):
                    log.info("kubelet %s: posting status failed: %s", node.name, answer)
                    continue
                node.last_report = now
                _remember(node, answer)
                reference = _node_reference(node.name)
                for reason in events:
                    self.recorders[node.name].event(
                        {},
                        "Normal",
                        reason,
                        f"Node {node.name} status is now: {reason}",
                        reference=reference,
                    )

    async def _renew_leases(self, nodes: list[SimulatedNode], at: datetime | None = None) -> None:
        """The renewals of one tick, in batches; a node whose renewal fails (its Lease
        deleted, say) goes the one-by-one way, which creates a missing Lease."""
        now = at or self.clock.now()
        renewed = {"spec": {"renewTime": format_micro_time(now)}}
        for start in range(0, len(nodes), BATCH):
            chunk = nodes[start : start + BATCH]
            answers = await self.client.batch(
                [Op.patch(LEASES, n.name, renewed, namespace=LEASE_NAMESPACE) for n in chunk]
            )
            for node, answer in zip(chunk, answers, strict=True):
                if isinstance(answer, ApiError):
                    await self._renew_lease(node, at=now)
                else:
                    node.last_renew = now

    async def _renew_lease(self, node: SimulatedNode, at: datetime | None = None) -> None:
        """Upstream's lease controller: a renewal changes only renewTime (the rest of the
        lease as it is); a missing lease is created with the bare minimum newLease sets —
        holder, duration, renewal and the Node as owner (no acquireTime, no transitions)."""
        now = at or self.clock.now()
        renewed = {"renewTime": format_micro_time(now)}
        try:
            await self.client.patch(LEASES, node.name, {"spec": renewed}, namespace=LEASE_NAMESPACE)
        except ApiError as error:
            if error.code != 404:
                log.info("kubelet %s: renewing the lease failed: %s", node.name, error)
                return
            owner_uid = await self._current_node_uid(node)
            if owner_uid is None:
                return
            lease = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {
                    "name": node.name,
                    "namespace": LEASE_NAMESPACE,
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Node", "name": node.name, "uid": owner_uid}
                    ],
                },
                "spec": {
                    "holderIdentity": node.name,
                    "leaseDurationSeconds": self.config.node_lease_duration_seconds,
                    **renewed,
                },
            }
            try:
                await self.client.create(LEASES, lease, namespace=LEASE_NAMESPACE)
            except ApiError as again:
                log.info("kubelet %s: creating the lease failed: %s", node.name, again)
                return
        node.last_renew = now

    # ---- elided ticks -------------------------------------------------------------------------

    def steady(self) -> bool:
        """Whether the next ticks would do nothing but renew every lease and post unchanged
        statuses when due: every node running, renewed at this instant, its conditions as
        wanted and its cordon already told."""
        now = self.clock.now()
        for node in self.nodes.values():
            if not node.running or node.last_renew != now or node.last_report is None:
                return False
            seen = self.node_informer.get(node.name)
            if seen is None:
                return False
            if bool((seen.get("spec") or {}).get("unschedulable")) != node.last_unschedulable:
                return False
            _remember(node, seen)
            conditions, events = set_conditions(node.stored_conditions, self._desired(node), now)
            if events or status_changed(node.stored_conditions, conditions):
                return False
        return True

    async def write_elided(
        self, names: list[str], reports: dict[str, datetime], renewed: datetime | None
    ) -> None:
        """Write what elided ticks would have written, with their timestamps: for each node
        named, the status report due at ``reports[name]`` and the lease renewal of
        ``renewed``, each when newer than what the node last wrote."""
        nodes = [self.nodes[n] for n in names if n in self.nodes]
        by_instant: dict[datetime, list[SimulatedNode]] = {}
        for node in nodes:
            report = reports.get(node.name)
            if report is not None and (node.last_report is None or report > node.last_report):
                by_instant.setdefault(report, []).append(node)
        for instant, reporting in sorted(by_instant.items()):
            await self._post_statuses(reporting, force=True, at=instant)
        if renewed is not None:
            stale = [n for n in nodes if n.last_renew is None or renewed > n.last_renew]
            await self._renew_leases(stale, at=renewed)

    async def _current_node_uid(self, node: SimulatedNode) -> str | None:
        """Upstream's setNodeOwnerFunc: the owner of a new Lease is the Node as it is now —
        one deleted and created again has another uid than at registration. Without a Node
        no Lease is created (it would be garbage at once); the next renewal tries again."""
        try:
            current = await self.client.get(NODES, node.name)
        except ApiError as error:
            log.info(
                "kubelet %s: getting its node for the lease owner failed: %s", node.name, error
            )
            return None
        return str(current["metadata"].get("uid", ""))

    async def heartbeat(self) -> None:
        """One round: every running node renews its lease and posts status if due (the
        renewals, then the posts, each in batches)."""
        running = [n for n in self.nodes.values() if n.running]
        await self._renew_leases(running)
        await self._post_statuses(running)

    async def run(self) -> None:
        self.informers.start()  # shared ones too: starting is idempotent
        try:
            await self.informers.wait_synced()
            self.pods.start()
            for name in self.nodes:
                self.pods.resync(name)
            due = False  # at the instant of a tick already (after sleeping through elided ones)
            first, self._first_tick = self._first_tick, None
            while True:
                if first is not None:  # adopted nodes: their own schedule
                    await self.clock.sleep(max(0.0, (first - self.clock.now()).total_seconds()))
                    first = None
                elif not due:
                    await self.clock.sleep(self.config.node_status_update_frequency)
                due = False
                if self.elision is None:
                    await self.heartbeat()
                elif await self.elision.kubelet_tick():
                    await self.elision.kubelet_idle()
                    due = True
                else:
                    await self.elision.settled()
                    await self.heartbeat()
                    self.elision.after_kubelet_tick()
        finally:
            await self.pods.stop()
            if self._own_informers:
                await self.informers.stop()


def _remember(node: SimulatedNode, seen: dict[str, Any]) -> None:
    """Keep the conditions of ``seen`` unless the kubelet already knows a newer Node: an
    informer may still hold the node from before the kubelet's last status post."""
    version = int(seen["metadata"].get("resourceVersion") or 0)
    if version >= node.stored_version:
        node.stored_version = version
        node.stored_conditions = (seen.get("status") or {}).get("conditions") or []


def _adopted(
    shape: NodeShape, index: int, stored: dict[str, Any], lease: dict[str, Any] | None
) -> SimulatedNode:
    """The kubelet of a node as stored: what its own kubelet last wrote and saw."""
    node = SimulatedNode(shape, index, uid=str(stored["metadata"].get("uid", "")))
    _remember(node, stored)
    # Every status post stamps the Ready condition's heartbeat, which only the kubelet sets
    # (a route controller stamps NetworkUnavailable's; the node lifecycle controller's
    # Unknown keeps the kubelet's): the instant of the last report.
    for condition in node.stored_conditions:
        if condition.get("type") == "Ready":
            node.last_report = parse_timestamp(condition.get("lastHeartbeatTime"))
    if lease is not None:
        node.last_renew = parse_timestamp((lease.get("spec") or {}).get("renewTime"))
    node.last_unschedulable = bool((stored.get("spec") or {}).get("unschedulable"))
    return node


def _node_reference(name: str) -> dict[str, str]:
    """The kubelet's reference to its node: the name stands in for the uid, as upstream's
    (``kubectl describe node`` looks for events under both)."""
    return {"kind": "Node", "name": name, "uid": name}
