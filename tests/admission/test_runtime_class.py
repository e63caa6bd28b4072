"""RuntimeClass admission, called directly: upstream's mutations and messages."""

from __future__ import annotations

from typing import Any

import pytest

from taintplane.admission import Forbidden
from taintplane.admission.runtime_class import RuntimeClass
from tests.admission.support import FakeLookup, attributes, pod, run


def _class(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": name},
        "handler": "h",
        **fields,
    }


LOOKUP = FakeLookup(
    _class("plain"),
    _class("kata", overhead={"podFixed": {"cpu": "250m", "memory": "120Mi"}}),
    _class(
        "gvisor",
        scheduling={
            "nodeSelector": {"sandbox": "gvisor"},
            "tolerations": [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}],
        },
    ),
)
SANDBOX = {"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}


def test_no_class_no_change() -> None:
    obj = pod(nodeSelector={"a": "b"})
    run(RuntimeClass(LOOKUP), attributes(obj))
    assert obj["spec"] == pod(nodeSelector={"a": "b"})["spec"]


def test_missing_class_refused() -> None:
    with pytest.raises(Forbidden) as refused:
        run(RuntimeClass(LOOKUP), attributes(pod(runtimeClassName="nope")))
    assert refused.value.reason == 'pod rejected: RuntimeClass "nope" not found'


def test_overhead_set() -> None:
    obj = pod(runtimeClassName="kata")
    run(RuntimeClass(LOOKUP), attributes(obj))
    assert obj["spec"]["overhead"] == {"cpu": "250m", "memory": "120Mi"}
    same = pod(runtimeClassName="kata", overhead={"cpu": "0.25", "memory": "120Mi"})
    run(RuntimeClass(LOOKUP), attributes(same))
    assert same["spec"]["overhead"] == {"cpu": "250m", "memory": "120Mi"}


@pytest.mark.parametrize(
    ("class_name", "message"),
    [
        ("kata", "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"),
        (
            "plain",
            "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
        ),
        (
            None,
            "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
        ),
    ],
)
def test_overhead_refused(class_name: str | None, message: str) -> None:
    obj = pod(overhead={"cpu": "1"})
    if class_name:
        obj["spec"]["runtimeClassName"] = class_name
    with pytest.raises(Forbidden) as refused:
        run(RuntimeClass(LOOKUP), attributes(obj))
    assert refused.value.reason == message


def test_scheduling_merged() -> None:
    obj = pod(
        runtimeClassName="gvisor",
        nodeSelector={"a": "b"},
        tolerations=[{"key": "x", "operator": "Exists"}],
    )
    run(RuntimeClass(LOOKUP), attributes(obj))
    assert obj["spec"]["nodeSelector"] == {"a": "b", "sandbox": "gvisor"}
    assert obj["spec"]["tolerations"] == [{"key": "x", "operator": "Exists"}, SANDBOX]
    bare = pod(runtimeClassName="gvisor")
    run(RuntimeClass(LOOKUP), attributes(bare))
    assert bare["spec"]["nodeSelector"] == {"sandbox": "gvisor"}
    assert bare["spec"]["tolerations"] == [SANDBOX]


def test_toleration_not_duplicated_and_covered_ones_dropped() -> None:
    obj = pod(runtimeClassName="gvisor", tolerations=[dict(SANDBOX)])
    run(RuntimeClass(LOOKUP), attributes(obj))
    assert obj["spec"]["tolerations"] == [SANDBOX]
    narrower = {"key": "sandbox", "operator": "Equal", "value": "v", "effect": "NoSchedule"}
    obj = pod(runtimeClassName="gvisor", tolerations=[narrower])
    run(RuntimeClass(LOOKUP), attributes(obj))
    assert obj["spec"]["tolerations"] == [SANDBOX]


def test_node_selector_conflict() -> None:
    with pytest.raises(Forbidden) as refused:
        run(
            RuntimeClass(LOOKUP),
            attributes(pod(runtimeClassName="gvisor", nodeSelector={"sandbox": "runc"})),
        )
    assert refused.value.reason == (
        "conflict: runtimeClass.scheduling.nodeSelector[sandbox] = gvisor; "
        "pod.spec.nodeSelector[sandbox] = runc"
    )


def test_only_pod_create() -> None:
    obj = pod(runtimeClassName="nope")
    run(RuntimeClass(LOOKUP), attributes(obj, "UPDATE", old=pod()))
    run(RuntimeClass(LOOKUP), attributes(obj, subresource="binding"))
