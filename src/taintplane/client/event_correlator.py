"""What client-go's ``record.EventCorrelator`` (tools/record/events_cache.go) does to each event
before it is written: spam filtering, aggregation of similar events, and counting of repeats.

* An event identical to one recorded before (same source, involved object, type, reason and
  message) is not a new Event: it is a strategic merge patch of the first one's ``count``,
  ``lastTimestamp`` and ``message``, ``firstTimestamp`` kept.
* Ten events that differ only by message (within 10 minutes of the previous one) turn into one
  Event, "(combined from similar events): MESSAGE", counted from then on.
* A source may record 25 events about an object at once, then one every 5 minutes; the rest are
  dropped (still counted, so the next one written carries the true count).

Each cache keeps its 4096 most recently used keys, as upstream's LRU caches do. A simulated
kubelet's caches hold a few entries for every pod on its node, so across thousands of nodes they
are a large part of the process: keys are kept as 16-byte digests of upstream's key strings
(each ~200 characters) and the records are slotted.
"""

from __future__ import annotations

import hashlib
import sys
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from taintplane.api.decoding import format_time
from taintplane.clock import Clock

__all__ = [
    "AGGREGATE_INTERVAL",
    "AGGREGATE_MAX_EVENTS",
    "SPAM_BURST",
    "SPAM_QPS",
    "Correlated",
    "EventCorrelator",
]

#: client-go's maxLruCacheEntries.
LRU_CACHE_ENTRIES = 4096
#: defaultAggregateMaxEvents and defaultAggregateIntervalInSeconds.
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL = timedelta(seconds=600)
#: defaultSpamBurst and defaultSpamQPS: 25 events at once, then one every 5 minutes.
SPAM_BURST = 25
SPAM_QPS = 1 / 300

Event = dict[str, Any]
V = TypeVar("V")


def _digest(key: str) -> bytes:
    """What a cache files ``key`` under: 16 bytes instead of the whole string. Two keys share
    a digest only by a 128-bit hash collision, so the caches tell keys apart as upstream's do."""
    return hashlib.blake2b(key.encode(), digest_size=16).digest()


class _Lru(Generic[V]):
    """groupcache's lru.Cache: a read or a write makes the key the most recent."""

    def __init__(self, max_entries: int = LRU_CACHE_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[bytes, V] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: bytes) -> V | None:
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def add(self, key: bytes, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        if len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)


def _source_and_object(event: Event) -> list[str]:
    source = event.get("source") or {}
    involved = event.get("involvedObject") or {}
    return [
        source.get("component", ""),
        source.get("host", ""),
        involved.get("kind", ""),
        involved.get("namespace", ""),
        involved.get("name", ""),
        involved.get("uid", ""),
        involved.get("apiVersion", ""),
    ]


def event_key(event: Event) -> str:
    """getEventKey: what makes two events the same event (fieldPath included)."""
    fields = _source_and_object(event)
    fields.insert(5, (event.get("involvedObject") or {}).get("fieldPath", ""))
    return "".join([*fields, event.get("type", ""), event.get("reason", ""), _message(event)])


def spam_key(event: Event) -> str:
    """getSpamKey: the source and the object, whatever the event says."""
    return "".join(_source_and_object(event))


def aggregate_keys(event: Event) -> tuple[str, str]:
    """EventAggregatorByReasonFunc: events alike but for their message share the first key;
    the message tells them apart within it."""
    similar = [
        *_source_and_object(event),
        event.get("type", ""),
        event.get("reason", ""),
        event.get("reportingComponent", ""),
        event.get("reportingInstance", ""),
    ]
    return "".join(similar), _message(event)


def _message(event: Event) -> str:
    return str(event.get("message") or "")


class _TokenBucket:
    """flowcontrol's token bucket (golang.org/x/time/rate): starts full, refills ``qps`` tokens
    a second up to ``burst``; a refused take leaves the bucket as it was."""

    __slots__ = ("burst", "last", "qps", "tokens")

    def __init__(self, qps: float, burst: int, now: datetime) -> None:
        self.qps = qps
        self.burst = burst
        self.tokens = float(burst)
        self.last = now

    def try_accept(self, now: datetime) -> bool:
        elapsed = max((now - self.last).total_seconds(), 0.0)
        tokens = min(self.burst, self.tokens + elapsed * self.qps) - 1
        if tokens < 0:
            return False
        self.tokens, self.last = tokens, now
        return True


