"""DRA selector CEL: the device variable, domains, quantities and versions, errors."""

from __future__ import annotations

import pytest

from taintplane.dra.cel import CelCache, CelError, device_variable

DEVICE = device_variable(
    {
        "name": "gpu-0",
        "attributes": {
            "model": {"string": "a100"},
            "memoryGB": {"int": 80},
            "mig": {"bool": False},
            "driverVersion": {"version": "1.2.3"},
            "pci.example.com/slot": {"string": "3"},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    },
    "gpu.example.com",
)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('device.driver == "gpu.example.com"', True),
        ('device.attributes["gpu.example.com"].model == "a100"', True),
        ('device.attributes["gpu.example.com"].memoryGB >= 40', True),
        ('!device.attributes["gpu.example.com"].mig', True),
        ('device.attributes["pci.example.com"].slot == "3"', True),
        ('"slot" in device.attributes["gpu.example.com"]', False),
        ('"model" in device.attributes["unknown.example.com"]', False),
        ('device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) > 0', True),
        ('device.capacity["gpu.example.com"].memory.isLessThan(quantity("81Gi"))', True),
        ('device.capacity["gpu.example.com"].memory == quantity("81920Mi")', True),
        ('device.capacity["gpu.example.com"].memory.asInteger() == 85899345920', True),
        ('quantity("1Gi").add(quantity("1Gi")) == quantity("2Gi")', True),
        ('isQuantity("1Gi") && !isQuantity("one")', True),
        (
            'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.2.3-rc.1"))',
            True,
        ),
        (
            'device.attributes["gpu.example.com"].driverVersion.compareTo(semver("1.10.0")) < 0',
            True,
        ),
        ('device.attributes["gpu.example.com"].driverVersion.major() == 1', True),
    ],
)
def test_expressions(expression, expected):
    assert CelCache().get(expression).matches(DEVICE) is expected


def test_errors_read_as_upstream():
    cache = CelCache()
    with pytest.raises(CelError) as error:
        cache.get('device.attributes["gpu.example.com"].nope == 1').matches(DEVICE)
    assert str(error.value) == (
        "no such key: nope. Consider using CEL optional chaining (?), has() macro, "
        "or orValue() for optional fields"
    )
    with pytest.raises(CelError) as error:
        cache.get("device.driver").matches(DEVICE)
    assert str(error.value) == "CEL result of type string could not be converted to bool"
    compiled = cache.get("device.driver ==")
    assert compiled.error.startswith("compilation failed: ")


def test_the_cache_keeps_the_most_recent_expressions():
    cache = CelCache(size=2)
    first = cache.get("true")
    cache.get("false")
    assert cache.get("true") is first
    cache.get("1 == 1")
    assert cache.get("false") is not None
    assert len(cache._entries) == 2
