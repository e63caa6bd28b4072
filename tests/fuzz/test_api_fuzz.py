"""Hostile requests against a real server (127.0.0.1): no 5xx, the server alive, nothing
invalid stored. Bounded for CI; benchmarks/fuzz_api.py runs the same generator for longer."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from hypothesis import HealthCheck, given, settings

from taintplane.sim.cluster import Cluster
from tests.fuzz import harness


@pytest.fixture(scope="module")
def api(cluster: Cluster) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


@settings(
    max_examples=400,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(harness.calls())
def test_hostile_requests_get_no_5xx(api: httpx.Client, call: harness.Call) -> None:
    harness.check_answer(call, harness.send(api, call))


@pytest.mark.parametrize(
    ("content_type", "body"),
    [("application/yaml", b) for b in harness.HOSTILE_YAML]
    + [("application/json", b) for b in harness.HOSTILE_JSON]
    + [("application/vnd.kubernetes.protobuf", b) for b in harness.HOSTILE_PROTOBUF],
)
def test_every_hostile_body_is_answered(api: httpx.Client, content_type: str, body: bytes) -> None:
    for resource in harness.RESOURCES:
        call = harness.Call("POST", harness.collection(resource), {}, content_type, body)
        harness.check_answer(call, harness.send(api, call))


def test_null_in_every_list_of_every_kind(api: httpx.Client) -> None:
    for resource in harness.RESOURCES:
        for path in harness.null_in_lists(resource):
            body = harness.with_null_list(resource, path, "fuzz-null")
            call = harness.Call(
                "POST", harness.collection(resource), {}, "application/json", harness.to_json(body)
            )
            response = harness.send(api, call)
            harness.check_answer(call, response)
            if response.status_code == 201:
                api.delete(harness.collection(resource) + "/fuzz-null")


def test_afterwards_the_server_is_ready_and_everything_stored_validates(
    api: httpx.Client, cluster: Cluster
) -> None:
    assert api.get("/readyz").status_code == 200
    assert cluster.apiserver is not None
    assert harness.stored_problems(api, cluster.apiserver.registry) == []
