"""Timestamps decode as metav1.Time and metav1.MicroTime do (time.Parse with RFC 3339, or
RFC3339Micro): what Go refuses fails decoding (a 400 for a create, a 422 naming the patch for
a patch) and nothing is stored; what it accepts is stored as Go encodes it, in UTC with "Z",
whole seconds for a Time and six digits of fraction for a MicroTime. A naive time already in
a data dir (stored before this) is read as UTC and stops no controller."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from taintplane.agents.nodes import NodeShape
from taintplane.api.decoding import parse_timestamp
from taintplane.api.scheme import SCHEME
from taintplane.client import ApiError, resource
from taintplane.sim.cluster import Cluster
from tests.controllers.harness import Sim, simulate

TIME = "2006-01-02T15:04:05Z07:00"
MICRO = "2006-01-02T15:04:05.000000Z07:00"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
NAIVE = "2026-11-25T19:28:46.729903"  # datetime.isoformat() of a naive datetime


@pytest.fixture(scope="module")
def api(cluster: Cluster) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def _lease(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name},
        "spec": {"holderIdentity": "h", **spec},
    }


def _node(name: str, time_added: str) -> dict[str, Any]:
    taint = {"key": "k", "effect": "NoExecute", "timeAdded": time_added}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "spec": {"taints": [taint]},
    }


@pytest.mark.parametrize(
    ("sent", "detail"),
    [
        (NAIVE, f'parsing time "{NAIVE}" as "{MICRO}": cannot parse "" as "Z07:00"'),
        (
            "2026-11-25T19:28:46",
            f'parsing time "2026-11-25T19:28:46" as "{MICRO}": cannot parse "" as ".000000"',
        ),
        (
            "2026-11-25T19:28:46Z",
            f'parsing time "2026-11-25T19:28:46Z" as "{MICRO}": cannot parse "Z" as ".000000"',
        ),
        (
            "2026-11-25T19:28:46.5Z",
            f'parsing time "2026-11-25T19:28:46.5Z" as "{MICRO}": cannot parse ".5Z" as ".000000"',
        ),
        (
            "2026-11-25T19:28:46.123456789Z",
            f'parsing time "2026-11-25T19:28:46.123456789Z" as "{MICRO}": '
            'cannot parse "789Z" as "Z07:00"',
        ),
        (
            "2026-11-25 19:28:46.123456Z",
            f'parsing time "2026-11-25 19:28:46.123456Z" as "{MICRO}": '
            'cannot parse " 19:28:46.123456Z" as "T"',
        ),
        ("soon", f'parsing time "soon" as "{MICRO}": cannot parse "soon" as "2006"'),
        (
            "2026-11-25T19:28:46.123456+0200",
            f'parsing time "2026-11-25T19:28:46.123456+0200" as "{MICRO}": '
            'cannot parse "+0200" as "Z07:00"',
        ),
        (
            "2026-11-25T19:28:46.123456Z+",
            'parsing time "2026-11-25T19:28:46.123456Z+": extra text: "+"',
        ),
        (
            "2026-02-30T19:28:46.123456Z",
            'parsing time "2026-02-30T19:28:46.123456Z": day out of range',
        ),
        (
            "2026-11-25T19:28:46.123456+25:00",
            'parsing time "2026-11-25T19:28:46.123456+25:00": time zone offset hour out of range',
        ),
    ],
)
def test_a_micro_time_go_cannot_parse_fails_decoding(
    api: httpx.Client, sent: str, detail: str
) -> None:
    response = api.post(LEASES, json=_lease("bad-micro", renewTime=sent))
    assert response.status_code == 400
    assert response.json()["message"] == (
        f'Lease in version "v1" cannot be handled as a Lease: {detail}'
    )
    assert api.get(f"{LEASES}/bad-micro").status_code == 404


@pytest.mark.parametrize(
    ("sent", "detail"),
    [
        (NAIVE, f'parsing time "{NAIVE}" as "{TIME}": cannot parse "" as "Z07:00"'),
        ("", f'parsing time "" as "{TIME}": cannot parse "" as "2006"'),
        (
            "2026-11-25t19:28:46Z",
            f'parsing time "2026-11-25t19:28:46Z" as "{TIME}": cannot parse "t19:28:46Z" as "T"',
        ),
        (
            "2026-1-25T19:28:46Z",
            f'parsing time "2026-1-25T19:28:46Z" as "{TIME}": cannot parse "1-25T19:28:46Z" as "01"',
        ),
        (
            "2026-11-25T19:28:46z",
            f'parsing time "2026-11-25T19:28:46z" as "{TIME}": cannot parse "z" as "Z07:00"',
        ),
        ("2026-13-25T19:28:46Z", 'parsing time "2026-13-25T19:28:46Z": month out of range'),
        ("2026-11-25T24:00:00Z", 'parsing time "2026-11-25T24:00:00Z": hour out of range'),
        ("2026-11-25T19:28:60Z", 'parsing time "2026-11-25T19:28:60Z": second out of range'),
        (
            "2026-11-25T19:28:46+02:61",
            'parsing time "2026-11-25T19:28:46+02:61": time zone offset minute out of range',
        ),
    ],
)
def test_a_time_go_cannot_parse_fails_decoding(api: httpx.Client, sent: str, detail: str) -> None:
    response = api.post("/api/v1/nodes", json=_node("bad-time", sent))
    assert response.status_code == 400
    assert (
        response.json()["message"] == f'Node in version "v1" cannot be handled as a Node: {detail}'
    )
    assert api.get("/api/v1/nodes/bad-time").status_code == 404


def test_a_micro_time_is_stored_in_utc_to_the_microsecond(api: httpx.Client) -> None:
    response = api.post(
        LEASES,
        json=_lease(
            "offset",
            renewTime="2025-01-01T12:00:00.500000+02:00",
            acquireTime="2025-01-01T00:30:00,000001-01:30",
        ),
    )
    assert response.status_code == 201, response.text
    spec = api.get(f"{LEASES}/offset").json()["spec"]
    assert (spec["renewTime"], spec["acquireTime"]) == (
        "2025-01-01T10:00:00.500000Z",
        "2025-01-01T02:00:00.000001Z",
    )


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        # Go reads a fraction RFC3339 does not have, and Time drops it on encoding (truncated).
        ("2025-01-01T12:00:00.999999+02:00", "2025-01-01T10:00:00Z"),
        ("2025-01-01T12:00:59.999999999Z", "2025-01-01T12:00:59Z"),
        ("2025-01-01T12:00:00,5Z", "2025-01-01T12:00:00Z"),
        ("2025-01-01T3:04:05Z", "2025-01-01T03:04:05Z"),  # the hour may have one digit
        ("2024-02-29T23:00:00-24:00", "2024-03-01T23:00:00Z"),  # offsets up to 24 hours
    ],
)
def test_a_time_is_stored_in_utc_in_whole_seconds(
    api: httpx.Client, sent: str, stored: str
) -> None:
    response = api.post("/api/v1/nodes", json=_node("time-ok", sent))
    assert response.status_code == 201, response.text
    try:
        node = api.get("/api/v1/nodes/time-ok").json()
        assert node["spec"]["taints"][0]["timeAdded"] == stored
    finally:
        api.delete("/api/v1/nodes/time-ok")


def test_event_times_are_micro_times_and_the_rest_times(api: httpx.Client) -> None:
    core = {
        "metadata": {"name": "ev-core"},
        "involvedObject": {"kind": "Node", "name": "n"},
        "reason": "R",
        "firstTimestamp": "2025-01-01T12:00:00.250000+01:00",
        "lastTimestamp": "2025-01-01T12:00:01Z",
        "eventTime": "2025-01-01T12:00:00.250000+01:00",
        "series": {"count": 2, "lastObservedTime": "2025-01-01T12:00:02.000007+01:00"},
        "reportingComponent": "c",
        "reportingInstance": "i",
        "action": "A",
        "type": "Normal",
    }
    response = api.post("/api/v1/namespaces/default/events", json=core)
    assert response.status_code == 201, response.text
    stored = api.get("/api/v1/namespaces/default/events/ev-core").json()
    assert (
        stored["firstTimestamp"],
        stored["lastTimestamp"],
        stored["eventTime"],
        stored["series"]["lastObservedTime"],
    ) == (
        "2025-01-01T11:00:00Z",
        "2025-01-01T12:00:01Z",
        "2025-01-01T11:00:00.250000Z",
        "2025-01-01T11:00:02.000007Z",
    )
    refused = api.post(
        "/apis/events.k8s.io/v1/namespaces/default/events",
        json={
            "metadata": {"name": "ev-new"},
            "eventTime": "2025-01-01T12:00:00Z",
            "regarding": {"kind": "Node", "name": "n"},
            "reportingController": "c",
            "reportingInstance": "i",
            "action": "A",
            "reason": "R",
            "type": "Normal",
        },
    )
    assert refused.status_code == 400
    assert refused.json()["message"] == (
        'Event in version "v1" cannot be handled as a Event: parsing time '
        f'"2025-01-01T12:00:00Z" as "{MICRO}": cannot parse "Z" as ".000000"'
    )


def test_a_merge_patch_with_a_naive_time_is_a_422_and_changes_nothing(api: httpx.Client) -> None:
    created = api.post(LEASES, json=_lease("patched", renewTime="2025-01-01T00:00:00.000000Z"))
    assert created.status_code == 201, created.text
    response = api.patch(
        f"{LEASES}/patched",
        json={"spec": {"renewTime": NAIVE}},
        headers={"content-type": "application/merge-patch+json"},
    )
    assert response.status_code == 422
    body = response.json()
    assert body["reason"] == "Invalid"
    assert body["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert body["message"].endswith(
        f'": parsing time "{NAIVE}" as "{MICRO}": cannot parse "" as "Z07:00"'
    )
    after = api.get(f"{LEASES}/patched").json()
    assert after["spec"]["renewTime"] == "2025-01-01T00:00:00.000000Z"
    assert after["metadata"]["resourceVersion"] == created.json()["metadata"]["resourceVersion"]


def test_the_official_client_naive_datetime_is_refused_and_an_aware_one_normalized(
    cluster: Cluster, api: httpx.Client
) -> None:
    """The Python client sends ``datetime.isoformat()``: no zone for a naive datetime."""
    api_client = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig_path))
    leases = k8s.CoordinationV1Api(api_client)
    try:
        leases.create_namespaced_lease(
            "default",
            k8s.V1Lease(
                metadata=k8s.V1ObjectMeta(name="py"), spec=k8s.V1LeaseSpec(holder_identity="h")
            ),
        )
        naive = datetime.datetime(2026, 11, 25, 19, 28, 46, 729903)
        with pytest.raises(ApiException) as caught:
            leases.patch_namespaced_lease("py", "default", {"spec": {"renewTime": naive}})
        assert caught.value.status == 422
        detail = (
            f'Invalid value: "map[spec:map[renewTime:{NAIVE}]]": parsing time "{NAIVE}" as '
            f'"{MICRO}": cannot parse "" as "Z07:00"'
        )
        assert orjson.loads(caught.value.body)["message"] == f' "" is invalid: patch: {detail}'
        assert "renewTime" not in api.get(f"{LEASES}/py").json()["spec"]

        aware = naive.replace(tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
        patched = leases.patch_namespaced_lease("py", "default", {"spec": {"renewTime": aware}})
        assert patched.spec.renew_time == aware
        assert api.get(f"{LEASES}/py").json()["spec"]["renewTime"] == "2026-11-25T17:28:46.729903Z"
    finally:
        api_client.close()


def test_a_zero_time_is_null_as_go_encodes_it(api: httpx.Client) -> None:
    response = api.post("/api/v1/nodes", json=_node("zero-time", "0001-01-01T00:00:00Z"))
    assert response.status_code == 201, response.text
    taints = api.get("/api/v1/nodes/zero-time").json()["spec"]["taints"]
    assert taints[0] == {"key": "k", "effect": "NoExecute", "timeAdded": None}


@pytest.mark.parametrize(
    ("stored", "read"),
    [
        (
            "2026-11-25T19:28:46.729903",
            datetime.datetime(2026, 11, 25, 19, 28, 46, 729903, tzinfo=datetime.UTC),
        ),
        ("2026-11-25T19:28:46Z", datetime.datetime(2026, 11, 25, 19, 28, 46, tzinfo=datetime.UTC)),
        ("yesterday", None),
        (None, None),
    ],
)
def test_stored_timestamps_read_as_aware_times_whatever_was_stored(
    stored: str | None, read: datetime.datetime | None
) -> None:
    parsed = parse_timestamp(stored)
    assert parsed == read
    assert parsed is None or parsed.tzinfo is not None


# ---- the node lifecycle controller on virtual time ------------------------------------------

LEASE_RESOURCE = resource("coordination.k8s.io", "v1", "leases")
AGENTS = ("controller-manager", "agents")
LIFECYCLE = ("node-lifecycle-controller", "taint-eviction-controller")


async def _goes_unknown_at_65_seconds(sim: Sim) -> None:
    """node-1's last renewal is seen at 10 s and it is silent from 12 s: with a 50 s grace,
    the review at 65 s marks it Unknown (as in test_node_lifecycle)."""
    await sim.advance_to(64.9)
    ready = await sim.node_condition("node-1", "Ready")
    assert ready is not None
    assert ready["status"] == "True"
    await sim.advance_to(65)
    ready = await sim.node_condition("node-1", "Ready")
    assert ready is not None
    assert (ready["status"], ready["lastTransitionTime"]) == ("Unknown", "2026-01-01T00:01:05Z")


def test_a_naive_renew_time_is_refused_and_the_controller_keeps_running(tmp_path: Path) -> None:
    """The report's repro: a client writes a naive renewTime into a healthy node's lease, then
    another node stops. The write is refused, so the controller never compares a naive time
    with its clock, and the stopped node goes Unknown on time."""

    async def scenario(sim: Sim) -> None:
        await sim.advance_to(12)
        with pytest.raises(ApiError) as caught:
            await sim.client.patch(
                LEASE_RESOURCE,
                "node-2",
                {"spec": {"renewTime": NAIVE}},
                namespace="kube-node-lease",
            )
        assert caught.value.code == 422
        sim.kubelets.stop("node-1")
        await _goes_unknown_at_65_seconds(sim)
        await sim.advance_to(12 + 180)
        ready = await sim.node_condition("node-2", "Ready")
        assert ready is not None
        assert ready["status"] == "True"

    simulate(
        tmp_path,
        scenario,
        components=AGENTS,
        controllers=LIFECYCLE,
        nodes=[NodeShape("node-1"), NodeShape("node-2")],
    )


def test_a_naive_renew_time_already_stored_is_read_as_utc(tmp_path: Path) -> None:
    """A data dir written before times were decoded may hold a naive renewTime: the
    controller reads it as UTC (the renewal it already saw at 10 s) instead of failing to
    compare it with its clock and stopping the controller manager."""

    async def scenario(sim: Sim) -> None:
        await sim.advance_to(12)
        sim.kubelets.stop("node-1")
        store = sim.cluster.store
        assert store is not None
        leases = SCHEME.lookup("coordination.k8s.io", "v1", "leases")
        assert leases is not None
        key = leases.storage_key("kube-node-lease", "node-1")
        kv = await store.get(key)
        assert kv is not None
        lease = orjson.loads(kv.value)
        assert lease["spec"]["renewTime"] == "2026-01-01T00:00:10.000000Z"
        lease["spec"]["renewTime"] = "2026-01-01T00:00:10.000000"
        await store.update(key, orjson.dumps(lease), kv.mod_revision)
        await _goes_unknown_at_65_seconds(sim)

    simulate(
        tmp_path,
        scenario,
        components=AGENTS,
        controllers=LIFECYCLE,
        nodes=[NodeShape("node-1"), NodeShape("node-2")],
    )