@dataclass(slots=True)
class _Similar:
    """aggregateRecord: the distinct messages seen, and when the last of them was. A tuple
    rather than upstream's set: it holds one message for most groups (a set costs 216 bytes
    even then) and never more than AGGREGATE_MAX_EVENTS."""

    messages: tuple[str, ...]
    last_seen: datetime


@dataclass(slots=True)
class _Observation:
    """eventLog: the Event a repeat patches (its name), how often it happened, since when."""

    count: int
    first_timestamp: str
    name: str


@dataclass
class Correlated:
    """The event to write; ``patch`` set when it updates the Event of that name."""

    event: Event
    patch: Event | None


class EventCorrelator:
    """client-go's EventCorrelator with its defaults (NewEventCorrelator). ``name_event`` names
    an aggregate event as the recorder names any other."""

    def __init__(self, clock: Clock, name_event: Callable[[str, datetime], str]) -> None:
        self.clock = clock
        self.name_event = name_event
        self._spam: _Lru[_TokenBucket] = _Lru()
        self._similar: _Lru[_Similar] = _Lru()
        self._observed: _Lru[_Observation] = _Lru()

    def correlate(self, event: Event) -> Correlated | None:
        """EventCorrelate: the event to write, or None when the spam filter drops it. As
        upstream, aggregation and counting see the event before the filter does."""
        now = self.clock.now()
        aggregated, key = self._aggregate(event, now)
        correlated = self._observe(aggregated, key)
        if not self._accept(correlated.event, now):
            return None
        return correlated

    def _aggregate(self, event: Event, now: datetime) -> tuple[Event, bytes]:
        """EventAggregate: the event itself and its own key, or, once AGGREGATE_MAX_EVENTS
        similar ones were seen, a fresh combined event and the key of the whole group."""
        group_key, message = aggregate_keys(event)
        group = _digest(group_key)
        similar = self._similar.get(group)
        if similar is None or now - similar.last_seen > AGGREGATE_INTERVAL:
            similar = _Similar((), now)
        if message not in similar.messages:
            # Interned: the same message (a kubelet's "already present" for one image) is
            # kept once however many groups hold it.
            similar.messages = (*similar.messages, sys.intern(message))
        similar.last_seen = now
        self._similar.add(group, similar)
        if len(similar.messages) < AGGREGATE_MAX_EVENTS:
            return event, _digest(event_key(event))
        # Upstream drops one message at random (PopAny), so the group stays one short of the
        # limit and the next new message is combined too; the oldest is as good a pick.
        similar.messages = similar.messages[1:]
        involved = event.get("involvedObject") or {}
        stamp = format_time(now)
        combined: Event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": self.name_event(involved.get("name", ""), now),
                "namespace": (event.get("metadata") or {}).get("namespace", ""),
            },
            "involvedObject": involved,
            "reason": event.get("reason", ""),
            # EventAggregatorByReasonMessageFunc
            "message": "(combined from similar events): " + _message(event),
            "source": event.get("source") or {},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "type": event.get("type", ""),
        }
        return combined, group

    def _observe(self, event: Event, key: bytes) -> Correlated:
        """eventObserve: a repeat takes the first occurrence's name and firstTimestamp, one more
        than its count, and is written as a patch of what a repeat changes."""
        seen = self._observed.get(key)
        if seen is None:
            # The timestamp interned: events of one second share it.
            first = _Observation(
                int(event.get("count") or 1),
                sys.intern(str(event.get("firstTimestamp", ""))),
                _name(event),
            )
            self._observed.add(key, first)
            return Correlated(event, None)
        count = seen.count + 1
        repeat = {
            **event,
            "metadata": {**event["metadata"], "name": seen.name},
            "firstTimestamp": seen.first_timestamp,
            "count": count,
        }
        # The two-way merge patch upstream computes against a copy with these three cleared.
        # (The resourceVersion it also caches is the same on both sides, so never sent.)
        patch: Event = {"count": count, "lastTimestamp": event.get("lastTimestamp")}
        if _message(event):
            patch["message"] = _message(event)
        self._observed.add(key, _Observation(count, seen.first_timestamp, seen.name))
        return Correlated(repeat, patch)

    def _accept(self, event: Event, now: datetime) -> bool:
        """EventSourceObjectSpamFilter.Filter, inverted: whether the source still has a token
        for the object."""
        key = _digest(spam_key(event))
        bucket = self._spam.get(key) or _TokenBucket(SPAM_QPS, SPAM_BURST, now)
        accepted = bucket.try_accept(now)
        self._spam.add(key, bucket)
        return accepted


def _name(event: Event) -> str:
    return str((event.get("metadata") or {}).get("name", ""))
