"""Heartbeats of a steady cluster, elided under a virtual clock (DESIGN.md, "Time").

While every simulated node is running and healthy and nothing they depend on changes, a
kubelet tick only renews each Lease (and posts an unchanged status every 5 minutes) and a
node lifecycle pass only notes that every Lease moved. So both loops sleep through such
ticks and passes (the kubelets wake only for the last report period and the last tick before
the running advance stops, the controller only when elision ends) and note on waking what
they would have done, which costs a few operations a tick instead of writes for every node:

* what anyone could still see is written in time, at its instant and with the clock's
  timestamps (managedFields' included): the lease renewals of the last tick before the
  running advance stops, and each node's last status report before then (``lastHeartbeatTime``
  of that tick) — exactly what the full protocol leaves;
* anything that could tell the difference (a node stopped or started, a condition injected,
  nodes registered, a Node changed beyond its heartbeats or a Lease created or deleted by
  anyone) ends elision at that instant: ticks elided since the last write are written down
  at once with their timestamps (only a change made while an advance runs — a concurrent
  request — sees managedFields stamped with that instant), the next full tick waits for it,
  and the node lifecycle controller notes what its elided passes saw (the last renewal one
  of them saw, and the pass that first saw it), so the grace periods it counts from there,
  and the taints and evictions that follow, fall at the same instants.

Objects written in between carry other resourceVersions (fewer writes happened), and lease
watchers see one renewal per materialisation instead of one per tick. ``tests/sim/
test_steady_differential.py`` runs the same faults with and without elision and compares.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from taintplane.agents.kubelet import Kubelets
from taintplane.clock import VirtualClock
from taintplane.controllers.nodelifecycle import NodeLifecycleController

__all__ = ["HeartbeatElision"]


class HeartbeatElision:
    def __init__(
        self,
        clock: VirtualClock,
        kubelets: Kubelets,
        nlc: NodeLifecycleController | None,
    ) -> None:
        self.clock = clock
        self.kubelets = kubelets
        self.nlc = nlc
        self.active = False
        self._names: list[str] = []
        #: Nodes by the instant of their last status report, written or elided.
        self._groups: dict[datetime, list[str]] = {}
        #: The last tick, written or elided, and whether a pass has seen it; the last tick a
        #: pass saw, and that pass.
        self._tick: datetime | None = None
        self._unseen = False
        self._seen: tuple[datetime, datetime] | None = None
        self._catch_up: tuple[datetime, datetime, list[str]] | None = None
        self._writing: asyncio.Future[None] | None = None
        #: While the controller sleeps through elided passes: the instant (monotonic) of the
        #: first, whether the kubelets tick before it at instants both fall on, the ticks
        #: since (monotonic, instant), and what ends its sleep.
        self._idle_from: float | None = None
        self._kubelets_first = False
        self._idle_ticks: list[tuple[float, datetime]] = []
        self._wake_nlc = asyncio.Event()
        #: While the kubelets sleep through elided ticks: the instant (monotonic) of the last
        #: tick noted, and what ends their sleep.
        self._skipping_from: float | None = None
        self._tick_elapsed = 0.0
        self._wake_kubelets = asyncio.Event()
        #: How many ticks and passes were elided (for benchmarks and tests).
        self.elided_ticks = 0
        self.elided_passes = 0
        kubelets.elision = self
        if nlc is not None:
            nlc.elision = self
        kubelets.node_informer.add_handlers(
            lambda _: self.interrupt(), self._node_updated, lambda _: self.interrupt()
        )
        kubelets.informers.informer("coordination.k8s.io", "v1", "leases").add_handlers(
            lambda _: self.interrupt(), None, lambda _: self.interrupt()
        )
        clock.add_rest_hook(self.settled)

    # ---- the kubelets' side ----------------------------------------------------------------------

    async def kubelet_tick(self) -> bool:
        """An elided tick. What the full tick would write and anything could still see is
        written now, at its instant: a status report when no later one is due before the
        running advance stops, the lease renewals when no later tick is."""
        if not self.active:
            return False
        now, elapsed, target = self.clock.now(), self.clock.monotonic(), self.clock.target
        reports: dict[str, datetime] = {}
        for names in self._account(elapsed, now):
            if self._last_report_before(elapsed, now, target):
                reports.update(dict.fromkeys(names, now))
        config = self.kubelets.config
        final = target is None or elapsed + config.node_status_update_frequency > target
        if reports or final:
            names = self._names if final else sorted(reports)
            await self.kubelets.write_elided(names, reports, now if final else None)
        return True

    def _account(self, elapsed: float, now: datetime) -> list[list[str]]:
        """Note an elided tick: the nodes whose unchanged status falls due at it."""
        self._tick, self._unseen, self._tick_elapsed = now, True, elapsed
        self.elided_ticks += 1
        if self._idle_from is not None:
            self._idle_ticks = [*self._idle_ticks[-1:], (elapsed, now)]
        frequency = self.kubelets.config.node_status_report_frequency
        due = []
        for last in [t for t in self._groups if _due(now, t, frequency)]:
            names = self._groups.pop(last)
            self._groups.setdefault(now, []).extend(names)
            due.append(names)
        return due

    async def kubelet_idle(self) -> None:
        """After an elided tick: sleep through the ticks that would write nothing anyone can
        still see (all but those of the last report period and the last tick before the
        running advance stops), noting them on waking; return at the next tick to run."""
        period = self.kubelets.config.node_status_update_frequency
        frequency = self.kubelets.config.node_status_report_frequency
        start, target = self.clock.monotonic(), self.clock.target
        due = start + period
        if target is not None:
            while due + period <= target and due + frequency <= target:
                due += period
        self._skipping_from = start
        self._wake_kubelets.clear()
        timer = asyncio.ensure_future(self.clock.sleep_until(due, first=self._kubelets_first))
        woken = asyncio.ensure_future(self._wake_kubelets.wait())
        try:
            await asyncio.wait([timer, woken], return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            woken.cancel()
        if self._skipping_from is not None:  # slept until due: note the ticks slept through
            self._skip_until(lambda tick: tick < due)
            self._skipping_from = None
            return
        # Elision ended (its ticks up to then noted): on to the next tick of the schedule.
        after, now = start, self.clock.monotonic()
        while after <= now:
            after += period
        await self.clock.sleep_until(after, first=self._kubelets_first)

    def _skip_until(self, more: Callable[[float], bool]) -> None:
        """Note the ticks slept through since ``_skipping_from`` for which ``more`` holds."""
        assert self._skipping_from is not None
        period = self.kubelets.config.node_status_update_frequency
        tick = self._skipping_from + period
        while more(tick):
            self._account(tick, self._instant(tick))
            tick += period

    def _last_report_before(self, elapsed: float, now: datetime, target: float | None) -> bool:
        """Whether a report at this tick is the last before the advance stops: no later tick
        (on the loop's own float steps) falls due for the next one by then."""
        if target is None:
            return True
        config = self.kubelets.config
        while True:
            elapsed += config.node_status_update_frequency
            if elapsed > target:
                return True
            tick = self._instant(elapsed)
            if _due(tick, now, config.node_status_report_frequency):
                return False

    def _instant(self, elapsed: float) -> datetime:
        return (
            self.clock.now()
            - timedelta(seconds=self.clock.monotonic())
            + timedelta(seconds=elapsed)
        )

    def after_kubelet_tick(self) -> None:
        if self.active or self._catch_up is not None or not self.kubelets.nodes:
            return
        names = sorted(self.kubelets.nodes)
        if not self.kubelets.steady():
            return
        if self.nlc is not None and not self.nlc.steady(set(names)):
            return
        self.active = True
        self._names = names
        self._groups = {}
        for name in names:
            last = self.kubelets.nodes[name].last_report
            assert last is not None  # steady() checks
            self._groups.setdefault(last, []).append(name)
        self._tick, self._unseen, self._seen = self.clock.now(), True, None

    async def settled(self) -> None:
        while self._writing is not None and not self._writing.done():
            await asyncio.shield(self._writing)

    # ---- the node lifecycle controller's side ----------------------------------------------------

    def nlc_pass(self) -> bool:
        if not self.active:
            return False
        if self._unseen and self._tick is not None:
            self._seen = (self._tick, self.clock.now())
            self._unseen = False
        self.elided_passes += 1
        return True

    async def nlc_idle(self) -> None:
        assert self.nlc is not None
        start = self.clock.monotonic()
        self._idle_from, self._idle_ticks = start, []
        self._kubelets_first = self._tick is not None and self._tick == self.clock.now()
        self._wake_nlc.clear()
        try:
            await self._wake_nlc.wait()
        finally:
            self._idle_from = None
        # Passes up to this instant count as run (elision ends between them and the next).
        period, due, now = self.nlc.config.node_monitor_period, start, self.clock.monotonic()
        while due <= now:
            due += period
        await self.clock.sleep_until(due, first=not self._kubelets_first)

    def _passes_seen(self) -> None:
        """What the passes the controller slept through saw: the last tick one of them came
        after (at an instant both fall on, only if the kubelets tick first), and that pass."""
        if self._idle_from is None or self.nlc is None:
            return
        period, now = self.nlc.config.node_monitor_period, self.clock.monotonic()
        for elapsed, instant in reversed(self._idle_ticks):
            due = self._idle_from
            while due < elapsed or (due == elapsed and not self._kubelets_first):
                due += period
            if due <= now:
                self._seen = (instant, self._instant(due))
                return

    def take_catch_up(self) -> tuple[datetime, datetime, list[str]] | None:
        seen, self._catch_up = self._catch_up, None
        return seen

    # ---- leaving ---------------------------------------------------------------------------------

    def interrupt(self) -> None:
        """Stop eliding at this instant. Ticks elided since the last written one are written
        down at once (before the next full tick, which waits for it), with their
        timestamps; the controller notes what its elided passes saw at its next pass."""
        if not self.active:
            return
        self.active = False
        if self._skipping_from is not None:
            now = self.clock.monotonic()
            self._skip_until(lambda tick: tick <= now)
            self._skipping_from = None
            self._wake_kubelets.set()
        self._passes_seen()
        self._wake_nlc.set()
        if self._seen is not None and self.nlc is not None:
            self._catch_up = (*self._seen, list(self._names))
        reports = {name: last for last, names in self._groups.items() for name in names}
        self._writing = asyncio.ensure_future(
            self.kubelets.write_elided(self._names, reports, self._tick)
        )

    def _node_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if self.active and _essence(old) != _essence(new):
            self.interrupt()


def _due(now: datetime, last: datetime, frequency: float) -> bool:
    """The kubelet's own test of a report falling due (``_post_status``)."""
    return (now - last).total_seconds() >= frequency


def _essence(node: dict[str, Any]) -> dict[str, Any]:
    """A Node without what a heartbeat changes."""
    kept = copy.copy(node)
    metadata = dict(kept.get("metadata") or {})
    metadata.pop("resourceVersion", None)
    metadata.pop("managedFields", None)
    kept["metadata"] = metadata
    status = dict(kept.get("status") or {})
    status["conditions"] = [
        {k: v for k, v in c.items() if k != "lastHeartbeatTime"}
        for c in status.get("conditions") or []
    ]
    kept["status"] = status
    return kept
