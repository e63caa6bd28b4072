"""Upstream's unit tables (v1.35) for the plugins that add tolerations and taints by themselves:
plugin/pkg/admission/defaulttolerationseconds (TestForgivenessAdmission, TestHandles),
extendedresourcetoleration (TestAdmit, TestHandles) and nodetaint (Test_nodeTaints). The
plugins are called as the chain calls them; the order of the lists is upstream's, exactly."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from taintplane.admission import Attributes, Chain
from taintplane.admission.default_toleration_seconds import DefaultTolerationSeconds
from taintplane.admission.extended_resource_toleration import ExtendedResourceToleration
from taintplane.admission.taint_nodes_by_condition import TaintNodesByCondition
from taintplane.api.scheme import SCHEME
from tests.admission.support import attributes, pod, run

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"


def _exists(key: str, seconds: int | None = 300, effect: str = "NoExecute") -> dict[str, Any]:
    toleration: dict[str, Any] = {"key": key, "operator": "Exists"}
    if effect:
        toleration["effect"] = effect
    if seconds is not None:
        toleration["tolerationSeconds"] = seconds
    return toleration


FOO_700 = {
    "key": "foo",
    "operator": "Equal",
    "value": "bar",
    "effect": "NoSchedule",
    "tolerationSeconds": 700,
}
ALPHA_NOT_READY = _exists("node.alpha.kubernetes.io/notReady")
ALPHA_UNREACHABLE = _exists("node.alpha.kubernetes.io/unreachable")

FORGIVENESS: list[tuple[str, list[Any], list[Any]]] = [
    ("no tolerations: both added", [], [_exists(NOT_READY), _exists(UNREACHABLE)]),
    (
        "alpha keys are other taints: both added, the alpha ones kept",
        [ALPHA_NOT_READY, ALPHA_UNREACHABLE],
        [ALPHA_NOT_READY, ALPHA_UNREACHABLE, _exists(NOT_READY), _exists(UNREACHABLE)],
    ),
    (
        "alpha not-ready only",
        [ALPHA_NOT_READY],
        [ALPHA_NOT_READY, _exists(NOT_READY), _exists(UNREACHABLE)],
    ),
    (
        "alpha unreachable only",
        [ALPHA_UNREACHABLE],
        [ALPHA_UNREACHABLE, _exists(NOT_READY), _exists(UNREACHABLE)],
    ),
    (
        "unrelated tolerations: both added after them",
        [FOO_700],
        [FOO_700, _exists(NOT_READY), _exists(UNREACHABLE)],
    ),
    (
        "not-ready given: unreachable added",
        [_exists(NOT_READY, 700)],
        [_exists(NOT_READY, 700), _exists(UNREACHABLE)],
    ),
    (
        "unreachable given: not-ready added",
        [_exists(UNREACHABLE, 700)],
        [_exists(UNREACHABLE, 700), _exists(NOT_READY)],
    ),
    (
        "both given: no change",
        [_exists(NOT_READY, 700), _exists(UNREACHABLE, 700)],
        [_exists(NOT_READY, 700), _exists(UNREACHABLE, 700)],
    ),
    (
        "unreachable with no effect covers it: not-ready added",
        [_exists(UNREACHABLE, 700, effect="")],
        [_exists(UNREACHABLE, 700, effect=""), _exists(NOT_READY)],
    ),
    (
        "wildcard toleration: no change",
        [{"operator": "Exists", "tolerationSeconds": 700}],
        [{"operator": "Exists", "tolerationSeconds": 700}],
    ),
]


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [case[1:] for case in FORGIVENESS],
    ids=[case[0] for case in FORGIVENESS],
)
def test_forgiveness_admission(tolerations: list[Any], expected: list[Any]) -> None:
    obj = pod(tolerations=list(tolerations)) if tolerations else pod()
    run(DefaultTolerationSeconds(), attributes(obj))
    assert obj["spec"]["tolerations"] == expected


@pytest.mark.parametrize(("operation", "handled"), [("CREATE", True), ("UPDATE", True)])
def test_default_toleration_seconds_handles(operation: str, handled: bool) -> None:
    obj = pod()
    run(DefaultTolerationSeconds(), attributes(obj, operation, old=pod()))
    assert ("tolerations" in obj["spec"]) is handled


def _container(**requests: str) -> dict[str, Any]:
    return {"name": "c", "image": "i", "resources": {"requests": dict(requests)}}


EK, DO = "example.com/device-ek", "example.com/device-do"
CPU = _container(cpu="2")
MEMORY = _container(memory="2048")
EXT1 = {"name": "c", "image": "i", "resources": {"requests": {EK: "1"}}}
EXT2 = {"name": "c", "image": "i", "resources": {"requests": {DO: "2"}}}


def _gpu(key: str) -> dict[str, Any]:
    return {"key": key, "operator": "Exists", "effect": "NoSchedule"}


FOO = {"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoSchedule"}
EK_FOO_NOEXECUTE = {"key": EK, "operator": "Equal", "value": "foo", "effect": "NoExecute"}
EXTENDED: list[tuple[str, dict[str, Any], list[Any] | None]] = [
    ("empty pod", {"containers": []}, None),
    ("container without extended resources", {"containers": [CPU]}, None),
    ("init container without extended resources", {"containers": [], "initContainers": [MEMORY]}, None),
    ("container with extended resource", {"containers": [EXT1]}, [_gpu(EK)]),
    ("init container with extended resource", {"containers": [], "initContainers": [EXT2]}, [_gpu(DO)]),
    (
        "existing tolerations preserved, new one added",
        {"containers": [CPU, EXT1], "tolerations": [FOO]},
        [FOO, _gpu(EK)],
    ),
    (
        "several extended resources: sorted by key",
        {"containers": [MEMORY, EXT1], "initContainers": [CPU, EXT2]},
        [_gpu(DO), _gpu(EK)],
    ),
    (
        "the right toleration already there: no change",
        {"containers": [CPU, MEMORY, EXT1], "tolerations": [_gpu(EK)]},
        [_gpu(EK)],
    ),
    (
        "same key, other effect and value: kept, and the toleration added",
        {"containers": [CPU, MEMORY, EXT1], "tolerations": [EK_FOO_NOEXECUTE]},
        [EK_FOO_NOEXECUTE, _gpu(EK)],
    ),
    (
        "a wildcard toleration does not stop it",
        {"containers": [CPU, MEMORY, EXT1], "tolerations": [{"operator": "Exists"}]},
        [{"operator": "Exists"}, _gpu(EK)],
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "expected"), [case[1:] for case in EXTENDED], ids=[case[0] for case in EXTENDED]
)
@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
def test_extended_resource_toleration(
    operation: str, spec: dict[str, Any], expected: list[Any] | None
) -> None:
    obj = pod(**spec)
    run(ExtendedResourceToleration(), attributes(obj, operation, old=pod()))
    assert obj["spec"].get("tolerations") == expected


_NODES = SCHEME.lookup("", "v1", "nodes")
assert _NODES is not None
NODES = _NODES
NOT_READY_TAINT = {"key": NOT_READY, "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("spec", "status"),
    [
        ({}, {}),  # notReady taint is added on creation
        ({"taints": [NOT_READY_TAINT]}, {}),  # already tainted node is not tainted again
        ({}, {"conditions": [{"type": "Ready", "status": "False"}]}),  # an unready node too
    ],
    ids=["added on creation", "not added twice", "unready node as well"],
)
def test_node_taints(spec: dict[str, Any], status: dict[str, Any]) -> None:
    node: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "mynode"}}
    node.update(spec=spec, status=status)
    old = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "mynode"}, "spec": {}}
    asyncio.run(Chain([TaintNodesByCondition()]).admit(Attributes("CREATE", NODES, "", node, old)))
    assert node["spec"]["taints"] == [NOT_READY_TAINT]


def test_node_taint_only_on_create() -> None:
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "mynode"},
        "spec": {},
    }
    asyncio.run(Chain([TaintNodesByCondition()]).admit(Attributes("UPDATE", NODES, "", node, node)))
    assert "taints" not in node["spec"]
