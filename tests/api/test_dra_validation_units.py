"""resource.k8s.io validators called directly: the branches the API-level tables do not reach."""

from __future__ import annotations

from typing import Any

import pytest

from taintplane.api.dra_validation import (
    validate_claim_spec,
    validate_conditions,
    validate_device_class_spec,
    validate_device_taint_rule_spec,
)
from taintplane.api.field import Path
from taintplane.api.resourceslice_validation import validate_resource_slice_spec

SPEC = Path.root("spec")


def messages(errors: list[Any]) -> list[str]:
    return [str(e) for e in errors]


def exactly(**request: Any) -> dict[str, Any]:
    return {"devices": {"requests": [{"name": "gpu", "exactly": request}]}}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"devices": {"requests": [{"name": "gpu"}]}},
            "spec.devices.requests[0]: Required value: exactly one of `exactly` or "
            "`firstAvailable` is required",
        ),
        (
            {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {"deviceClassName": "c"},
                            "firstAvailable": [{"name": "a", "deviceClassName": "c"}],
                        }
                    ]
                }
            },
            'spec.devices.requests[0]: Invalid value: "null": exactly one of `exactly` or '
            "`firstAvailable` is required, but multiple fields are set",
        ),
        (exactly(), "spec.devices.requests[0].exactly.deviceClassName: Required value"),
        (
            exactly(deviceClassName="c", allocationMode="All", count=2),
            "spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified "
            "when allocationMode is 'All'",
        ),
        (
            exactly(deviceClassName="c", allocationMode="ExactCount", count=0),
            "spec.devices.requests[0].exactly.count: Invalid value: 0: must be greater than zero",
        ),
        (
            exactly(deviceClassName="c", allocationMode="Some"),
            'spec.devices.requests[0].exactly.allocationMode: Unsupported value: "Some": '
            'supported values: "All", "ExactCount"',
        ),
        (
            exactly(deviceClassName="c", allocationMode="All", selectors=[{}]),
            "spec.devices.requests[0].exactly.selectors[0].cel: Required value",
        ),
        (
            exactly(deviceClassName="c", allocationMode="All", selectors=[{"cel": {}}]),
            "spec.devices.requests[0].exactly.selectors[0].cel.expression: Required value",
        ),
        (
            exactly(deviceClassName="c", allocationMode="All", tolerations=[{"key": "k"}]),
            "spec.devices.requests[0].exactly.tolerations[0].operator: Required value",
        ),
        (
            {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "firstAvailable": [
                                {"name": "a", "deviceClassName": "c", "allocationMode": "All"},
                                {"name": "a", "deviceClassName": "c", "allocationMode": "All"},
                            ],
                        }
                    ]
                }
            },
            'spec.devices.requests[0].firstAvailable[1]: Duplicate value: "a"',
        ),
        (
            {"devices": {"config": [{"opaque": {"driver": "gpu.example.com"}}]}},
            "spec.devices.config[0].opaque.parameters: Required value",
        ),
        (
            {"devices": {"config": [{}]}},
            "spec.devices.config[0].opaque: Required value",
        ),
    ],
)
def test_claim_spec_errors(spec: dict[str, Any], expected: str) -> None:
    assert expected in messages(validate_claim_spec(spec, SPEC))


def test_too_many_requests_and_duplicates() -> None:
    requests = [
        {"name": f"r{i}", "exactly": {"deviceClassName": "c", "allocationMode": "All"}}
        for i in range(33)
    ]
    assert messages(validate_claim_spec({"devices": {"requests": requests}}, SPEC)) == [
        "spec.devices.requests: Too many: 33: must have at most 32 items"
    ]
    twice = requests[:1] * 2
    assert 'spec.devices.requests[1]: Duplicate value: "r0"' in messages(
        validate_claim_spec({"devices": {"requests": twice}}, SPEC)
    )


def test_device_class_and_rule_specs() -> None:
    assert messages(validate_device_class_spec({"selectors": [{}]}, SPEC)) == [
        "spec.selectors[0].cel: Required value"
    ]
    rule = {
        "deviceSelector": {"driver": "Bad_Driver", "pool": "", "device": "GPU"},
        "taint": {"key": "k", "effect": "NoExecute"},
    }
    found = messages(validate_device_taint_rule_spec(rule, None, SPEC))
    assert any(m.startswith("spec.deviceSelector.driver: Invalid value") for m in found)
    assert any(m.startswith("spec.deviceSelector.device: Invalid value") for m in found)
    # An effect stored earlier is not re-checked when it does not change.
    old = {"taint": {"key": "k", "effect": "Sideways"}}
    same = {"taint": {"key": "k", "effect": "Sideways"}}
    assert validate_device_taint_rule_spec(same, old, SPEC) == []


