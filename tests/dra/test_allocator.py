"""The structured allocator: modes, CEL selectors, allocated devices, device taints and rules."""

from __future__ import annotations

from typing import Any

import pytest

from taintplane.dra.allocator import AllocationError, Allocator
from taintplane.dra.cel import CelCache
from taintplane.dra.devices import gather_pools, rule_taints

DRIVER = "gpu.example.com"


def device(
    name: str, *, taints: list[dict[str, Any]] | None = None, **attrs: Any
) -> dict[str, Any]:
    attributes = {"model": {"string": attrs.pop("model", "a100")}, "index": {"int": int(name[-1])}}
    out: dict[str, Any] = {
        "name": name,
        "attributes": attributes,
        "capacity": {"memory": {"value": attrs.pop("memory", "80Gi")}},
    }
    if taints:
        out["taints"] = taints
    return out


def slice_(node: str, devices: list[dict[str, Any]], **pool: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1, **pool},
            "devices": devices,
        },
    }


def gpus(node: str = "n1", count: int = 4, **kw: Any) -> dict[str, Any]:
    return slice_(node, [device(f"gpu-{i}", **kw) for i in range(count)])


CLASSES: dict[str, Any] = {
    "gpu": {
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    },
    "other": {
        "metadata": {"name": "other"},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "other.example.com"'}}]},
    },
}


def claim(*requests: dict[str, Any], name: str = "c") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": list(requests)}},
    }


def req(name: str = "gpu", cls: str = "gpu", **exactly: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"deviceClassName": cls, "allocationMode": "ExactCount", "count": 1}
    spec.update(exactly)
    return {"name": name, "exactly": spec}


def sel(expression: str) -> list[dict[str, Any]]:
    return [{"cel": {"expression": expression}}]


def allocate(claims, slices, *, allocated=(), rules=(), node="n1"):
    allocator = Allocator(claims, set(allocated), CLASSES, slices, rule_taints(rules), CelCache())
    return allocator.allocate(node, {})


def picked(result: list[dict[str, Any]] | None, index: int = 0) -> list[str]:
    assert result is not None
    return [r["device"] for r in result[index]["devices"]["results"]]


def test_exact_count_takes_the_first_free_devices_and_pins_the_node():
    result = allocate([claim(req(count=2))], [gpus()])
    assert result == [
        {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"},
                    {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-1"},
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                ]
            },
        }
    ]


def test_devices_allocated_to_other_claims_are_skipped_and_too_few_fail():
    allocated = {(DRIVER, "n1", "gpu-0"), (DRIVER, "n1", "gpu-2")}
    assert picked(allocate([claim(req(count=2))], [gpus()], allocated=allocated)) == [
        "gpu-1",
        "gpu-3",
    ]
    assert allocate([claim(req(count=3))], [gpus()], allocated=allocated) is None


def test_other_nodes_slices_are_not_used():
    assert allocate([claim(req())], [gpus("n2")]) is None


def test_two_claims_of_one_pod_get_different_devices():
    result = allocate([claim(req(), name="a"), claim(req(), name="b")], [gpus(count=2)])
    assert picked(result, 0) == ["gpu-0"]
    assert picked(result, 1) == ["gpu-1"]


def test_all_mode_takes_every_selected_device_and_needs_them_all_free():
    result = allocate([claim(req(allocationMode="All", count=None))], [gpus(count=3)])
    assert picked(result) == ["gpu-0", "gpu-1", "gpu-2"]
    busy = {(DRIVER, "n1", "gpu-1")}
    assert allocate([claim(req(allocationMode="All"))], [gpus(count=3)], allocated=busy) is None
    # At least one device is needed.
    assert allocate([claim(req(allocationMode="All", cls="other"))], [gpus()]) is None


def test_all_mode_on_an_incomplete_pool_is_an_error():
    incomplete = slice_("n1", [device("gpu-0")], resourceSliceCount=2)
    with pytest.raises(AllocationError) as error:
        allocate([claim(req(allocationMode="All"))], [incomplete])
    assert str(error.value) == (
        "claim default/c, request gpu: asks for all devices, but resource pool "
        "gpu.example.com/n1 is currently being updated"
    )
    # ExactCount does not take devices from it either.
    assert allocate([claim(req())], [incomplete]) is None


