"""Which device taints keep a claim's request from a node's devices (for explain)."""

from __future__ import annotations

from typing import Any

from taintplane.dra.devices import rule_taints
from taintplane.dra.taint_report import blocked_requests, toleration_for

DRIVER = "gpu.example.com"


def slice_of(node: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"name": f"{node}-slice"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


CLASSES: dict[str, Any] = {
    "big": {
        "spec": {
            "selectors": [
                {"cel": {"expression": 'device.attributes["gpu.example.com"].?size.orValue(0) > 1'}}
            ]
        }
    },
    "any": {"spec": {}},
}


def test_first_available_subrequests_taken_devices_and_rule_taints() -> None:
    devices: list[dict[str, Any]] = [
        {
            "name": "d0",
            "attributes": {"size": {"int": 2}},
            "taints": [{"key": "ecc", "effect": "NoSchedule"}],
        },
        {"name": "d1", "attributes": {"size": {"int": 2}}},
        {"name": "d2", "attributes": {"size": {"int": 1}}},
        {
            "name": "d3",
            "attributes": {"size": {"int": 1}},
            "taints": [{"key": "info", "effect": "None"}],
        },
    ]
    rules = rule_taints(
        [
            {
                "metadata": {"name": "hot"},
                "spec": {
                    "deviceSelector": {"driver": DRIVER, "device": "d1"},
                    "taint": {"key": "hot", "value": "yes", "effect": "NoExecute"},
                },
            }
        ]
    )
    claim = {
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "firstAvailable": [
                            {"name": "large", "deviceClassName": "big"},
                            {
                                "name": "small",
                                "deviceClassName": "any",
                                "tolerations": [{"key": "ecc", "operator": "Exists"}],
                            },
                        ],
                    }
                ]
            }
        },
    }
    taken = {(DRIVER, "node", "d2")}
    found = blocked_requests(
        [claim], taken, CLASSES, [slice_of("node", devices)], rules, "node", {}
    )
    large, small = found
    assert (large.claim, large.request, large.candidates, large.usable) == (
        "ns/c",
        "gpu/large",
        2,
        0,
    )
    assert [(t.device[2], t.taint.to_string(), t.source) for t in large.taints] == [
        ("d0", "ecc:NoSchedule", "ResourceSlice node-slice"),
        ("d1", "hot=yes:NoExecute", "DeviceTaintRule hot"),
    ]
    # d2 is taken; d3's None taint never blocks; ecc is tolerated by this subrequest.
    assert (small.request, small.candidates, small.usable) == ("gpu/small", 3, 2)
    assert [t.device[2] for t in small.taints] == ["d1"]
    assert toleration_for(large.taints[1].taint) == {
        "key": "hot",
        "operator": "Equal",
        "value": "yes",
        "effect": "NoExecute",
    }
    assert toleration_for(large.taints[0].taint) == {
        "key": "ecc",
        "operator": "Exists",
        "effect": "NoSchedule",
    }
