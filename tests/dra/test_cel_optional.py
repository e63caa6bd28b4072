"""The optional selection syntax and cel.bind, which upstream's DRA CEL environment has and
the evaluator package lacks, in selectors the allocator evaluates."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taintplane.dra.allocator import AllocationError, Allocator
from taintplane.dra.cel import CelCache, CelError, device_variable

DEVICE = device_variable(
    {
        "name": "gpu-0",
        "attributes": {
            "model": {"string": "a100"},
            "memoryGB": {"int": 80},
            "pci.example.com/slot": {"string": "3"},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    },
    "gpu.example.com",
)
GPU = 'device.attributes["gpu.example.com"]'


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (f'{GPU}.?model.orValue("none") == "a100"', True),
        (f'{GPU}.?missing.orValue("none") == "none"', True),
        (f"{GPU}.?model.hasValue()", True),
        (f"{GPU}.?missing.hasValue()", False),
        (f'{GPU}[?"model"].value() == "a100"', True),
        (f'{GPU}[?"nope"].orValue(0) == 0', True),
        ('device.attributes["other.example.com"].?model.hasValue()', False),
        ('device.attributes[?"pci.example.com"].?slot.orValue("") == "3"', True),
        # Once optional, the rest of the chain is too: none, not "no such key".
        ('device.attributes[?"nope.example.com"].model.hasValue()', False),
        # A domain the device lacks is an empty map (upstream's map with a default).
        ('device.attributes[?"nope.example.com"].hasValue()', True),
        (f'{GPU}.?model.or(optional.of("x")).value() == "a100"', True),
        ("optional.none().orValue(1) == 1 && optional.of(2).value() == 2", True),
        (f'cel.bind(g, {GPU}, g.model == "a100" && g.memoryGB >= 40)', True),
        (f"cel.bind(g, {GPU}, cel.bind(m, g.memoryGB, m * 2 == 160))", True),
        (f'cel.bind(m, {GPU}.?model, m.orValue("") == "a100")', True),
        # A comprehension that binds the same name shadows the bind's.
        ("cel.bind(x, 5, [1, 2].exists(x, x == 2) && x == 5)", True),
        # The bind's name is free again outside the comprehension.
        ("cel.bind(x, 5, [1, 2].all(y, y < x))", True),
        (f'cel.bind(g, {GPU}, g.?model.orValue("") == "a100")', True),
    ],
)
def test_optional_syntax_and_bind_evaluate_as_upstream(expression: str, expected: bool) -> None:
    compiled = CelCache().get(expression)
    assert compiled.error == ""
    assert compiled.matches(DEVICE) is expected


def test_a_missing_attribute_without_the_optional_syntax_is_still_an_error() -> None:
    with pytest.raises(CelError, match="no such key: missing"):
        CelCache().get(f"{GPU}.missing == 1").matches(DEVICE)


def test_the_allocator_picks_devices_with_an_optional_selector() -> None:
    devices = [
        {"name": "gpu-0", "attributes": {"model": {"string": "a100"}}},
        {"name": "gpu-1", "attributes": {}},
    ]
    slices = [
        {
            "metadata": {"name": "s"},
            "spec": {
                "driver": "gpu.example.com",
                "nodeName": "node-1",
                "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        }
    ]
    selector = {"cel": {"expression": f'{GPU}.?model.orValue("") != "a100"'}}
    claim: dict[str, Any] = {
        "metadata": {"name": "c", "namespace": "default", "uid": "u"},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "r", "exactly": {"deviceClassName": "gpu", "selectors": [selector]}}
                ]
            }
        },
    }
    classes = {"gpu": {"metadata": {"name": "gpu"}, "spec": {}}}
    result = Allocator([claim], set(), classes, slices).allocate("node-1", {})
    assert result is not None
    assert [r["device"] for r in result[0]["devices"]["results"]] == ["gpu-1"]


@given(
    present=st.dictionaries(st.sampled_from(["a", "b", "c"]), st.integers(-5, 5), max_size=3),
    key=st.sampled_from(["a", "b", "c"]),
    default=st.integers(-5, 5),
)
def test_optional_lookup_is_a_lookup_with_a_default(
    present: dict[str, int], key: str, default: int
) -> None:
    device = device_variable(
        {"attributes": {k: {"int": v} for k, v in present.items()}}, "gpu.example.com"
    )
    wanted = present.get(key, default)
    for expression in (
        f"{GPU}.?{key}.orValue({default}) == {wanted}",
        f'{GPU}[?"{key}"].orValue({default}) == {wanted}',
        f"cel.bind(v, {GPU}.?{key}, v.orValue({default}) == {wanted})",
        f"{GPU}.?{key}.hasValue() == {'true' if key in present else 'false'}",
    ):
        assert CelCache().get(expression).matches(device), expression


TEN = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
#: Upstream's compile test "expensive": 85 555 551 by estimate, and as much when run.
EXPENSIVE = (
    f"{TEN}.all(x, {TEN}.all(y, {TEN}.all(z, {TEN}.all(z2, {TEN}.all(z3, {TEN}.all(z4, "
    f"{TEN}.all(z5, int('1'.find('[0-9]*')) < 100)))))))"
)


def test_a_selector_over_the_cost_limit_stops_as_upstreams_program_does() -> None:
    with pytest.raises(CelError, match=r"^operation cancelled: actual cost limit exceeded$"):
        CelCache().get(EXPENSIVE).matches(DEVICE)


def test_over_the_limit_by_estimate_but_not_on_this_device() -> None:
    """Four loops over a domain's attributes: too costly for the largest device allowed,
    cheap for one with three attributes, as upstream's actual cost would be."""
    loops = f"{GPU}.all(a, {GPU}.all(b, {GPU}.all(c, {GPU}.all(d, a != d || a == d))))"
    assert CelCache().get(loops).matches(DEVICE) is True


def test_the_allocator_reports_the_runtime_cost_error() -> None:
    slices = [
        {
            "metadata": {"name": "s"},
            "spec": {
                "driver": "gpu.example.com",
                "nodeName": "node-1",
                "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0"}],
            },
        }
    ]
    classes = {"gpu": {"spec": {"selectors": [{"cel": {"expression": EXPENSIVE}}]}}}
    claim = {
        "metadata": {"name": "c", "namespace": "default", "uid": "u"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
    }
    with pytest.raises(AllocationError) as raised:
        Allocator([claim], set(), classes, slices).allocate("node-1", {})
    assert str(raised.value) == (
        "class gpu: selector #0 on device gpu.example.com/p/gpu-0: CEL runtime error: "
        "operation cancelled: actual cost limit exceeded"
    )