def test_conditions() -> None:
    conditions = [
        {"type": "Ready", "status": "Maybe", "reason": "9bad"},
        {"type": "Ready", "status": "True", "lastTransitionTime": "x", "reason": ""},
    ]
    found = messages(validate_conditions(conditions, Path.root("status", "conditions"), 1))
    assert (
        'status.conditions[0].status: Unsupported value: "Maybe": supported values: '
        '"False", "True", "Unknown"' in found
    )
    assert "status.conditions[0].lastTransitionTime: Required value: must be set" in found
    assert any(m.startswith('status.conditions[0].reason: Invalid value: "9bad"') for m in found)
    assert 'status.conditions[1].type: Duplicate value: "Ready"' in found
    assert "status.conditions[1].reason: Required value: must be set" in found
    assert "status.conditions: Too many: 2: must have at most 1 items" in found


def slice_spec(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "driver": "gpu.example.com",
        "pool": {"name": "node-1", "resourceSliceCount": 1},
        "nodeName": "node-1",
        "devices": [{"name": "gpu-0"}],
    }
    body.update(spec)
    return {k: v for k, v in body.items() if v is not None}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            slice_spec(pool={"name": "p", "resourceSliceCount": 0, "generation": -1}),
            "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
        ),
        (
            slice_spec(pool={"name": "p", "resourceSliceCount": 1, "generation": -1}),
            "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero",
        ),
        (
            slice_spec(nodeName=""),
            'spec.nodeName: Invalid value: "": must be either unset or set to a non-empty string',
        ),
        (
            slice_spec(nodeName=None, nodeSelector={"nodeSelectorTerms": []}),
            "spec.nodeSelector.nodeSelectorTerms: Invalid value: []: must have exactly one node "
            "selector term",
        ),
        (
            slice_spec(nodeName=None, allNodes=False),
            "spec.allNodes: Invalid value: false: must be either unset or set to true",
        ),
        (
            slice_spec(sharedCounters=[]),
            'spec: Invalid value: "": only one of `sharedCounters` or `devices` is allowed',
        ),
        (
            slice_spec(devices=[{"name": "gpu-0"}, {"name": "gpu-0"}]),
            'spec.devices[1]: Duplicate value: "gpu-0"',
        ),
        (
            slice_spec(devices=[{"name": "gpu-0", "attributes": {"a/b/c": {"int": 1}}}]),
            'spec.devices[0].attributes: Invalid value: "a/b/c": must not contain more than one '
            "slash",
        ),
        (
            slice_spec(devices=[{"name": "gpu-0", "attributes": {"/x": {"int": 1}}}]),
            'spec.devices[0].attributes: Invalid value: "": the domain must not be empty',
        ),
        (
            slice_spec(devices=[{"name": "gpu-0", "attributes": {"example.com/": {"int": 1}}}]),
            'spec.devices[0].attributes: Invalid value: "": the name must not be empty',
        ),
        (
            slice_spec(devices=[{"name": "gpu-0", "attributes": {"x": {}}}]),
            'spec.devices[0].attributes[x]: Invalid value: "": exactly one value must be specified',
        ),
        (
            slice_spec(devices=[{"name": "gpu-0", "attributes": {"v": {"version": "one"}}}]),
            'spec.devices[0].attributes[v].version: Invalid value: "one": must be a string '
            "compatible with semver.org spec 2.0.0",
        ),
    ],
)
def test_slice_spec_errors(spec: dict[str, Any], expected: str) -> None:
    assert expected in messages(validate_resource_slice_spec(spec, None, SPEC))


def test_slice_identity_is_immutable_and_limits_hold() -> None:
    old = slice_spec()
    new = slice_spec(driver="other.example.com", nodeName="node-2")
    found = messages(validate_resource_slice_spec(new, old, SPEC))
    assert 'spec.driver: Invalid value: "other.example.com": field is immutable' in found
    assert 'spec.nodeName: Invalid value: "node-2": field is immutable' in found
    many = slice_spec(devices=[{"name": f"d{i}"} for i in range(129)])
    assert messages(validate_resource_slice_spec(many, None, SPEC))[-1] == (
        "spec.devices: Too many: 129: must have at most 128 items"
    )
    both = {"a": {"int": 1, "bool": True}}
    assert any(
        "exactly one value must be specified" in m
        for m in messages(
            validate_resource_slice_spec(
                slice_spec(devices=[{"name": "gpu-0", "attributes": both}]), None, SPEC
            )
        )
    )
    long_name = "x" * 70
    assert any(
        m == "spec.devices[0].capacity: Too long: must have at most 32 bytes"
        for m in messages(
            validate_resource_slice_spec(
                slice_spec(devices=[{"name": "gpu-0", "capacity": {long_name: "1"}}]), None, SPEC
            )
        )
    )


def test_tolerations_are_not_counted() -> None:
    """1.35's validateExactDeviceRequest and validateDeviceSubRequest check each toleration
    but not how many there are."""
    many = [{"key": f"k{i}", "operator": "Exists"} for i in range(40)]
    mode = {"allocationMode": "ExactCount", "count": 1}
    sub = {"name": "s", "deviceClassName": "c", "tolerations": many, **mode}
    spec = {
        "devices": {
            "requests": [
                exactly(deviceClassName="c", tolerations=many, **mode)["devices"]["requests"][0],
                {"name": "r1", "firstAvailable": [sub]},
            ]
        }
    }
    assert messages(validate_claim_spec(spec, SPEC)) == []