def test_cel_selectors_on_attributes_and_capacity():
    slices = [
        slice_(
            "n1",
            [
                device("gpu-0", model="t4", memory="16Gi"),
                device("gpu-1", model="a100", memory="40Gi"),
                device("gpu-2", model="a100", memory="80Gi"),
            ],
        )
    ]
    by_model = req(selectors=sel(f'device.attributes["{DRIVER}"].model == "a100"'))
    assert picked(allocate([claim(by_model)], slices)) == ["gpu-1"]
    by_memory = req(
        selectors=sel(f'device.capacity["{DRIVER}"].memory.compareTo(quantity("64Gi")) >= 0')
    )
    assert picked(allocate([claim(by_memory)], slices)) == ["gpu-2"]
    exact = req(selectors=sel(f'device.capacity["{DRIVER}"].memory == quantity("16384Mi")'))
    assert picked(allocate([claim(exact)], slices)) == ["gpu-0"]
    other_domain = req(selectors=sel('"model" in device.attributes["other.example.com"]'))
    assert allocate([claim(other_domain)], slices) is None


def test_backtracking_gives_the_narrow_request_its_only_device():
    wide = req("wide")
    narrow = req("narrow", selectors=sel(f'device.attributes["{DRIVER}"].index == 0'))
    result = allocate([claim(wide, narrow)], [gpus(count=2)])
    assert [(r["request"], r["device"]) for r in result[0]["devices"]["results"]] == [
        ("wide", "gpu-1"),
        ("narrow", "gpu-0"),
    ]


