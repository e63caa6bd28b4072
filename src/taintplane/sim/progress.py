"""How much a stretch of simulated time cost: what ``clock advance``, ``what-if`` and
``simulate`` report while they run and in their last line.

Counted from the store, so every component's work is in it and none has to report: the
objects written are the store revisions committed since the start (creations, updates and
deletions, Events included), the Events those stored since the start. Neither walks objects:
a revision is one number, and Events are counted under their one key prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from taintplane.sim.cluster import Cluster

__all__ = ["Progress", "WorkCount", "WorkMeter"]


@dataclass(frozen=True, slots=True)
class WorkCount:
    """Simulated seconds done of ``total``, and the work done meanwhile."""

    done: float
    total: float
    objects: int
    events: int

    def to_json(self) -> dict[str, Any]:
        return {
            "done": self.done,
            "total": self.total,
            "objects": self.objects,
            "events": self.events,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WorkCount:
        return cls(
            float(data.get("done") or 0),
            float(data.get("total") or 0),
            int(data.get("objects") or 0),
            int(data.get("events") or 0),
        )


class Progress(Protocol):
    """Told where a run is: at its start (``done`` 0), after each stretch of simulated time,
    and at its end (``done`` == ``total``)."""

    async def __call__(self, cluster: Cluster, done: float, total: float) -> None: ...


class WorkMeter:
    """Counts the writes and Events of ``cluster``'s store from :meth:`start` on."""

    def __init__(self, cluster: Cluster) -> None:
        store, apiserver = cluster.store, cluster.apiserver
        assert store is not None
        assert apiserver is not None
        self._store = store
        events = apiserver.scheme.lookup("", "v1", "events")
        assert events is not None
        self._events_prefix = events.storage_prefix()
        self._revision = 0
        self._events = 0
        self.started = False

    async def start(self) -> None:
        self._revision = await self._store.current_revision()
        self._events = await self._store.count(self._events_prefix)
        self.started = True

    async def read(self, done: float, total: float) -> WorkCount:
        revision = await self._store.current_revision()
        events = await self._store.count(self._events_prefix)
        # Events deleted meanwhile (a namespace's, with it) would count below zero.
        return WorkCount(done, total, revision - self._revision, max(events - self._events, 0))
