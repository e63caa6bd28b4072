"""The dashboard's last hour, rebuilt from pods and events: the counts each minute agree with
asking every pod what it was at that minute, gone pods are seen through their events, and
only the taint managers' ``Marking for deletion`` events count as evictions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from taintplane.web.chart import chart
from taintplane.web.history import history

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def ts(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(
    name: str,
    created: datetime,
    started: datetime | None = None,
    deleted: datetime | None = None,
    grace: int = 30,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "creationTimestamp": ts(created)}
    if deleted is not None:
        meta["deletionTimestamp"] = ts(deleted + timedelta(seconds=grace))
        meta["deletionGracePeriodSeconds"] = grace
    status: dict[str, Any] = {"phase": "Running" if started else "Pending"}
    if started is not None:
        status["containerStatuses"] = [{"state": {"running": {"startedAt": ts(started)}}}]
    return {"metadata": meta, "status": status}


def event(name: str, reason: str, when: datetime, message: str = "") -> dict[str, Any]:
    return {
        "metadata": {"name": f"{name}.{reason}", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": name},
        "reason": reason,
        "message": message,
        "lastTimestamp": ts(when),
    }


def expected(
    created: datetime, started: datetime | None, deleted: datetime | None, at: datetime
) -> str | None:
    if at < created:
        return None
    if deleted is not None and at >= deleted:
        return "terminating"
    if started is not None and at >= started:
        return "running"
    return "pending"


seconds = st.integers(min_value=-5400, max_value=0)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(seconds, st.none() | st.integers(0, 4000), st.none() | st.integers(0, 4000)),
        max_size=12,
    )
)
def test_counts_agree_with_asking_each_pod(lives: list[tuple[int, int | None, int | None]]) -> None:
    pods = []
    truth = []
    for index, (offset, run_after, delete_after) in enumerate(lives):
        created = NOW + timedelta(seconds=offset)
        started = created + timedelta(seconds=run_after) if run_after is not None else None
        if started is not None and started > NOW:
            started = None
        deleted = created + timedelta(seconds=delete_after) if delete_after is not None else None
        if deleted is not None and deleted > NOW:
            deleted = None
        if started is not None and deleted is not None and started > deleted:
            started = None
        pods.append(pod(f"p{index}", created, started, deleted))
        truth.append((created, started, deleted))
    past = history(pods, [], NOW)
    assert len(past.samples) == 61
    assert past.samples[-1] == NOW
    for index, at in enumerate(past.samples):
        states = [expected(c, s, d, at) for c, s, d in truth]
        assert past.running[index] == states.count("running")
        assert past.pending[index] == states.count("pending")
        assert past.terminating[index] == states.count("terminating")
    chart(past)  # draws whatever the figures are


def test_a_gone_pod_is_seen_through_its_events() -> None:
    events = [
        event("gone", "Scheduled", NOW - timedelta(minutes=50)),
        event("gone", "Started", NOW - timedelta(minutes=40)),
        event(
            "gone",
            "TaintManagerEviction",
            NOW - timedelta(minutes=20),
            "Marking for deletion Pod default/gone",
        ),
        event("gone", "Killing", NOW - timedelta(minutes=19, seconds=30)),
    ]
    past = history([], events, NOW)
    at = {when: index for index, when in enumerate(past.samples)}
    assert past.pending[at[NOW - timedelta(minutes=45)]] == 1
    assert past.running[at[NOW - timedelta(minutes=30)]] == 1
    assert past.terminating[at[NOW - timedelta(minutes=20)]] == 1
    assert past.running[at[NOW - timedelta(minutes=10)]] == 0
    assert past.terminating[at[NOW - timedelta(minutes=10)]] == 0
    # Its eviction falls in the 11:40 bucket.
    assert [(when.strftime("%H:%M"), n) for when, n in past.evictions if n] == [("11:40", 1)]


def test_only_marking_for_deletion_counts_as_an_eviction() -> None:
    at = NOW - timedelta(minutes=2)
    events = [
        event("a", "TaintManagerEviction", at, "Marking for deletion Pod default/a"),
        event("b", "TaintManagerEviction", at, "Cancelling deletion of Pod default/b"),
        event("c", "DeviceTaintManagerEviction", at, "Marking for deletion"),
        event("d", "TaintManagerEviction", NOW - timedelta(hours=2), "Marking for deletion"),
    ]
    past = history([], events, NOW)
    assert sum(n for _, n in past.evictions) == 2
    assert past.evictions[-1][1] == 2
    svg = chart(past)
    assert "<title>2 evicted from 11:55</title>" in svg
    assert "2 taint evictions." in svg


def test_a_pod_that_exists_is_not_counted_again_from_its_events() -> None:
    running = pod("web", NOW - timedelta(minutes=30), NOW - timedelta(minutes=29))
    events = [event("web", "Started", NOW - timedelta(minutes=29))]
    past = history([running], events, NOW)
    assert past.running[-1] == 1
