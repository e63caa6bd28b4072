"""The scheduler's Events as client-go's events library records them (events.k8s.io/v1): no
deprecated core/v1 fields, and repeats as a series on the first Event, written on the
broadcaster's 6-minute and 30-minute loops. Exact fields through both API versions, on
virtual time; kubectl describe's line for a series."""

import asyncio
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from taintplane.apiserver.app import APIServer
from taintplane.client import Client, InProcessTransport, resource
from taintplane.client.event_series import SeriesEventRecorder
from taintplane.client.transport import HTTPTransport
from taintplane.clock import VirtualClock
from taintplane.store.sqlite import SqliteStore
from tests.controllers.harness import START, Sim, simulate
from tests.scheduler.builders import make_node, make_pod, taint

EVENTS_V1 = resource("events.k8s.io", "v1", "events")
EVENTS = resource("", "v1", "events")
T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
POD_REF = {
    "kind": "Pod",
    "namespace": "default",
    "name": "web",
    "uid": "u-1",
    "apiVersion": "v1",
    "resourceVersion": "7",
}
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "managedFields")


def _micro(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _bare(event: dict[str, Any]) -> dict[str, Any]:
    metadata = {k: v for k, v in event["metadata"].items() if k not in SERVER_FIELDS}
    return {**event, "metadata": metadata}


async def _server(tmp_path, clock):
    store = await SqliteStore(tmp_path / "s.db").open()
    server = APIServer(store, clock)
    await server.bootstrap()
    return store, server, Client(InProcessTransport(server.app))


async def _listed(client: Client, rt=EVENTS_V1) -> list[dict[str, Any]]:
    items, _ = await client.list(rt, namespace="default")
    return sorted(items, key=lambda e: e["metadata"]["name"])


def _recording(tmp_path, scenario):
    async def main():
        clock = VirtualClock(T0)
        store, server, client = await _server(tmp_path, clock)
        recorder = SeriesEventRecorder(client, clock, "default-scheduler", "default-scheduler-host")
        loops = asyncio.create_task(recorder.run())
        try:
            await scenario(clock, client, recorder)
        finally:
            loops.cancel()
            await asyncio.gather(loops, return_exceptions=True)
            await server.close()
            await store.close()

    asyncio.run(main())


def test_an_event_has_the_new_fields_only_and_reads_as_upstream_in_both_versions(tmp_path):
    async def scenario(clock, client, recorder):
        recorder.eventf(POD_REF, None, "Warning", "FailedScheduling", "Scheduling", "0/1 nodes")
        await recorder.flush()
        [event] = await _listed(client)
        name = event["metadata"]["name"]
        assert re.fullmatch(r"web\.[0-9a-f]+", name)
        assert _bare(event) == {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": "default"},
            "eventTime": _micro(0),
            "reportingController": "default-scheduler",
            "reportingInstance": "default-scheduler-host",
            "action": "Scheduling",
            "reason": "FailedScheduling",
            "regarding": POD_REF,
            "note": "0/1 nodes",
            "type": "Warning",
            # Go prints the zero EventSource and zero Times; a zero count is left out.
            "deprecatedSource": {},
            "deprecatedFirstTimestamp": None,
            "deprecatedLastTimestamp": None,
        }
        core = await client.get(EVENTS, name, "default")
        assert _bare(core) == {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": "default"},
            "eventTime": _micro(0),
            "reportingComponent": "default-scheduler",
            "reportingInstance": "default-scheduler-host",
            "action": "Scheduling",
            "reason": "FailedScheduling",
            "involvedObject": POD_REF,
            "message": "0/1 nodes",
            "type": "Warning",
            "source": {},
            "firstTimestamp": None,
            "lastTimestamp": None,
        }

    _recording(tmp_path, scenario)


def test_repeats_become_a_series_written_on_the_broadcaster_loops(tmp_path):
    async def scenario(clock, client, recorder):
        def failed(note="0/1 nodes"):
            recorder.eventf(POD_REF, None, "Warning", "FailedScheduling", "Scheduling", note)

        failed()
        await clock.advance(300)
        # The first repeat patches series {count: 2} onto the first Event; the note is not
        # part of what makes Events isomorphic.
        failed("0/2 nodes")
        await recorder.flush()
        [event] = await _listed(client)
        assert (event["eventTime"], event["note"]) == (_micro(0), "0/1 nodes")
        assert event["series"] == {"count": 2, "lastObservedTime": _micro(300)}
        # Later repeats only count in memory ...
        await clock.advance(30)
        failed()
        await recorder.flush()
        [event] = await _listed(client)
        assert event["series"] == {"count": 2, "lastObservedTime": _micro(300)}
        # ... until finishSeries (at 0, 6, 12 min) finds the series unobserved for 6 minutes:
        # not at 6 min, at 12 min, with the last count.
        await clock.advance(360 - 330)
        await recorder.flush()
        assert (await _listed(client))[0]["series"]["count"] == 2
        await clock.advance(720 - 360)
        await recorder.flush()
        [event] = await _listed(client)
        assert event["series"] == {"count": 3, "lastObservedTime": _micro(330)}
        # The series is finished: the next one is a new Event.
        failed()
        await recorder.flush()
        events = await _listed(client)
        assert len(events) == 2
        assert (events[1]["eventTime"], "series" in events[1]) == (_micro(720), False)
        # Each core/v1 reader sees the series too, and no count.
        core = await _listed(client, EVENTS)
        assert core[0]["series"] == {"count": 3, "lastObservedTime": _micro(330)}
        assert "count" not in core[0]

    _recording(tmp_path, scenario)


def test_an_open_series_is_rewritten_every_30_minutes(tmp_path):
    async def scenario(clock, client, recorder):
        for minute in range(34):
            recorder.eventf(POD_REF, None, "Warning", "FailedScheduling", "Scheduling", "n")
            await clock.advance(60 - (1 if minute == 29 else 0))
            if minute == 29:
                # Just before the refresh at 30 min: still the count the first repeat wrote.
                await recorder.flush()
                [event] = await _listed(client)
                assert event["series"] == {"count": 2, "lastObservedTime": _micro(60)}
                await clock.advance(1)
        await recorder.flush()
        [event] = await _listed(client)
        # refreshExistingEventSeries at 30 min wrote the 30 repeats observed by then.
        assert event["series"] == {"count": 30, "lastObservedTime": _micro(29 * 60)}

    _recording(tmp_path, scenario)


def test_isomorphic_means_same_regarding_version_related_type_reason_and_action(tmp_path):
    async def scenario(clock, client, recorder):
        newer = {**POD_REF, "resourceVersion": "8"}
        other = {**POD_REF, "name": "other", "uid": "u-2"}
        recorder.eventf(POD_REF, None, "Warning", "FailedScheduling", "Scheduling", "n")
        recorder.eventf(newer, None, "Warning", "FailedScheduling", "Scheduling", "n")
        recorder.eventf(POD_REF, other, "Warning", "FailedScheduling", "Scheduling", "n")
        recorder.eventf(POD_REF, None, "Normal", "FailedScheduling", "Scheduling", "n")
        recorder.eventf(POD_REF, None, "Warning", "Scheduled", "Scheduling", "n")
        recorder.eventf(POD_REF, None, "Warning", "FailedScheduling", "Binding", "n")
        await clock.advance(1)
        recorder.eventf(newer, None, "Warning", "FailedScheduling", "Scheduling", "n")
        await recorder.flush()
        events = await _listed(client)
        assert len(events) == 6
        assert [e.get("series", {}).get("count") for e in events] == [
            None,
            2,
            None,
            None,
            None,
            None,
        ]

    _recording(tmp_path, scenario)


# ---- the scheduler ---------------------------------------------------------------------------


def test_the_scheduler_records_failed_scheduling_through_events_k8s_io(tmp_path):
    async def scenario(sim: Sim) -> None:
        await sim.create_node(make_node("only", taints=[taint("maintenance", value="yes")]))
        pod = await sim.create_pod(make_pod("waiting"))
        await sim.advance(1)
        [event] = await _listed(sim.client)
        assert event["reportingController"] == "default-scheduler"
        assert event["action"] == "Scheduling"
        assert event["reason"] == "FailedScheduling"
        assert event["eventTime"] == START.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        assert event["regarding"] == {
            "kind": "Pod",
            "namespace": "default",
            "name": "waiting",
            "uid": pod["metadata"]["uid"],
            "apiVersion": "v1",
            "resourceVersion": pod["metadata"]["resourceVersion"],
        }
        assert "related" not in event
        assert "deprecatedCount" not in event
        assert event["deprecatedSource"] == {}
        assert event["deprecatedFirstTimestamp"] is event["deprecatedLastTimestamp"] is None
        core = await sim.client.get(EVENTS, event["metadata"]["name"], "default")
        assert (core["source"], core["firstTimestamp"], core["lastTimestamp"]) == ({}, None, None)
        assert "count" not in core

    simulate(tmp_path, scenario, components=("scheduler",))


def test_kubectl_describe_shows_a_series_as_one_line(kubectl, cluster):
    """describe prints ``<since lastObservedTime> (x<count> over <since eventTime>)``."""

    async def record() -> None:
        # Times set back from the wall clock, which kubectl measures ages against.
        started = datetime.now(UTC) - timedelta(minutes=15, seconds=30)
        clock = VirtualClock(started)
        transport = HTTPTransport(cluster.url)
        client = Client(transport)
        recorder = SeriesEventRecorder(client, clock, "default-scheduler", "default-scheduler-h")
        kubectl("run", "described", "--image=nginx", "--restart=Never")
        pod = await client.get(resource("", "v1", "pods"), "described", "default")
        reference = {
            "kind": "Pod",
            "namespace": "default",
            "name": "described",
            "uid": pod["metadata"]["uid"],
            "apiVersion": "v1",
            "resourceVersion": pod["metadata"]["resourceVersion"],
        }
        note = "0/1 nodes are available: 1 node(s) had untolerated taint(s)."
        recorder.eventf(reference, None, "Warning", "FailedScheduling", "Scheduling", note)
        await clock.advance(300)
        recorder.eventf(reference, None, "Warning", "FailedScheduling", "Scheduling", note)
        await recorder.flush()
        await transport.close()

    asyncio.run(record())
    description = kubectl("describe", "pod", "described")
    events = description[description.index("Events:") :].splitlines()
    assert events[1].split() == ["Type", "Reason", "Age", "From", "Message"]
    assert [line.split(None, 6) for line in events[3:]] == [
        [
            "Warning",
            "FailedScheduling",
            "10m",
            "(x2",
            "over",
            "15m)",
            "default-scheduler  0/1 nodes are available: 1 node(s) had untolerated taint(s).",
        ]
    ]


# ---- related --------------------------------------------------------------------------------

PRIORITY_CLASSES = resource("scheduling.k8s.io", "v1", "priorityclasses")


def _reference(pod: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "namespace": "default",
        "name": pod["metadata"]["name"],
        "uid": pod["metadata"]["uid"],
        "apiVersion": "v1",
        "resourceVersion": pod["metadata"]["resourceVersion"],
    }


def test_preempted_is_related_to_the_preemptor_scheduled_and_failed_to_nothing(tmp_path):
    """Eventf(victim, preemptor, Normal, "Preempted", "Preempting", ...); Scheduled and
    FailedScheduling are recorded with a nil related object."""

    async def scenario(sim: Sim) -> None:
        for name, value in (("low", 10), ("high", 1000)):
            body = {"metadata": {"name": name}, "value": value}
            await sim.client.create(PRIORITY_CLASSES, body)
        await sim.create_node(make_node("n1", cpu="1"))
        await sim.taint("n1", None)  # the not-ready taint admission gives a new node
        victim = await sim.create_pod(
            make_pod("victim", requests={"cpu": "1"}, priorityClassName="low")
        )
        await sim.advance(1)
        preemptor = await sim.create_pod(
            make_pod("urgent", requests={"cpu": "1"}, priorityClassName="high")
        )
        await sim.advance(1)
        by_reason = {e["reason"]: e for e in await _listed(sim.client)}
        assert sorted(by_reason) == ["FailedScheduling", "Preempted", "Scheduled"]
        preempted = by_reason["Preempted"]
        assert (preempted["action"], preempted["type"]) == ("Preempting", "Normal")
        assert preempted["note"] == f"Preempted by pod {preemptor['metadata']['uid']} on node n1"
        assert preempted["regarding"]["name"] == "victim"
        assert preempted["regarding"]["uid"] == victim["metadata"]["uid"]
        assert preempted["related"] == _reference(preemptor)
        core = await sim.client.get(EVENTS, preempted["metadata"]["name"], "default")
        assert core["related"] == _reference(preemptor)
        assert "related" not in by_reason["Scheduled"]
        assert "related" not in by_reason["FailedScheduling"]

    simulate(tmp_path, scenario, components=("scheduler",))
