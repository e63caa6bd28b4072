"""The device taint eviction controller (KEP-5055): deletes pods whose allocated
ResourceClaims use devices with NoExecute taints they do not tolerate, and reports progress in
each DeviceTaintRule's ``EvictionInProgress`` condition.

As upstream's ``devicetainteviction`` (Kubernetes 1.35): decisions are made in the informer
callbacks at the clock's current instant (see :mod:`.device_evictions`); a timed work queue
deletes each pod at its instant — the taint's ``timeAdded`` plus the toleration's seconds,
which may already be past — with the ``DisruptionTarget`` condition
(``DeletionByDeviceTaintManager``) and ``DeviceTaintManagerEviction`` events, and updates rule
status (see :mod:`.devicetaintrule_status`): at once when a rule appears, when its spec
changes or when a pod is found to evict because of it, then at most every 10 s, and 10 s
after each eviction it caused. For a rule with effect ``None`` the condition reports, once
per spec, what ``NoExecute`` would do.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from collections.abc import Coroutine
from datetime import datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from taintplane.client import ApiError, Client, resource
from taintplane.client.events import EventRecorder
from taintplane.client.queue_metrics import QueueMetrics
from taintplane.client.shared import SharedInformers
from taintplane.clock import Clock, sleep_or_wake
from taintplane.controllers.device_evictions import (
    ClaimState,
    Eviction,
    Pools,
    Rule,
    allocation_results,
    claim_eviction,
    pod_eviction,
)
from taintplane.controllers.devicetaintrule_status import RuleStatus
from taintplane.controllers.disruption_target import mark_disruption_target
from taintplane.controllers.stability import alpha

__all__ = ["COMPONENT", "DeviceTaintEvictionController", "DeviceTaintEvictionMetrics"]

log = logging.getLogger(__name__)

PODS = resource("", "v1", "pods")
COMPONENT = "device-taint-eviction-controller"
EVENT_REASON = "DeviceTaintManagerEviction"
CONDITION_REASON = "DeletionByDeviceTaintManager"
CONDITION_MESSAGE = "Device Taint manager: deleting due to NoExecute taint"

#: A pod to delete (namespace, name, uid) or a rule whose status to update ("", name, uid).
Item = tuple[str, str, str, str]


class DeviceTaintEvictionMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.deletions = Counter(
            "pod_deletions",
            alpha("Total number of Pods deleted by DeviceTaintEvictionController since its start."),
            subsystem="device_taint_eviction_controller",
            registry=registry,
        )
        self.latency = Histogram(
            "pod_deletion_duration_seconds",
            alpha(
                "Latency, in seconds, between the time when a device taint effect has been "
                "activated and a Pod's deletion via DeviceTaintEvictionController."
            ),
            subsystem="device_taint_eviction_controller",
            buckets=(0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 120, 180, 240),
            registry=registry,
        )


def _queue_key(item: Item) -> str:
    return "/".join(item)


def _pod_item(pod: dict[str, Any]) -> Item:
    meta = pod["metadata"]
    return ("pod", meta["namespace"], meta["name"], str(meta.get("uid", "")))


class DeviceTaintEvictionController:
    def __init__(
        self,
        client: Client,
        clock: Clock,
        informers: SharedInformers,
        *,
        registry: CollectorRegistry | None = None,
        device_taint_rules: bool = True,
    ) -> None:
        self.client = client
        self.clock = clock
        self.pods = informers.pods
        self.claims = informers.informer("resource.k8s.io", "v1", "resourceclaims")
        self.slices = informers.informer("resource.k8s.io", "v1", "resourceslices")
        # As devicetainteviction.New: without the DRADeviceTaintRules gate there is no rule
        # informer, so nothing is done with (eviction) or for (status) any DeviceTaintRule.
        self.rule_objects = (
            informers.informer("resource.k8s.io", "v1alpha3", "devicetaintrules")
            if device_taint_rules
            else None
        )
        self.metrics = DeviceTaintEvictionMetrics(registry or CollectorRegistry())
        self.recorder = EventRecorder(client, clock, COMPONENT)
        self.pools = Pools()
        self.rules: dict[str, Rule] = {}
        self.claim_states: dict[str, ClaimState] = {}
        #: Pods to delete and when (upstream's ``deletePodAt``).
        self.delete_pod_at: dict[Item, Eviction] = {}
        #: Pods each rule (by uid) evicted since the controller started.
        self.evicted: dict[str, int] = {}
        self.status = RuleStatus(self)
        self._due: dict[Item, datetime] = {}
        self._heap: list[tuple[datetime, int, Item]] = []
        self._order = itertools.count()
        self._failures: dict[Item, int] = {}
        self._busy: set[Item] = set()
        # The work queue's metrics, named as upstream's (after the controller). An item due
        # later counts as added when it falls due, which is when it is taken under virtual time.
        self.queue_metrics = QueueMetrics(clock, COMPONENT)
        self._counted: set[Item] = set()
        self._wake = asyncio.Event()
        self._background: set[asyncio.Task[None]] = set()
        self.claims.add_handlers(
            lambda c: self._claim_changed(None, c),
            self._claim_changed,
            lambda c: self._claim_changed(c, None),
        )
        self.pods.add_handlers(self._pod_added, self._pod_updated, self._pod_deleted)
        if self.rule_objects is not None:
            self.rule_objects.add_handlers(
                lambda r: self._rule_changed(None, r),
                self._rule_changed,
                lambda r: self._rule_changed(r, None),
            )
        self.slices.add_handlers(
            lambda s: self._slice_changed(None, s),
            self._slice_changed,
            lambda s: self._slice_changed(s, None),
        )

    # ---- informer callbacks ----------------------------------------------------------------

    def _claim_changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        claim = new if new is not None else old
        assert claim is not None
        meta = claim["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        if new is None:
            self.claim_states.pop(key, None)
            self._handle_pods(claim)
            return
        if old is not None and old["metadata"].get("uid") != meta.get("uid"):
            self._claim_changed(old, None)
            self._claim_changed(None, new)
            return
        allocated = bool((new.get("status") or {}).get("allocation"))
        was_allocated = old is not None and bool((old.get("status") or {}).get("allocation"))
        if allocated and was_allocated:  # allocations are immutable: keep the eviction
            self.claim_states[key] = ClaimState(new, self.claim_states[key].eviction)
        elif allocated:
            self.claim_states[key] = ClaimState(new, self._claim_eviction(new))
        elif was_allocated:
            del self.claim_states[key]
        else:
            return
        reserved = (new.get("status") or {}).get("reservedFor")
        if old is not None and (old.get("status") or {}).get("reservedFor") != reserved:
            self._handle_pods(old)
        self._handle_pods(new)

    def _pod_added(self, pod: dict[str, Any]) -> None:
        self._handle_pod(pod)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if (old.get("spec") or {}).get("nodeName") == (new.get("spec") or {}).get("nodeName") and (
            (old.get("status") or {}).get("resourceClaimStatuses")
            == (new.get("status") or {}).get("resourceClaimStatuses")
        ):
            return  # e.g. our own DisruptionTarget condition
        self._handle_pod(new)

    def _pod_deleted(self, pod: dict[str, Any]) -> None:
        self.delete_pod_at.pop(_pod_item(pod), None)  # gone: no event

    def _rule_changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if new is None:
            assert old is not None
            self.evicted.pop(str(old["metadata"].get("uid", "")), None)
            self.rules.pop(old["metadata"]["name"], None)
        else:
            self.rules[new["metadata"]["name"]] = Rule.from_object(new)
        if (
            old is not None
            and new is not None
            and old["metadata"].get("uid") == new["metadata"].get("uid")
            and old.get("spec") == new.get("spec")
        ):
            return  # e.g. our own status update
        if new is not None:
            # A new rule, or a new generation of one: its condition describes an older spec
            # (the API promises an update for each change to the spec, and `kubectl wait`
            # ignores a condition whose observedGeneration is not the current one).
            self._add(self.status.item(new))
        for key, state in list(self.claim_states.items()):
            eviction = self._claim_eviction(state.claim)
            self.claim_states[key] = ClaimState(state.claim, eviction)
            if eviction != state.eviction:
                self._handle_pods(state.claim)

    def _slice_changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        changed = self.pools.update(old, new)
        if not changed:
            return
        driver, pool = Pools.pool_of(new if new is not None else old or {})
        for key, state in list(self.claim_states.items()):
            if not any(
                (r.get("driver"), r.get("pool"), r.get("device"))
                in {(driver, pool, d) for d in changed}
                for r in allocation_results(state.claim)
            ):
                continue
            eviction = self._claim_eviction(state.claim)
            if eviction != state.eviction:
                self.claim_states[key] = ClaimState(state.claim, eviction)
                self._handle_pods(state.claim)

    # ---- decisions ---------------------------------------------------------------------------

    def _claim_eviction(self, claim: dict[str, Any]) -> Eviction | None:
        return claim_eviction(claim, self.pools, list(self.rules.values()), self.clock.now())

    def _handle_pods(self, claim: dict[str, Any]) -> None:
        namespace = claim["metadata"]["namespace"]
        for consumer in (claim.get("status") or {}).get("reservedFor") or []:
            if consumer.get("apiGroup") or consumer.get("resource") != "pods":
                continue
            pod = self.pods.get(f"{namespace}/{consumer.get('name')}")
            if pod is not None and pod["metadata"].get("uid") == consumer.get("uid"):
                self._handle_pod(pod)

    def _handle_pod(self, pod: dict[str, Any]) -> None:
        eviction = pod_eviction(pod, self.claim_states)
        item = _pod_item(pod)
        if eviction is None:
            if self.delete_pod_at.pop(item, None) is not None:
                self._spawn(self._pod_event(item, "Cancelling deletion"))
            return
        self.delete_pod_at[item] = eviction
        self._add_after(item, eviction.when)
        for reason in eviction.reasons:
            if reason.rule:
                self._add(("rule", "", reason.rule, reason.rule_uid))

    def scheduled(self, namespace: str, name: str) -> datetime | None:
        """When the pod is due to be deleted (for tests and explanations)."""
        for (kind, ns, pod, _), eviction in self.delete_pod_at.items():
            if (kind, ns, pod) == ("pod", namespace, name):
                return eviction.when
        return None

    # ---- the work queue ----------------------------------------------------------------------

    def _add(self, item: Item) -> None:
        self._enqueue(item, self.clock.now())

    def _add_after(self, item: Item, at: datetime) -> None:
        self.queue_metrics.retry()  # every AddAfter counts, as in client-go
        self._enqueue(item, at)

    def _enqueue(self, item: Item, at: datetime) -> None:
        """Add ``item`` due at ``at``; an item already waiting keeps the earlier instant."""
        if at <= self.clock.now():
            self._count_added(item)
        due = self._due.get(item)
        if due is not None and due <= at:
            return
        self._due[item] = at
        heapq.heappush(self._heap, (at, next(self._order), item))
        self._wake.set()

    async def run(self) -> None:
        try:
            while True:
                self._wake.clear()
                now = self.clock.now()
                while self._heap and self._heap[0][0] <= now:
                    due, _, item = heapq.heappop(self._heap)
                    if self._due.get(item) != due:
                        continue  # superseded by an earlier entry
                    del self._due[item]
                    self._take(item, now)
                delay = (self._heap[0][0] - now).total_seconds() if self._heap else None
                await sleep_or_wake(self.clock, delay, self._wake)
        finally:
            for task in list(self._background):
                task.cancel()
            await asyncio.gather(*self._background, return_exceptions=True)

    def _count_added(self, item: Item) -> None:
        """client-go counts an add once until a worker takes the item."""
        if item not in self._counted:
            self._counted.add(item)
            self.queue_metrics.add(_queue_key(item))

    def _take(self, item: Item, now: datetime) -> None:
        self._count_added(item)
        if item in self._busy:  # being worked on: look again when that is done
            self._enqueue(item, now + timedelta(milliseconds=5))
            return
        self._counted.discard(item)
        key = _queue_key(item)
        self.queue_metrics.get(key)
        if not self._process(item, now):
            self.queue_metrics.done(key)

    def _process(self, item: Item, now: datetime) -> bool:
        """Whether the item's work goes on in the background (which says when it is done)."""
        if item[0] == "rule":
            again = self.status.update(item[2], item[3], now)
            if again is not None:
                self._add_after(item, again)
            return False
        eviction = self.delete_pod_at.get(item)
        if eviction is None:
            return False  # obsolete
        if eviction.when > now:
            self._add_after(item, eviction.when)
            return False
        self._busy.add(item)
        self._spawn(self._delete(item, eviction))
        return True

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ---- deleting ------------------------------------------------------------------------------

    async def _pod_event(self, item: Item, message: str) -> None:
        _, namespace, name, uid = item
        ref = {"kind": "Pod", "namespace": namespace, "name": name, "apiVersion": "v1"}
        if uid:
            ref["uid"] = uid
        self.recorder.event({}, "Normal", EVENT_REASON, message, reference=ref)

    async def _delete(self, item: Item, eviction: Eviction) -> None:
        try:
            await self._delete_once(item, eviction)
        finally:
            self.queue_metrics.done(_queue_key(item))

    async def _delete_once(self, item: Item, eviction: Eviction) -> None:
        try:
            deleted = await self._condition_and_delete(item)
        except ApiError as error:
            if error.code != 404:
                failures = self._failures.get(item, 0) + 1
                self._failures[item] = failures
                log.info("evicting %s/%s failed (attempt %d): %s", *item[1:3], failures, error)
                delay = min(0.005 * 2 ** (failures - 1), 1000.0)
                self._add_after(item, self.clock.now() + timedelta(seconds=delay))
                return
            deleted = False
        finally:
            self._busy.discard(item)
        self._failures.pop(item, None)
        self.delete_pod_at.pop(item, None)
        if not deleted:
            return
        now = self.clock.now()
        self.metrics.deletions.inc()
        self.metrics.latency.observe((now - eviction.when).total_seconds())
        for reason in eviction.reasons:
            if reason.rule:
                self.evicted[reason.rule_uid] = self.evicted.get(reason.rule_uid, 0) + 1
                # Later, not now: the status is computed from the informers' caches.
                rule_item = ("rule", "", reason.rule, reason.rule_uid)
                self._add_after(rule_item, now + timedelta(seconds=self.status.period))

    async def _condition_and_delete(self, item: Item) -> bool:
        """Upstream's ``addConditionAndDeletePod``: False if the pod is gone or replaced."""
        _, namespace, name, uid = item
        pod = await self.client.get(PODS, name, namespace)
        if pod["metadata"].get("uid") != uid:
            return False
        if pod["metadata"].get("deletionTimestamp"):
            return True  # already being deleted (upstream counts it too)
        await self._pod_event(item, "Marking for deletion")
        await mark_disruption_target(
            self.client, pod, CONDITION_REASON, CONDITION_MESSAGE, self.clock.now()
        )
        await self.client.delete(PODS, name, namespace, uid=uid)
        return True
