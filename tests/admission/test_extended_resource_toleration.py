"""ExtendedResourceToleration, called directly."""

from __future__ import annotations

from typing import Any

import pytest

from taintplane.admission.extended_resource_toleration import (
    ExtendedResourceToleration,
    is_extended_resource_name,
)
from tests.admission.support import attributes, pod, run


def _container(**requests: str) -> dict[str, Any]:
    return {"name": "c", "image": "i", "resources": {"requests": requests}}


def _gpu(key: str) -> dict[str, str]:
    return {"key": key, "operator": "Exists", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("name", "extended"),
    [
        ("example.com/gpu", True),
        ("nvidia.com/gpu", True),
        ("cpu", False),
        ("memory", False),
        ("hugepages-2Mi", False),
        ("kubernetes.io/something", False),
        ("requests.example.com/gpu", False),
        ("example.com/bad name", False),
    ],
)
def test_extended_resource_names(name: str, extended: bool) -> None:
    assert is_extended_resource_name(name) is extended


def test_tolerations_added_sorted_from_all_containers() -> None:
    obj = pod(
        containers=[_container(**{"z.com/fpga": "1", "cpu": "1"}), _container()],
        initContainers=[{"name": "i", "resources": {"requests": {"a.com/gpu": "1"}}}],
    )
    run(ExtendedResourceToleration(), attributes(obj))
    assert obj["spec"]["tolerations"] == [_gpu("a.com/gpu"), _gpu("z.com/fpga")]


def test_existing_toleration_kept_or_updated() -> None:
    same = _gpu("a.com/gpu")
    obj = pod(containers=[_container(**{"a.com/gpu": "1"})], tolerations=[dict(same)])
    run(ExtendedResourceToleration(), attributes(obj, "UPDATE", old=pod()))
    assert obj["spec"]["tolerations"] == [same]
    seconds = {**same, "effect": "NoSchedule", "tolerationSeconds": 5}
    obj = pod(containers=[_container(**{"a.com/gpu": "1"})], tolerations=[seconds, {"key": "x"}])
    run(ExtendedResourceToleration(), attributes(obj))
    assert obj["spec"]["tolerations"] == [same, {"key": "x"}]


def test_no_extended_resources_no_change() -> None:
    obj = pod(containers=[_container(cpu="1")])
    run(ExtendedResourceToleration(), attributes(obj))
    assert "tolerations" not in obj["spec"]
    obj = pod(containers=[_container(**{"a.com/gpu": "1"})])
    run(ExtendedResourceToleration(), attributes(obj, subresource="status"))
    assert "tolerations" not in obj["spec"]