def test_first_available_takes_the_first_subrequest_that_fits():
    request = {
        "name": "gpu",
        "firstAvailable": [
            {"name": "big", "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 8},
            {"name": "small", "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 2},
        ],
    }
    result = allocate([claim(request)], [gpus()])
    assert [r["request"] for r in result[0]["devices"]["results"]] == ["gpu/small", "gpu/small"]


def test_cel_runtime_and_compile_errors_and_missing_class_are_errors():
    with pytest.raises(AllocationError) as error:
        allocate([claim(req(selectors=sel(f'device.attributes["{DRIVER}"].nope == 1')))], [gpus()])
    assert str(error.value) == (
        "claim default/c: selector #0 on device gpu.example.com/n1/gpu-0: CEL runtime error: "
        "no such key: nope. Consider using CEL optional chaining (?), has() macro, or "
        "orValue() for optional fields"
    )
    with pytest.raises(
        AllocationError,
        match=r"^claim default/c: selector #0: CEL compile error: compilation failed",
    ):
        allocate([claim(req(selectors=sel("device.driver ==")))], [gpus()])
    with pytest.raises(AllocationError) as error:
        allocate([claim(req(cls="missing"))], [gpus()])
    assert str(error.value) == (
        "claim default/c, request gpu: could not retrieve device class missing: "
        'deviceclass.resource.k8s.io "missing" not found'
    )


def taint(effect: str, key: str = "example.com/overheating", value: str = "true") -> dict[str, Any]:
    return {"key": key, "value": value, "effect": effect}


@pytest.mark.parametrize(
    ("effect", "tolerations", "allocatable"),
    [
        ("NoSchedule", [], False),
        ("NoExecute", [], False),
        ("None", [], True),
        ("SomethingNew", [], True),  # unknown effects count as None
        ("NoSchedule", [{"key": "example.com/overheating", "operator": "Exists"}], True),
        ("NoSchedule", [{"operator": "Exists", "effect": "NoSchedule"}], True),
        ("NoSchedule", [{"operator": "Exists", "effect": "NoExecute"}], False),
        ("NoExecute", [{"operator": "Exists", "effect": "NoExecute"}], True),
        ("NoSchedule", [{"key": "example.com/overheating", "value": "false"}], False),
        ("NoSchedule", [{"key": "example.com/overheating", "value": "true"}], True),
    ],
)
def test_slice_taints_block_unless_tolerated(effect, tolerations, allocatable):
    slices = [slice_("n1", [device("gpu-0", taints=[taint(effect)])])]
    result = allocate([claim(req(tolerations=tolerations))], slices)
    assert (result is not None) is allocatable


def test_a_tolerated_taint_is_copied_to_the_result_and_untainted_devices_come_first_only_by_order():
    slices = [slice_("n1", [device("gpu-0", taints=[taint("NoSchedule")]), device("gpu-1")])]
    assert picked(allocate([claim(req())], slices)) == ["gpu-1"]
    tolerating = req(tolerations=[{"operator": "Exists"}])
    result = allocate([claim(tolerating)], slices)
    assert result[0]["devices"]["results"][0] == {
        "request": "gpu",
        "driver": DRIVER,
        "pool": "n1",
        "device": "gpu-0",
        "tolerations": [{"operator": "Exists"}],
    }


def test_both_effects_of_one_key_need_both_tolerations():
    slices = [slice_("n1", [device("gpu-0", taints=[taint("NoSchedule"), taint("NoExecute")])])]
    only_execute = req(tolerations=[{"operator": "Exists", "effect": "NoExecute"}])
    assert allocate([claim(only_execute)], slices) is None
    both = req(tolerations=[{"operator": "Exists"}])
    assert allocate([claim(both)], slices) is not None


def rule(selector: dict[str, Any] | None, effect: str = "NoSchedule") -> dict[str, Any]:
    spec: dict[str, Any] = {"taint": taint(effect, key="example.com/maintenance")}
    if selector is not None:
        spec["deviceSelector"] = selector
    return {"metadata": {"name": "r"}, "spec": spec}


@pytest.mark.parametrize(
    ("selector", "blocked"),
    [
        ({}, ["gpu-0", "gpu-1"]),  # the empty selector: every device
        (None, []),  # no selector: no device
        ({"driver": DRIVER}, ["gpu-0", "gpu-1"]),
        ({"driver": "other.example.com"}, []),
        ({"pool": "n1"}, ["gpu-0", "gpu-1"]),
        ({"pool": "n2"}, []),
        ({"device": "gpu-1"}, ["gpu-1"]),
        ({"driver": DRIVER, "pool": "n1", "device": "gpu-0"}, ["gpu-0"]),
    ],
)
def test_device_taint_rules_select_by_driver_pool_and_device(selector, blocked):
    slices = [gpus(count=2)]
    free = [d for d in ("gpu-0", "gpu-1") if d not in blocked]
    result = allocate([claim(req(allocationMode="All"))], slices, rules=[rule(selector)])
    assert (result is not None) is (not blocked)
    if free:
        assert picked(allocate([claim(req())], slices, rules=[rule(selector)])) == free[:1]
    else:
        assert allocate([claim(req())], slices, rules=[rule(selector)]) is None


def test_a_rule_with_effect_none_never_blocks():
    assert allocate([claim(req(count=2))], [gpus(count=2)], rules=[rule({}, "None")]) is not None


def test_rule_taints_are_added_to_the_slice_taints():
    pools = gather_pools(
        [slice_("n1", [device("gpu-0", taints=[taint("None")])])],
        "n1",
        {},
        rule_taints([rule({"device": "gpu-0"}, "NoExecute")]),
    )
    assert [t.to_string() for t in pools[0].devices[0].taints] == [
        "example.com/overheating=true:None",
        "example.com/maintenance=true:NoExecute",
    ]


def test_too_many_devices_in_one_claim_is_an_error():
    with pytest.raises(
        AllocationError, match="number of requested devices 33 exceeds the claim limit of 32"
    ):
        allocate([claim(req(count=33))], [gpus()])


def test_slices_for_all_nodes_or_by_selector_and_class_config():
    shared: dict[str, Any] = {
        "metadata": {"name": "net"},
        "spec": {
            "driver": DRIVER,
            "allNodes": True,
            "pool": {"name": "net", "generation": 1, "resourceSliceCount": 1},
            "devices": [device("nic-0")],
        },
    }
    result = allocate([claim(req())], [shared], node="anywhere")
    assert picked(result) == ["nic-0"]
    assert "nodeSelector" not in result[0]
    labelled: dict[str, Any] = {
        **shared,
        "spec": {
            **shared["spec"],
            "allNodes": None,
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}
                ]
            },
        },
    }
    allocator = Allocator([claim(req())], set(), CLASSES, [labelled])
    assert allocator.allocate("n1", {"rack": "r2"}) is None
    result = allocator.allocate("n1", {"rack": "r1"})
    assert result is not None
    assert result[0]["nodeSelector"] == labelled["spec"]["nodeSelector"]
    configured: dict[str, Any] = {
        **CLASSES,
        "gpu": {
            **CLASSES["gpu"],
            "spec": {
                **CLASSES["gpu"]["spec"],
                "config": [{"opaque": {"driver": DRIVER, "parameters": {"a": 1}}}],
            },
        },
    }
    result = Allocator([claim(req())], set(), configured, [gpus()]).allocate("n1", {})
    assert result is not None
    assert result[0]["devices"]["config"] == [
        {
            "source": "FromClass",
            "requests": ["gpu"],
            "opaque": {"driver": DRIVER, "parameters": {"a": 1}},
        }
    ]
