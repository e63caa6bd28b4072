"""Watching a simulated cluster: every change to its pods and nodes, written down at the
instant it happens (``what-if`` and ``simulate`` report from this)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from taintplane.api.podconditions import find_condition
from taintplane.api.taints import Taint
from taintplane.client import Client, Informer, object_key, resource
from taintplane.client.shared import SharedInformers
from taintplane.clock import Clock

__all__ = ["NODES", "Happening", "Recorder", "node_taints", "owner_of"]

NODES = resource("", "v1", "nodes")
PODS = resource("", "v1", "pods")
EVENTS = resource("", "v1", "events")


def node_taints(node: dict[str, Any]) -> list[Taint]:
    return [Taint.from_dict(t) for t in (node.get("spec") or {}).get("taints") or []]


@dataclass(frozen=True)
class Happening:
    """One thing that happened in the simulation, at the instant it happened."""

    at: datetime
    #: tainted, untainted, node-condition, created, scheduled, unschedulable, evicting,
    #: marked (a pod already terminating given a DisruptionTarget condition), terminating,
    #: running, failed, succeeded, deleted
    event: str
    kind: str
    name: str
    namespace: str = ""
    detail: str = ""

    @property
    def object(self) -> str:
        prefix = self.kind.lower()
        return (
            f"{prefix}/{self.namespace}/{self.name}" if self.namespace else f"{prefix}/{self.name}"
        )


def owner_of(pod: dict[str, Any]) -> str:
    for ref in pod["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return f"{ref.get('kind')}/{ref.get('name')}"
    return ""


def _pod_changes(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, str]]:
    """What a pod update says happened, as (event, detail)."""
    changes: list[tuple[str, str]] = []
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if new_spec.get("nodeName") and not old_spec.get("nodeName"):
        changes.append(("scheduled", f"to {new_spec['nodeName']}"))
    scheduled = find_condition(new, "PodScheduled") or {}
    before = find_condition(old, "PodScheduled") or {}
    if scheduled.get("reason") == "Unschedulable" and (
        scheduled.get("message") != before.get("message") or before.get("reason") != "Unschedulable"
    ):
        changes.append(("unschedulable", str(scheduled.get("message") or "")))
    disruption = find_condition(new, "DisruptionTarget") or {}
    disrupted = disruption.get("status") == "True"
    why = f"{disruption.get('reason')}: {disruption.get('message')}"
    if new["metadata"].get("deletionTimestamp") and not old.get("metadata", {}).get(
        "deletionTimestamp"
    ):
        if disrupted:
            changes.append(("evicting", why))
        else:
            grace = new["metadata"].get("deletionGracePeriodSeconds")
            changes.append(("terminating", f"grace period {grace}s"))
    elif (
        new["metadata"].get("deletionTimestamp")
        and disrupted
        and (find_condition(old, "DisruptionTarget") or {}).get("status") != "True"
    ):
        # The taint eviction controller marks (and deletes again) a pod whose deletion had
        # already begun: the DisruptionTarget condition is all that changes.
        changes.append(("marked", why))
    phase = (new.get("status") or {}).get("phase")
    if phase != (old.get("status") or {}).get("phase"):
        status = new.get("status") or {}
        if phase == "Running":
            changes.append(("running", f"on {new_spec.get('nodeName', '')}"))
        elif phase == "Failed":
            changes.append(("failed", f"{status.get('reason', '')}: {status.get('message', '')}"))
        elif phase == "Succeeded":
            changes.append(("succeeded", ""))
    return changes


def _node_changes(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, str]]:
    changes: list[tuple[str, str]] = []
    before = {(t.key, t.value, t.effect) for t in node_taints(old)}
    after = {(t.key, t.value, t.effect) for t in node_taints(new)}
    for taint in node_taints(new):
        if (taint.key, taint.value, taint.effect) not in before:
            changes.append(("tainted", taint.to_string()))
    for taint in node_taints(old):
        if (taint.key, taint.value, taint.effect) not in after:
            changes.append(("untainted", taint.to_string()))
    ready_before = _ready_condition(old)
    ready_after = _ready_condition(new)
    if ready_after.get("status") != ready_before.get("status"):
        changes.append(
            ("node-condition", f"Ready={ready_after.get('status')} ({ready_after.get('reason')})")
        )
    return changes


def _ready_condition(node: dict[str, Any]) -> dict[str, Any]:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return dict(condition)
    return {}


#: The event the ReplicaSet, DaemonSet and Job controllers record for each pod they delete.
SUCCESSFUL_DELETE = "SuccessfulDelete"
_DELETED_POD = "Deleted pod: "


class Recorder:
    """Pods and nodes of a cluster, and every change to them once armed."""

    def __init__(
        self, client: Client, clock: Clock, informers: SharedInformers | None = None
    ) -> None:
        """``informers``: the cluster's shared ones (running), so that pods and nodes are
        cached and decoded once in the process, not once more for the recorder; without
        them it runs informers of its own."""
        self.clock = clock
        self.armed = False
        self.timeline: list[Happening] = []
        #: Pods created while armed, in order, with their controller ("Kind/name" or "").
        self.created: dict[str, str] = {}
        #: When each pod's deletion began, whether it was an eviction, and why.
        self.deleting: dict[str, tuple[datetime, bool, str]] = {}
        self.deleted: dict[str, datetime] = {}
        #: When a pod already terminating was given a DisruptionTarget condition, and why.
        self.marked: dict[str, tuple[datetime, str]] = {}
        #: The node each pod was last scheduled to while armed.
        self.placed: dict[str, str] = {}
        self.unschedulable: dict[str, str] = {}
        self._shared = informers
        if informers is None:
            self.pods = Informer(
                client,
                PODS,
                on_add=self._pod_added,
                on_update=self._pod_updated,
                on_delete=self._pod_deleted,
                clock=clock,
            )
            self.nodes = Informer(client, NODES, on_update=self._node_updated, clock=clock)
        else:
            self.pods, self.nodes = informers.pods, informers.nodes
        #: Events say who deleted a pod when no DisruptionTarget condition does: only those
        #: (a cluster's every Scheduled, Pulled, Started… would be decoded and kept for nothing).
        self.events = Informer(
            client, EVENTS, field_selector=f"reason={SUCCESSFUL_DELETE}", clock=clock
        )
        self._tasks: list[asyncio.Task[None]] = []
        self._deleter_index: dict[str, str] | None = None
        self._deleter_version: tuple[str, int] | None = None

    async def start(self) -> None:
        informers = (self.pods, self.nodes, self.events)
        own: tuple[Informer, ...] = informers
        if self._shared is not None:
            # Told of every pod already cached, as added: not armed yet, so not recorded.
            self.pods.add_handlers(self._pod_added, self._pod_updated, self._pod_deleted)
            self.nodes.add_handlers(None, self._node_updated)
            self._shared.start()
            own = (self.events,)
        for informer in own:
            self._tasks.append(asyncio.create_task(informer.run()))
        await asyncio.gather(*(informer.synced.wait() for informer in informers))
        self.armed = True

    def deleted_by(self, key: str) -> str:
        """The controller whose event says it deleted the pod (``SuccessfulDelete``, as the
        ReplicaSet, DaemonSet and Job controllers record), as "Kind name"; "" if none did."""
        return self._deleters().get(key, "")

    def _deleters(self) -> dict[str, str]:
        """Pod key to its deleter, from the events as the informer has them now: built once
        per change of its cache, not walked once per pod asked about (a report asks about
        every pod of the tainted nodes)."""
        version = (self.events.resource_version, len(self.events.cache))
        if self._deleter_index is None or self._deleter_version != version:
            index: dict[str, str] = {}
            for event in self.events.cache.values():
                message = str(event.get("message") or "")
                if event.get("reason") != SUCCESSFUL_DELETE or not message.startswith(_DELETED_POD):
                    continue
                key = f"{event['metadata'].get('namespace')}/{message[len(_DELETED_POD) :]}"
                involved = event.get("involvedObject") or {}
                index.setdefault(key, f"{involved.get('kind')} {involved.get('name')}")
            self._deleter_index, self._deleter_version = index, version
        return self._deleter_index

    def named_deleters(self) -> list[Happening]:
        """The timeline, with the deleter named where the pod's update did not say."""
        timeline = []
        for happening in self.timeline:
            if happening.event == "terminating":
                key = f"{happening.namespace}/{happening.name}"
                deleter = self.deleted_by(key)
                if deleter:
                    happening = replace(happening, detail=f"by {deleter}, {happening.detail}")
            timeline.append(happening)
        return timeline

    def deletion(self, key: str) -> tuple[datetime, bool, str] | None:
        """When the pod's deletion began, whether by eviction, and why (with the deleter)."""
        found = self.deleting.get(key)
        if found is None or found[1]:
            return found
        deleter = self.deleted_by(key)
        return (found[0], False, f"by {deleter}, {found[2]}" if deleter else found[2])

    async def stop(self) -> None:
        self.armed = False  # shared informers keep telling it
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _record(self, event: str, obj: dict[str, Any], detail: str) -> None:
        metadata = obj["metadata"]
        self.timeline.append(
            Happening(
                at=self.clock.now(),
                event=event,
                kind=str(obj.get("kind") or ("Pod" if "namespace" in metadata else "Node")),
                name=metadata["name"],
                namespace=metadata.get("namespace", ""),
                detail=detail,
            )
        )

    def _pod_added(self, pod: dict[str, Any]) -> None:
        if not self.armed:
            return
        owner = self.created[object_key(pod)] = owner_of(pod)
        self._record("created", pod, f"by {owner.replace('/', ' ')}" if owner else "")
        self._pod_updated({"metadata": {}}, pod)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if not self.armed:
            return
        key = object_key(new)
        for event, detail in _pod_changes(old, new):
            self._record(event, new, detail)
            if event in ("evicting", "terminating"):
                self.deleting[key] = (self.clock.now(), event == "evicting", detail)
            elif event == "marked":
                self.marked[key] = (self.clock.now(), detail)
            elif event == "unschedulable":
                self.unschedulable[key] = detail
            elif event == "scheduled":
                self.placed[key] = str((new.get("spec") or {}).get("nodeName") or "")

    def _pod_deleted(self, pod: dict[str, Any]) -> None:
        if not self.armed:
            return
        self.deleted[object_key(pod)] = self.clock.now()
        self._record("deleted", pod, "")

    def _node_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if not self.armed:
            return
        for event, detail in _node_changes(old, new):
            self._record(event, new, detail)
