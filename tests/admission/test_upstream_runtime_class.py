"""plugin/pkg/admission/runtimeclass's unit tests (v1.35): TestSetOverhead, TestSetScheduling,
TestAdmit, TestValidate and TestValidateOverhead, on the plugin as the chain calls it, and the
refusals through the API server (403, upstream's messages)."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from taintplane.admission import Forbidden
from taintplane.admission.runtime_class import RuntimeClass
from taintplane.apiserver.app import APIServer
from taintplane.clock import VirtualClock
from taintplane.store.sqlite import SqliteStore
from tests.admission.support import FakeLookup, attributes, pod, run

MISMATCH = "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
WITHOUT_CLASS = "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
SMALL = {"cpu": "100m", "memory": "1"}
LARGE = {"cpu": "10", "memory": "10G"}
GUARANTEED = {"limits": {"cpu": "1", "memory": "10"}, "requests": {"cpu": "1", "memory": "10"}}


def runtime_class(**fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": "foo"},
        "handler": "bar",
        **fields,
    }


def overhead_pod(resources: dict[str, Any] | None, overhead: bool, cls: str | None = "foo") -> Any:
    container: dict[str, Any] = {"name": "foo-0", "image": "foo:V0"}
    if resources:
        container["resources"] = resources
    spec: dict[str, Any] = {"containers": [container]}
    if cls is not None:
        spec["runtimeClassName"] = cls
    if overhead:
        spec["overhead"] = dict(SMALL)
    return pod(name="p", namespace="test", **spec)


def _admit(cls: dict[str, Any] | None, obj: dict[str, Any]) -> str:
    plugin = RuntimeClass(FakeLookup(*([cls] if cls else [])))
    try:
        asyncio.run(plugin.admit(attributes(obj)))
    except Forbidden as refusal:
        return refusal.reason
    return ""


def _validate(cls: dict[str, Any] | None, obj: dict[str, Any]) -> str:
    plugin = RuntimeClass(FakeLookup(*([cls] if cls else [])))
    try:
        asyncio.run(plugin.validate(attributes(obj)))
    except Forbidden as refusal:
        return refusal.reason
    return ""


@pytest.mark.parametrize(
    ("cls", "obj", "error", "overhead"),
    [
        (runtime_class(overhead={"podFixed": SMALL}), overhead_pod(None, False), "", SMALL),
        (runtime_class(overhead={"podFixed": SMALL}), overhead_pod(GUARANTEED, False), "", SMALL),
        (runtime_class(overhead={"podFixed": LARGE}), overhead_pod(None, True), MISMATCH, None),
        (runtime_class(overhead={"podFixed": SMALL}), overhead_pod(None, True), "", SMALL),
    ],
    ids=[
        "overhead, no container requirements",
        "overhead, guaranteed pod",
        "overhead, pod with differing overhead already set",
        "overhead, pod with same overhead already set",
    ],
)
def test_set_overhead(
    cls: dict[str, Any], obj: dict[str, Any], error: str, overhead: dict[str, str] | None
) -> None:
    assert _admit(cls, obj) == error
    if not error:
        assert obj["spec"]["overhead"] == overhead


FOO_BAR = {"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoSchedule"}
FIZZ_BUZZ = {"key": "fizz", "operator": "Equal", "value": "buzz", "effect": "NoSchedule"}


def scheduling_pod(selector: dict[str, str] | None, tolerations: list[Any] | None) -> Any:
    spec: dict[str, Any] = {"runtimeClassName": "foo"}
    if selector is not None:
        spec["nodeSelector"] = selector
    if tolerations:
        spec["tolerations"] = tolerations
    return pod(name="p", namespace="test", **spec)


SCHEDULING: list[tuple[str, Any, Any, Any]] = [
    (
        "scheduling, nil scheduling",
        None, scheduling_pod({"foo": "bar"}, []), ({"foo": "bar"}, None),
    ),
    (
        "scheduling, conflict node selector",
        {"nodeSelector": {"foo": "conflict"}}, scheduling_pod({"foo": "bar"}, []),
        "conflict: runtimeClass.scheduling.nodeSelector[foo] = conflict; "
        "pod.spec.nodeSelector[foo] = bar",
    ),
    (
        "scheduling, nil node selector",
        {"nodeSelector": {"foo": "bar"}}, scheduling_pod(None, None), ({"foo": "bar"}, None),
    ),
    (
        "scheduling, node selector with the same key value",
        {"nodeSelector": {"foo": "bar"}}, scheduling_pod({"foo": "bar"}, None),
        ({"foo": "bar"}, None),
    ),
    (
        "scheduling, node selector with different key value",
        {"nodeSelector": {"foo": "bar", "fizz": "buzz"}}, scheduling_pod({"foo": "bar"}, None),
        ({"foo": "bar", "fizz": "buzz"}, None),
    ),
    (
        "scheduling, multiple tolerations",
        {"tolerations": [FOO_BAR, FIZZ_BUZZ]}, scheduling_pod({"foo": "bar"}, [FOO_BAR]),
        ({"foo": "bar"}, [FOO_BAR, FIZZ_BUZZ]),
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("scheduling", "obj", "expected"),
    [case[1:] for case in SCHEDULING],
    ids=[case[0] for case in SCHEDULING],
)
def test_set_scheduling(scheduling: Any, obj: dict[str, Any], expected: Any) -> None:
    cls = runtime_class() if scheduling is None else runtime_class(scheduling=scheduling)
    error = _admit(cls, obj)
    if isinstance(expected, str):
        assert error == expected
        return
    assert error == ""
    selector, tolerations = expected
    assert obj["spec"].get("nodeSelector") == selector
    assert obj["spec"].get("tolerations") == tolerations


@pytest.mark.parametrize(
    ("present", "error"),
    [(True, ""), (False, 'pod rejected: RuntimeClass "foo" not found')],
    ids=["runtimeClass found", "runtimeClass not found"],
)
def test_admit(present: bool, error: str) -> None:
    assert _admit(runtime_class() if present else None, scheduling_pod(None, None)) == error


VALIDATE: list[tuple[str, Any, Any, str]] = [
    # TestValidate: the pods name no class, as upstream's do.
    ("No Overhead in RuntimeClass, Overhead set in pod", runtime_class(),
     overhead_pod(GUARANTEED, True, None), WITHOUT_CLASS),
    ("Non-matching Overheads (no class named)", runtime_class(overhead={"podFixed": LARGE}),
     overhead_pod(None, True, None), WITHOUT_CLASS),
    ("Matching Overheads (no class named, no overhead)", runtime_class(overhead={"podFixed": SMALL}),
     overhead_pod(None, False, None), ""),
    # TestValidateOverhead: the class as the pod names it.
    ("Overhead part of RuntimeClass, no Overhead defined in pod",
     runtime_class(overhead={"podFixed": SMALL}), overhead_pod(None, False), MISMATCH),
    ("No Overhead in RuntimeClass, Overhead set in pod (class named)", runtime_class(),
     overhead_pod(GUARANTEED, True), WITHOUT_CLASS),
    ("No RuntimeClass, Overhead set in pod", None, overhead_pod(GUARANTEED, True, None),
     WITHOUT_CLASS),
    ("Non-matching Overheads", runtime_class(overhead={"podFixed": LARGE}),
     overhead_pod(None, True), MISMATCH),
    ("Matching Overheads", runtime_class(overhead={"podFixed": SMALL}), overhead_pod(None, True), ""),
]  # fmt: skip


@pytest.mark.parametrize(
    ("cls", "obj", "error"), [case[1:] for case in VALIDATE], ids=[case[0] for case in VALIDATE]
)
def test_validate_overhead(cls: Any, obj: dict[str, Any], error: str) -> None:
    assert _validate(cls, obj) == error


def test_both_phases_leave_a_matching_pod_alone() -> None:
    obj = overhead_pod(GUARANTEED, False)
    before = copy.deepcopy(obj)
    run(RuntimeClass(FakeLookup(runtime_class(overhead={"podFixed": SMALL}))), attributes(obj))
    assert obj["spec"] == {**before["spec"], "overhead": SMALL}


Call = Callable[..., Awaitable[httpx.Response]]


def _api(tmp: Path, scenario: Callable[[Call], Awaitable[None]]) -> None:
    async def main() -> None:
        store = await SqliteStore(tmp / "store.db").open()
        server = APIServer(store, VirtualClock())
        await server.bootstrap()
        transport = httpx.ASGITransport(app=server.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:

            async def call(method: str, path: str, body: Any = None) -> httpx.Response:
                return await http.request(method, path, json=body)

            try:
                await scenario(call)
            finally:
                await server.close()
                await store.close()

    asyncio.run(main())


def test_refusals_through_the_api(tmp_path: Path) -> None:
    """RuntimeClass is on by default; its refusals are admission.NewForbidden (403)."""
    pods = "/api/v1/namespaces/default/pods"

    def body(**spec: Any) -> dict[str, Any]:
        obj = pod(name="p", namespace="default", **spec)
        del obj["metadata"]["namespace"]
        return obj

    async def scenario(call: Call) -> None:
        cls = runtime_class(overhead={"podFixed": LARGE}, scheduling={"nodeSelector": {"a": "b"}})
        assert (await call("POST", "/apis/node.k8s.io/v1/runtimeclasses", cls)).status_code == 201
        cases = [
            (body(runtimeClassName="gone"), 'pod rejected: RuntimeClass "gone" not found'),
            (body(runtimeClassName="foo", overhead=SMALL), MISMATCH),
            (body(overhead=SMALL), WITHOUT_CLASS),
            (
                body(runtimeClassName="foo", nodeSelector={"a": "c"}),
                "conflict: runtimeClass.scheduling.nodeSelector[a] = b; pod.spec.nodeSelector[a] = c",
            ),
        ]
        for obj, message in cases:
            refused = await call("POST", pods, obj)
            assert refused.status_code == 403, refused.text
            assert refused.json()["message"] == f'pods "p" is forbidden: {message}'
        created = await call("POST", pods, body(runtimeClassName="foo"))
        assert created.status_code == 201, created.text
        assert created.json()["spec"]["overhead"] == LARGE
        assert created.json()["spec"]["nodeSelector"] == {"a": "b"}

    _api(tmp_path, scenario)
