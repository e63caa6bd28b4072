"""An update's type check skips the parts of the body that are the stored object's own
(issue 16: a status write sends the whole object back, and checking it all was a tenth of
the write). What it finds must be exactly what the full check finds: the same object, the
same unknown fields and warnings, the same error — ``1.0`` or ``true`` where Go has an
integer fails even where Python's ``==`` calls it equal to the stored ``1``."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taintplane.api.scheme import SCHEME
from taintplane.apiserver import typecheck
from taintplane.apiserver.status import APIError
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster

SCHEMA = "io.k8s.api.apps.v1.ReplicaSet"
TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
            }
        ],
        "terminationGracePeriodSeconds": 30,
        "tolerations": [
            {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}
        ],
    },
}


def stored() -> dict[str, Any]:
    """A ReplicaSet as stored: what the check leaves is a fixed point of it."""
    obj: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "generation": 1,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "web"},
            "resourceVersion": "7",
        },
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": copy.deepcopy(TEMPLATE),
        },
        "status": {"replicas": 1, "observedGeneration": 1},
    }
    typecheck.check_object(obj, SCHEMA, drop_unknown=True)
    return obj


JSON_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.sampled_from([1.0, 0.5, 3.0]),
    st.sampled_from(["", "x", "100m", "2026-01-01T00:00:00+01:00", "TCP"]),
    # fresh containers each time: the test writes into what it drew
    st.sampled_from([{}, [], {"bogus": 1}, [{"name": "c"}]]).map(copy.deepcopy),
)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += paths(item, (*prefix, i))
    return found


def outcome(obj: dict[str, Any], baseline: dict[str, Any] | None) -> Any:
    try:
        report = typecheck.check_object(
            obj, SCHEMA, baseline, drop_unknown=True, exact_baseline=True
        )
    except typecheck.TypeCheckError as error:
        return ("error", error.message)
    return ("ok", obj, report.unknown, report.problems)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_checking_against_the_stored_object_finds_what_the_full_check_finds(
    data: st.DataObject,
) -> None:
    base = stored()
    assert outcome(copy.deepcopy(base), None) == ("ok", base, [], [])  # a fixed point
    body = copy.deepcopy(base)
    for _ in range(data.draw(st.integers(min_value=0, max_value=3))):
        where = data.draw(st.sampled_from(paths(body)[1:]))
        parent: Any = body
        for step in where[:-1]:
            parent = parent[step]
        parent[where[-1]] = data.draw(JSON_VALUES)
    pod_spec: Any = body
    for step in ("spec", "template", "spec"):
        pod_spec = pod_spec.get(step) if isinstance(pod_spec, dict) else None
    if isinstance(pod_spec, dict) and data.draw(st.booleans()):
        pod_spec["bogus"] = 1
    assert outcome(copy.deepcopy(body), base) == outcome(copy.deepcopy(body), None)


@pytest.mark.parametrize("value", [1.0, True])
def test_an_integer_sent_as_a_float_or_bool_fails_even_where_equal_to_the_stored_one(
    value: Any,
) -> None:
    base = stored()
    body = copy.deepcopy(base)
    body["metadata"]["generation"] = value
    assert body == base  # Python's == does not see it
    assert outcome(copy.deepcopy(body), base)[0] == "error"
    assert outcome(copy.deepcopy(body), base) == outcome(copy.deepcopy(body), None)


def test_an_update_through_the_registry(tmp_path: Path) -> None:
    replicasets = SCHEME.lookup("apps", "v1", "replicasets")
    assert replicasets is not None

    async def main() -> None:
        async with in_process_cluster(tmp_path, VirtualClock(), components=()) as cluster:
            assert cluster.apiserver is not None
            registry = cluster.apiserver.registry
            body = stored()
            del body["metadata"]["resourceVersion"]
            created = await registry.create(replicasets, "default", body)
            # A float where the stored object has the same integer: the decode error.
            bad = copy.deepcopy(created)
            bad["metadata"]["generation"] = 1.0
            with pytest.raises(APIError) as raised:
                await registry.update(replicasets, "default", "web", bad, subresource="status")
            assert raised.value.code == 400
            assert "cannot unmarshal number 1.0 into Go struct field" in str(
                raised.value.status["message"]
            )
            # A missing object: the body's 400 first, then the 404.
            with pytest.raises(APIError) as raised:
                await registry.update(replicasets, "default", "gone", bad)
            assert raised.value.code == 400
            missing = copy.deepcopy(created)
            missing["metadata"]["name"] = "gone"
            with pytest.raises(APIError) as raised:
                await registry.update(replicasets, "default", "gone", missing)
            assert raised.value.code == 404
            # The status write itself, sent as the whole object back.
            update = copy.deepcopy(created)
            update["status"] = {"replicas": 3, "observedGeneration": 1}
            written = await registry.update(
                replicasets, "default", "web", update, subresource="status"
            )
            assert written["status"]["replicas"] == 3
            assert written["spec"] == created["spec"]

    asyncio.run(main())
