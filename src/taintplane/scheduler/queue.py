"""The scheduling queue: active, backoff and unschedulable pods.

* **active** pods wait to be scheduled, highest priority first, then oldest;
* a pod that failed goes to **unschedulable** with the plugins that rejected it, and leaves
  only when a cluster event one of those plugins cares about happens (a node added, a taint
  removed, labels or ``unschedulable`` changed, a pod deleted…), or after five minutes;
* a pod that leaves unschedulable (or failed with an error) waits out its **backoff**
  (1 s doubling to 10 s per attempt) before it is active again. As upstream's backoffQ with
  SchedulerPopFromBackoffQ (on by default since 1.33), backoff expiries are aligned to 1 s
  ordering windows, pods within a window are ordered as in the active queue, and when the
  active queue is empty the scheduler takes the first pod that was rejected by plugins from
  the backoff queue at once rather than idle (pods that failed with an error still wait).

A pod with ``spec.schedulingGates`` is **gated** (upstream's SchedulingGates PreEnqueue plugin):
it is never tried, and waits until an update removes its last gate. Other PreEnqueue plugins
(DynamicResources': a claim not created yet, missing, being deleted or not the pod's own) gate
a pod the same way each time it would become active: it is not tried (no attempt, no backoff,
no FailedScheduling) until an event the plugin cares about, or an update of the pod, lets it
through.

Queueing hints (SchedulerQueueingHints, GA and on in 1.35): for each event a rejecting plugin
registered, its hint, given the object before and after, says whether this event can make this
pod schedulable (Queue) or not (QueueSkip); the pod moves if any of its rejecting plugins says
Queue. A heartbeat never gets here (the scheduler raises events only for changes of taints,
labels, ``unschedulable`` or allocatable), and an unrelated taint wakes nobody, so the work per
event follows the pods it may help rather than every parked pod. Without a hint for a plugin
and event (or without the objects) the answer is Queue, as upstream's on an error.

If such an event happens while a pod is being scheduled and a hint says Queue for it, the pod
goes to backoff rather than unschedulable when it fails: otherwise the event that could have
helped it would be lost (upstream's inFlightEvents).
Time comes from the clock, so backoff and the five-minute flush run on virtual time in tests.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from taintplane.clock import Clock, sleep_or_wake
from taintplane.scheduler.events import ClusterEvent
from taintplane.scheduler.framework import QueueingHintFn
from taintplane.scheduler.nodeinfo import NodeInfo, PodInfo
from taintplane.scheduler.plugins import names

__all__ = ["ClusterEvent", "Hints", "SchedulingQueue"]

log = logging.getLogger(__name__)

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
MAX_IN_UNSCHEDULABLE = 300.0
#: ``backoffQOrderingWindowDuration``: expiries are truncated to whole windows.
BACKOFF_ORDERING_WINDOW = 1.0
SCHEDULING_GATES = "SchedulingGates"

#: A PreEnqueue plugin's check: may the pod be tried now?
PreEnqueue = Callable[[PodInfo], bool]
#: Each plugin's queueing hints, by plugin name, then by event kind.
Hints = Mapping[str, Mapping[str, QueueingHintFn]]


#: Which events may make a pod rejected by each plugin schedulable (upstream's EventsToRegister).
INTERESTS: dict[str, set[str]] = {
    names.TAINT_TOLERATION: {
        ClusterEvent.NODE_ADD,
        ClusterEvent.NODE_TAINT,
        ClusterEvent.POD_UPDATE,
    },
    names.NODE_UNSCHEDULABLE: {
        ClusterEvent.NODE_ADD,
        ClusterEvent.NODE_SCHEDULABLE,
        ClusterEvent.NODE_TAINT,
    },
    names.NODE_NAME: {ClusterEvent.NODE_ADD},
    names.NODE_AFFINITY: {ClusterEvent.NODE_ADD, ClusterEvent.NODE_LABEL, ClusterEvent.POD_UPDATE},
    names.POD_TOPOLOGY_SPREAD: {
        ClusterEvent.NODE_ADD,
        ClusterEvent.NODE_LABEL,
        ClusterEvent.NODE_TAINT,
        ClusterEvent.ASSIGNED_POD_ADD,
        ClusterEvent.ASSIGNED_POD_DELETE,
        ClusterEvent.ASSIGNED_POD_LABEL,
        ClusterEvent.POD_UPDATE,
    },
    # With queueing hints on, upstream registers no taint change for it (only without them,
    # to make up for the preCheck that could drop a node's add), but allocatable changes.
    names.DYNAMIC_RESOURCES: {
        ClusterEvent.NODE_ADD,
        ClusterEvent.NODE_LABEL,
        ClusterEvent.NODE_ALLOCATABLE,
        ClusterEvent.POD_GENERATED_CLAIM,
        ClusterEvent.RESOURCE_CLAIM,
        ClusterEvent.RESOURCE_SLICE,
        ClusterEvent.DEVICE_CLASS,
        ClusterEvent.DEVICE_TAINT_RULE,
    },
    names.NODE_PORTS: {
        ClusterEvent.NODE_ADD,
        ClusterEvent.NODE_LABEL,
        ClusterEvent.NODE_TAINT,
        ClusterEvent.ASSIGNED_POD_DELETE,
    },
    names.INTER_POD_AFFINITY: {
        ClusterEvent.NODE_ADD,
        ClusterEvent.NODE_LABEL,
        # A pod landing may be the one an affinity term waits for.
        ClusterEvent.ASSIGNED_POD_ADD,
        ClusterEvent.ASSIGNED_POD_DELETE,
        # A placed pod relabelled may start (or stop) to be the one a term waits for (avoids).
        ClusterEvent.ASSIGNED_POD_LABEL,
        ClusterEvent.POD_UPDATE,
    },
    names.NODE_RESOURCES_FIT: {
        ClusterEvent.NODE_ADD,
        ClusterEvent.NODE_ALLOCATABLE,
        ClusterEvent.ASSIGNED_POD_DELETE,
        ClusterEvent.ASSIGNED_POD_SCALE_DOWN,
        ClusterEvent.POD_UPDATE,
    },
}


#: The plugins interested in each event kind ("" stands for pods no plugin rejected).
_INTERESTED: dict[str, set[str]] = {}
for _plugin, _events in INTERESTS.items():
    for _event in _events:
        _INTERESTED.setdefault(_event, {""}).add(_plugin)


@dataclass
class QueuedPod:
    info: PodInfo
    attempts: int = 0
    added_at: float = 0.0
    backoff_until: float = 0.0
    rejected_by: set[str] = field(default_factory=set)
    cycle: int = 0


class SchedulingQueue:
    def __init__(
        self,
        clock: Clock,
        pre_enqueue: Mapping[str, PreEnqueue] | None = None,
        hints: Hints | None = None,
    ) -> None:
        self.clock = clock
        #: PreEnqueue plugins after SchedulingGates, by name, in order.
        self.pre_enqueue = dict(pre_enqueue or {})
        self.hints: Hints = hints or {}
        # Gated pods (lazily cleaned), checked again on the events their gate cares about.
        self._gated_keys: set[str] = set()
        self._order = itertools.count()
        self._active: list[tuple[int, float, int, str]] = []
        # Pods rejected by plugins (podBackoffQ): by expiry window, then as in the active queue.
        self._backoff: list[tuple[float, int, float, int, str]] = []
        # Pods that failed with an error (podErrorBackoffQ): by expiry only, never popped early.
        self._error_backoff: list[tuple[float, int, str]] = []
        self._pods: dict[str, QueuedPod] = {}
        # Where each pod is: "active", "backoff", "unschedulable" or "inflight".
        self._where: dict[str, str] = {}
        # Unschedulable pods by the time they were parked (a heap, lazily cleaned), so the
        # five-minute flush never scans the whole queue.
        self._parked: list[tuple[float, int, str]] = []
        # How many unschedulable pods each plugin rejected ("": pods none rejected), and what
        # rejected each, so that an event no parked pod's plugin cares about costs nothing.
        self._parked_by: dict[str, int] = {}
        self._parked_plugins: dict[str, frozenset[str]] = {}
        self._wakeup = asyncio.Event()
        self.scheduling_cycle = 0
        # Pods being scheduled, and the events (with the cycle they came in) since the oldest
        # of them was popped: a failing pod moves on if one of them may have helped it.
        self._inflight: set[str] = set()
        self._inflight_events: list[tuple[int, str, Any, Any, int | None]] = []

    # ---- adding and removing ---------------------------------------------------------------

    def add(self, info: PodInfo) -> None:
        queued = self._pods.get(info.key)
        if queued is None:
            queued = QueuedPod(info, added_at=self.clock.monotonic())
            self._pods[info.key] = queued
        else:
            queued.info = info
        if self._where.get(info.key) in ("active", "inflight"):
            return
        self._activate(queued)

    def update(
        self, info: PodInfo, old: PodInfo | None = None, event: str = ClusterEvent.POD_UPDATE
    ) -> None:
        """A pending pod changed: it may fit now (its tolerations or affinity grew)."""
        queued = self._pods.get(info.key)
        if queued is None:
            self.add(info)
            return
        queued.info = info
        # Upstream's Update: a pod in backoff stays there; an unschedulable one goes to
        # backoff, or active if its backoff is over, if its rejecting plugins' hints for this
        # change of the pod itself say Queue (always, when the old version is not given); a
        # gated one is checked again (PreEnqueue); one in flight remembers the change.
        where = self._where.get(info.key)
        if where == "gated" or (
            where == "unschedulable"
            and (old is None or self._worth_requeuing(queued, event, old, info))
        ):
            self._move(queued)
        elif where == "inflight":
            self._inflight_events.append((self.scheduling_cycle, event, old, info, None))

    def refresh(self, info: PodInfo) -> None:
        """A pending pod changed in a way that cannot make it fit (its status, say): keep the
        new object for the next attempt, but leave it where it waits (upstream's Update when
        isPodUpdated is false: the pod is swapped in place, not moved)."""
        queued = self._pods.get(info.key)
        if queued is not None:
            queued.info = info

    def delete(self, key: str) -> None:
        self._pods.pop(key, None)
        self._place(key, None)
        self._gated_keys.discard(key)

    def __contains__(self, key: str) -> bool:
        return key in self._pods

    def pending(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for where in self._where.values():
            counts[where] = counts.get(where, 0) + 1
        return counts

    def _place(self, key: str, where: str | None) -> None:
        """Where the pod is now (``None``: gone), keeping the counts of parked pods by
        rejecting plugin and the set of pods in flight."""
        was = self._where.get(key)
        if was == "unschedulable":
            for plugin in self._parked_plugins.pop(key):
                self._parked_by[plugin] -= 1
        elif was == "inflight":
            self._inflight.discard(key)
            if not self._inflight:
                self._inflight_events.clear()
        if where is None:
            self._where.pop(key, None)
            return
        self._where[key] = where
        if where == "unschedulable":
            plugins = frozenset(self._pods[key].rejected_by or {""})
            self._parked_plugins[key] = plugins
            for plugin in plugins:
                self._parked_by[plugin] = self._parked_by.get(plugin, 0) + 1
        elif where == "inflight":
            self._inflight.add(key)

    def _gate(self, queued: QueuedPod) -> bool:
        """``runPreEnqueuePlugins``: the first plugin that holds the pod back gates it (and is
        remembered as what rejected it, for the events that may let it through)."""
        info = queued.info
        gate = SCHEDULING_GATES if _gated(info) else ""
        for name, may_enqueue in self.pre_enqueue.items():
            if gate:
                break
            if not may_enqueue(info):
                gate = name
        if not gate:
            return False
        queued.rejected_by = {gate}
        self._place(info.key, "gated")
        self._gated_keys.add(info.key)
        return True

    def _activate(self, queued: QueuedPod) -> None:
        """Into the active queue (``moveToActiveQ``), unless a PreEnqueue plugin gates it."""
        if self._gate(queued):
            return
        key = queued.info.key
        self._place(key, "active")
        heapq.heappush(
            self._active, (-queued.info.priority, queued.added_at, next(self._order), key)
        )
        self._wakeup.set()

    def _to_backoff(self, queued: QueuedPod) -> None:
        """Into the backoff queue (upstream's backoffQueue.add): the error queue if no plugin
        rejected the pod. A PreEnqueue plugin may gate it instead, as upstream's
        ``moveToBackoffQ`` does (the backoff queue may be popped early)."""
        if self._gate(queued):
            return
        key = queued.info.key
        queued.backoff_until = _align(queued.added_at + _backoff(queued.attempts))
        self._place(key, "backoff")
        if queued.rejected_by:
            entry = (queued.backoff_until, -queued.info.priority, queued.added_at)
            heapq.heappush(self._backoff, (*entry, next(self._order), key))
        else:
            heapq.heappush(self._error_backoff, (queued.backoff_until, next(self._order), key))
        self._wakeup.set()

    def _backing_off(self, queued: QueuedPod) -> bool:
        """``isPodBackingoff``: until the window after the one its backoff expires in (a pod
        never tried, one just ungated say, owes no backoff)."""
        if queued.attempts == 0:
            return False
        expiry = _align(queued.added_at + _backoff(queued.attempts))
        return expiry >= _align(self.clock.monotonic())

    def _in_backoff(self, key: str, expiry: float) -> QueuedPod | None:
        """The pod of a backoff heap entry, unless the entry is stale."""
        queued = self._pods.get(key)
        if queued is None or self._where.get(key) != "backoff":
            return None
        return queued if queued.backoff_until == expiry else None

    # ---- the scheduling loop's side -----------------------------------------------------------

    async def pop(self) -> PodInfo:
        """The next pod to schedule; waits for one."""
        while True:
            self._flush()
            queued = self._pop_active() or self._pop_backoff()
            if queued is not None:
                self._place(queued.info.key, "inflight")
                queued.attempts += 1
                queued.rejected_by = set()  # as unlockedPop resets UnschedulablePlugins
                self.scheduling_cycle += 1
                queued.cycle = self.scheduling_cycle
                return queued.info
            self._wakeup.clear()
            due = self._next_due()
            delay = None if due is None else due - self.clock.monotonic()
            await sleep_or_wake(self.clock, delay, self._wakeup)

    def _pop_active(self) -> QueuedPod | None:
        while self._active:
            _, _, _, key = heapq.heappop(self._active)
            queued = self._pods.get(key)
            if queued is not None and self._where.get(key) == "active":
                return queued
            # else deleted or moved since it was pushed
        return None

    def _pop_backoff(self) -> QueuedPod | None:
        """SchedulerPopFromBackoffQ: with the active queue empty, the head of the backoff
        queue of rejected pods is tried before its backoff is over (``popBackoff``)."""
        while self._backoff:
            expiry, _, _, _, key = heapq.heappop(self._backoff)
            queued = self._in_backoff(key, expiry)
            if queued is not None:
                return queued
        return None

    def _next_due(self) -> float | None:
        self._drop_stale_parked()
        # Backoff completes when the window after the expiry's begins.
        candidates = [
            heap[0][0] + BACKOFF_ORDERING_WINDOW
            for heap in (self._backoff, self._error_backoff)
            if heap
        ]
        if self._parked:
            candidates.append(self._parked[0][0] + MAX_IN_UNSCHEDULABLE)
        return min(candidates) if candidates else None

    def _drop_stale_parked(self) -> None:
        while self._parked:
            parked_at, _, key = self._parked[0]
            queued = self._pods.get(key)
            if (
                queued is not None
                and self._where.get(key) == "unschedulable"
                and queued.added_at == parked_at
            ):
                return
            heapq.heappop(self._parked)

    def _flush(self) -> None:
        now = self.clock.monotonic()
        window = _align(now)
        while self._backoff and self._backoff[0][0] < window:
            expiry, _, _, _, key = heapq.heappop(self._backoff)
            if (queued := self._in_backoff(key, expiry)) is not None:
                self._activate(queued)
        while self._error_backoff and self._error_backoff[0][0] < window:
            expiry, _, key = heapq.heappop(self._error_backoff)
            if (queued := self._in_backoff(key, expiry)) is not None:
                self._activate(queued)
        self._drop_stale_parked()
        while self._parked and now - self._parked[0][0] >= MAX_IN_UNSCHEDULABLE:
            _, _, key = heapq.heappop(self._parked)
            self._move(self._pods[key])
            self._drop_stale_parked()

    def done(self, key: str) -> None:
        """The pod was scheduled (assumed on a node); it leaves the queue."""
        self.delete(key)

    def unschedulable(self, info: PodInfo, rejected_by: Iterable[str]) -> None:
        queued = self._pods.get(info.key)
        if queued is None:
            return  # deleted meanwhile
        queued.rejected_by = set(rejected_by)
        queued.added_at = self.clock.monotonic()
        if any(
            cycle >= queued.cycle
            and (max_priority is None or queued.info.priority <= max_priority)
            and self._worth_requeuing(queued, event, old, new)
            for cycle, event, old, new, max_priority in self._inflight_events
        ):
            self._move(queued)  # something that may help it changed while it was scheduled
        else:
            self._place(info.key, "unschedulable")
            heapq.heappush(self._parked, (queued.added_at, next(self._order), info.key))

    def error(self, info: PodInfo) -> None:
        queued = self._pods.get(info.key)
        if queued is None:
            queued = QueuedPod(info, attempts=1)
            self._pods[info.key] = queued
        queued.added_at = self.clock.monotonic()
        self._to_backoff(queued)

    # ---- cluster events -------------------------------------------------------------------

    def on_event(
        self,
        event: str,
        old: Any = None,
        new: Any = None,
        *,
        max_priority: int | None = None,
    ) -> None:
        """Move the unschedulable pods that ``event`` (``old`` and ``new``: the object before
        and after) may help, as their rejecting plugins' hints say; with ``max_priority`` only
        those of that priority or lower (upstream's PreEnqueueCheck getLEPriorityPreCheck)."""
        interested = _INTERESTED.get(event, {""})
        if self._inflight:
            self._inflight_events.append((self.scheduling_cycle, event, old, new, max_priority))
        if any(self._parked_by.get(plugin) for plugin in interested):
            # In the parked heap's order, as before hints: moves made at one instant keep the
            # order they had.
            for _, _, key in list(self._parked):
                queued = self._pods.get(key)
                if queued is None or self._where.get(key) != "unschedulable":
                    continue
                if max_priority is not None and queued.info.priority > max_priority:
                    continue
                if not self._parked_plugins[key].isdisjoint(interested) and (
                    self._worth_requeuing(queued, event, old, new)
                ):
                    self._move(queued)
        for key in list(self._gated_keys):
            queued = self._pods.get(key)
            if queued is None or self._where.get(key) != "gated":
                self._gated_keys.discard(key)
            elif queued.rejected_by and self._worth_requeuing(queued, event, old, new):
                self._move(queued)

    def _worth_requeuing(self, queued: QueuedPod, event: str, old: Any, new: Any) -> bool:
        """``isPodWorthRequeuing``: Queue if no plugin rejected the pod, or one that did
        registered ``event`` and its hint (or the lack of one) says Queue."""
        if not queued.rejected_by:
            return True
        for plugin in queued.rejected_by:
            if event not in INTERESTS.get(plugin, ()):
                continue
            hint = self.hints.get(plugin, {}).get(event)
            if hint is None or (old is None and new is None):
                return True
            try:
                if hint(queued.info, old, new):
                    return True
            except Exception as error:  # a failing hint must not strand the pod
                log.info("queueing hint of %s for %s failed: %s", plugin, event, error)
                return True
            if _on_nominated_node(queued, new):
                return True
        return False

    def _move(self, queued: QueuedPod) -> None:
        """Out of unschedulable (or gated): to backoff if its backoff since the failure has not
        passed, else active (where the PreEnqueue plugins may gate it again)."""
        if self._backing_off(queued):
            self._to_backoff(queued)
        else:
            self._activate(queued)


def _on_nominated_node(queued: QueuedPod, node: Any) -> bool:
    """A change of the node the pod is nominated to (and holds room on) is worth a retry, so
    that a nomination that can no longer hold is cleared at once. Upstream's hints would wait
    for an event that helps the pod (its victims' deletion, say); here, where only nominated
    pods pay for it, the retry is kept as it was before hints."""
    if not isinstance(node, NodeInfo):
        return False
    nominated = (queued.info.pod.get("status") or {}).get("nominatedNodeName")
    return bool(nominated) and nominated == node.name


def _gated(info: PodInfo) -> bool:
    """The SchedulingGates plugin's PreEnqueue: "waiting for scheduling gates"."""
    return bool((info.pod.get("spec") or {}).get("schedulingGates"))


def _backoff(attempts: int) -> float:
    return float(min(INITIAL_BACKOFF * 2.0 ** max(attempts - 1, 0), MAX_BACKOFF))


def _align(instant: float) -> float:
    """``alignToWindow``: the start of the ordering window ``instant`` falls in."""
    return math.floor(instant / BACKOFF_ORDERING_WINDOW) * BACKOFF_ORDERING_WINDOW
