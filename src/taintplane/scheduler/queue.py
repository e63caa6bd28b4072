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

If such an event happens while a pod is being scheduled, the pod goes to backoff rather than
unschedulable when it fails: otherwise the event that could have helped it would be lost.
Time comes from the clock, so backoff and the five-minute flush run on virtual time in tests.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from taintplane.clock import Clock, sleep_or_wake
from taintplane.scheduler.nodeinfo import PodInfo
from taintplane.scheduler.plugins import names

__all__ = ["ClusterEvent", "SchedulingQueue"]

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
MAX_IN_UNSCHEDULABLE = 300.0
#: ``backoffQOrderingWindowDuration``: expiries are truncated to whole windows.
BACKOFF_ORDERING_WINDOW = 1.0
SCHEDULING_GATES = "SchedulingGates"

#: A PreEnqueue plugin's check: may the pod be tried now?
PreEnqueue = Callable[[PodInfo], bool]


class ClusterEvent:
    NODE_ADD = "NodeAdd"
    NODE_TAINT = "NodeTaintChange"
    NODE_LABEL = "NodeLabelChange"
    NODE_SCHEDULABLE = "NodeSpecUnschedulableChange"
    NODE_ALLOCATABLE = "NodeAllocatableChange"
    ASSIGNED_POD_ADD = "AssignedPodAdd"
    ASSIGNED_POD_DELETE = "AssignedPodDelete"
    POD_UPDATE = "UnscheduledPodUpdate"
    POD_GENERATED_CLAIM = "UpdatePodGeneratedResourceClaim"
    RESOURCE_CLAIM = "ResourceClaimChange"
    RESOURCE_SLICE = "ResourceSliceChange"
    DEVICE_CLASS = "DeviceClassChange"
    DEVICE_TAINT_RULE = "DeviceTaintRuleChange"


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
        ClusterEvent.POD_UPDATE,
    },
    names.DYNAMIC_RESOURCES: {
        ClusterEvent.NODE_ADD,
        ClusterEvent.NODE_LABEL,
        ClusterEvent.NODE_TAINT,
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
        ClusterEvent.POD_UPDATE,
    },
    names.NODE_RESOURCES_FIT: {
        ClusterEvent.NODE_ADD,
        ClusterEvent.NODE_ALLOCATABLE,
        ClusterEvent.ASSIGNED_POD_DELETE,
        ClusterEvent.POD_UPDATE,
    },
}


@dataclass
class QueuedPod:
    info: PodInfo
    attempts: int = 0
    added_at: float = 0.0
    backoff_until: float = 0.0
    rejected_by: set[str] = field(default_factory=set)
    cycle: int = 0


class SchedulingQueue:
    def __init__(self, clock: Clock, pre_enqueue: Mapping[str, PreEnqueue] | None = None) -> None:
        self.clock = clock
        #: PreEnqueue plugins after SchedulingGates, by name, in order.
        self.pre_enqueue = dict(pre_enqueue or {})
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
        self._wakeup = asyncio.Event()
        self.scheduling_cycle = 0
        self._move_cycle = -1

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

    def update(self, info: PodInfo) -> None:
        """A pending pod changed: it may fit now (its tolerations or affinity grew)."""
        queued = self._pods.get(info.key)
        if queued is None:
            self.add(info)
            return
        queued.info = info
        # Upstream's Update: a pod in backoff stays there; an unschedulable one goes to
        # backoff, or active if its backoff is over; a gated one is checked again (PreEnqueue).
        where = self._where.get(info.key)
        if where in ("unschedulable", "gated"):
            self._move(queued)

    def refresh(self, info: PodInfo) -> None:
        """A pending pod changed in a way that cannot make it fit (its status, say): keep the
        new object for the next attempt, but leave it where it waits (upstream's Update when
        isPodUpdated is false: the pod is swapped in place, not moved)."""
        queued = self._pods.get(info.key)
        if queued is not None:
            queued.info = info

    def delete(self, key: str) -> None:
        self._pods.pop(key, None)
        self._where.pop(key, None)
        self._gated_keys.discard(key)

    def __contains__(self, key: str) -> bool:
        return key in self._pods

    def pending(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for where in self._where.values():
            counts[where] = counts.get(where, 0) + 1
        return counts

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
        self._where[info.key] = "gated"
        self._gated_keys.add(info.key)
        return True

    def _activate(self, queued: QueuedPod) -> None:
        """Into the active queue (``moveToActiveQ``), unless a PreEnqueue plugin gates it."""
        if self._gate(queued):
            return
        key = queued.info.key
        self._where[key] = "active"
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
        self._where[key] = "backoff"
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
                self._where[queued.info.key] = "inflight"
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
        if self._move_cycle >= queued.cycle:
            self._move(queued)  # something changed while it was being scheduled
        else:
            self._where[info.key] = "unschedulable"
            heapq.heappush(self._parked, (queued.added_at, next(self._order), info.key))

    def error(self, info: PodInfo) -> None:
        queued = self._pods.get(info.key)
        if queued is None:
            queued = QueuedPod(info, attempts=1)
            self._pods[info.key] = queued
        queued.added_at = self.clock.monotonic()
        self._to_backoff(queued)

    # ---- cluster events -------------------------------------------------------------------

    def on_event(self, event: str, *, max_priority: int | None = None) -> None:
        """Move the unschedulable pods that ``event`` might help; with ``max_priority`` only
        those of that priority or lower (upstream's PreEnqueueCheck getLEPriorityPreCheck)."""
        self._move_cycle = self.scheduling_cycle
        for _, _, key in list(self._parked):
            queued = self._pods.get(key)
            if queued is None or self._where.get(key) != "unschedulable":
                continue
            if max_priority is not None and queued.info.priority > max_priority:
                continue
            if not queued.rejected_by or any(
                event in INTERESTS.get(p, set()) for p in queued.rejected_by
            ):
                self._move(queued)
        for key in list(self._gated_keys):
            queued = self._pods.get(key)
            if queued is None or self._where.get(key) != "gated":
                self._gated_keys.discard(key)
            elif any(event in INTERESTS.get(p, set()) for p in queued.rejected_by):
                self._move(queued)

    def _move(self, queued: QueuedPod) -> None:
        """Out of unschedulable (or gated): to backoff if its backoff since the failure has not
        passed, else active (where the PreEnqueue plugins may gate it again)."""
        if self._backing_off(queued):
            self._to_backoff(queued)
        else:
            self._activate(queued)


def _gated(info: PodInfo) -> bool:
    """The SchedulingGates plugin's PreEnqueue: "waiting for scheduling gates"."""
    return bool((info.pod.get("spec") or {}).get("schedulingGates"))


def _backoff(attempts: int) -> float:
    return float(min(INITIAL_BACKOFF * 2.0 ** max(attempts - 1, 0), MAX_BACKOFF))


def _align(instant: float) -> float:
    """``alignToWindow``: the start of the ordering window ``instant`` falls in."""
    return math.floor(instant / BACKOFF_ORDERING_WINDOW) * BACKOFF_ORDERING_WINDOW
