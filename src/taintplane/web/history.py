"""The last hour of pods, for the dashboard's chart: how many were running, pending and
terminating at each minute, and how many taint evictions began in each five minutes.

Nothing in the API keeps a history, so it is rebuilt from what the API still shows:

- a pod that exists gives its own instants: ``creationTimestamp`` (pending from then), the
  earliest ``state.running.startedAt`` of its containers, else its Ready condition's
  ``lastTransitionTime`` (running from then), and ``deletionTimestamp`` less
  ``deletionGracePeriodSeconds`` (terminating from the instant of the delete);
- a pod that is gone is seen only through its events (kept an hour, as upstream's event TTL):
  pending from its first event, running from ``Started``, terminating from ``Killing`` or a
  taint manager's ``Marking for deletion``, and gone after its last event;
- an eviction is a ``TaintManagerEviction`` or ``DeviceTaintManagerEviction`` event whose
  message begins ``Marking for deletion`` (the controllers' own words; ``Cancelling deletion``
  is not one).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from taintplane.api.decoding import parse_timestamp

__all__ = ["EVICTION_REASONS", "History", "history"]

EVICTION_REASONS = ("TaintManagerEviction", "DeviceTaintManagerEviction")
#: The chart's span, its sampling step for pod counts and its bucket for evictions.
SPAN = timedelta(hours=1)
STEP = timedelta(minutes=1)
BUCKET = timedelta(minutes=5)


@dataclass(frozen=True)
class History:
    start: datetime
    end: datetime
    #: one instant per minute from ``start`` to ``end`` inclusive
    samples: Sequence[datetime]
    running: Sequence[int]
    pending: Sequence[int]
    terminating: Sequence[int]
    #: (bucket start, evictions that began in it), ``SPAN / BUCKET`` buckets
    evictions: Sequence[tuple[datetime, int]]


@dataclass(frozen=True)
class _Life:
    """A pod's phases as half-open intervals; ``None`` for a phase it never reached."""

    pending: datetime | None
    running: datetime | None
    terminating: datetime | None
    gone: datetime | None = None

    def intervals(self, end: datetime) -> list[tuple[str, datetime, datetime]]:
        """(state, from, until) for each phase it was in, until ``end`` at the latest."""
        if self.pending is None:
            return []
        last = min(self.gone, end) if self.gone is not None else end
        marks = [
            ("pending", self.pending),
            ("running", self.running),
            ("terminating", self.terminating),
        ]
        reached = [(state, t) for state, t in marks if t is not None]
        out = []
        for index, (state, since) in enumerate(reached):
            until = reached[index + 1][1] if index + 1 < len(reached) else last
            until = min(until, last)
            if since < until:
                out.append((state, since, until))
        return out


def _time(value: Any) -> datetime | None:
    return parse_timestamp(value) if isinstance(value, str) and value else None


def _event_time(event: dict[str, Any]) -> datetime | None:
    for value in (
        event.get("lastTimestamp"),
        (event.get("series") or {}).get("lastObservedTime"),
        event.get("eventTime"),
        event.get("firstTimestamp"),
        event["metadata"].get("creationTimestamp"),
    ):
        found = _time(value)
        if found is not None:
            return found
    return None


def _life_of(pod: dict[str, Any]) -> _Life:
    meta = pod["metadata"]
    status = pod.get("status") or {}
    started = [
        t
        for s in status.get("containerStatuses") or []
        if (t := _time(((s.get("state") or {}).get("running") or {}).get("startedAt")))
    ]
    if not started:
        for condition in status.get("conditions") or []:
            ready = condition.get("type") == "Ready" and condition.get("status") == "True"
            if ready and (t := _time(condition.get("lastTransitionTime"))) is not None:
                started.append(t)
    terminating = _time(meta.get("deletionTimestamp"))
    if terminating is not None:
        terminating -= timedelta(seconds=int(meta.get("deletionGracePeriodSeconds") or 0))
    gone = None
    if status.get("phase") in ("Succeeded", "Failed") and terminating is None:
        # Finished: counted no more from its last transition (one being deleted is counted
        # terminating until it is gone, as the overview counts it).
        ends = [_time(c.get("lastTransitionTime")) for c in status.get("conditions") or []]
        gone = max((t for t in ends if t is not None), default=None)
    return _Life(
        _time(meta.get("creationTimestamp")), min(started, default=None), terminating, gone
    )


def _lives_from_events(events: Iterable[dict[str, Any]], known: set[str]) -> list[_Life]:
    """The pods the API no longer has, from their events, by name: the taint managers'
    events name the pod without its uid, the kubelet's with it."""
    seen: dict[str, list[tuple[datetime, str, str]]] = {}
    for event in events:
        involved = event.get("involvedObject") or event.get("regarding") or {}
        if involved.get("kind") != "Pod":
            continue
        name = f"{involved.get('namespace', '')}/{involved.get('name', '')}"
        when = _event_time(event)
        if name in known or when is None:
            continue
        message = str(event.get("message") or event.get("note") or "")
        seen.setdefault(name, []).append((when, str(event.get("reason") or ""), message))
    lives = []
    for happenings in seen.values():
        happenings.sort()
        started = next((t for t, reason, _ in happenings if reason == "Started"), None)
        stopping = next(
            (
                t
                for t, reason, message in happenings
                if reason == "Killing" or _is_eviction(reason, message)
            ),
            None,
        )
        last = happenings[-1][0]
        lives.append(_Life(happenings[0][0], started, stopping, last + timedelta(seconds=1)))
    return lives


def _ceil_steps(offset: timedelta) -> int:
    """How many whole steps reach ``offset`` (rounded up: the first sample at or after it)."""
    return -(-offset // STEP)


def _is_eviction(reason: str, message: str) -> bool:
    return reason in EVICTION_REASONS and message.startswith("Marking for deletion")


def history(
    pods: Sequence[dict[str, Any]], events: Sequence[dict[str, Any]], now: datetime
) -> History:
    start = now - SPAN
    steps = int(SPAN / STEP)
    samples = [start + STEP * i for i in range(steps + 1)]
    known = {f"{p['metadata'].get('namespace', '')}/{p['metadata']['name']}" for p in pods}
    lives = [_life_of(p) for p in pods] + _lives_from_events(events, known)
    # A difference array per state: each interval adds one to the samples that fall in it.
    counts = {state: [0] * (len(samples) + 1) for state in ("running", "pending", "terminating")}
    edge = now + STEP
    for life in lives:
        for state, since, until in life.intervals(edge):
            low = max(0, _ceil_steps(since - start))
            high = min(len(samples), _ceil_steps(until - start))
            if low < high:
                counts[state][low] += 1
                counts[state][high] -= 1
    for series in counts.values():
        for index in range(1, len(series)):
            series[index] += series[index - 1]
        series.pop()
    buckets = int(SPAN / BUCKET)
    evicted = [0] * buckets
    for event in events:
        if not _is_eviction(
            str(event.get("reason") or ""), str(event.get("message") or event.get("note") or "")
        ):
            continue
        when = _event_time(event)
        if when is None or when < start or when > now:
            continue
        evicted[min(int((when - start) / BUCKET), buckets - 1)] += int(event.get("count") or 1)
    return History(
        start,
        now,
        samples,
        counts["running"],
        counts["pending"],
        counts["terminating"],
        [(start + BUCKET * i, n) for i, n in enumerate(evicted)],
    )
