"""Claim constraints of the structured allocator (``matchAttributeConstraint``).

A ``matchAttribute`` constraint covers the requests it names (a subrequest ``req/sub`` is
covered by ``req`` or by ``req/sub``), or every request when it names none. The first covered
device may join when it has the attribute at all; each later one only with a value of the same
type and the same value. The search adds a device before going deeper and removes it when it
backtracks, so only the count of devices in the set needs keeping: the first value stays
right for as long as any device is in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taintplane.dra.devices import Device

__all__ = ["MatchAttribute", "lookup_attribute"]

#: The order in which upstream's switch looks at a DeviceAttribute's value fields.
_VALUE_TYPES = ("string", "int", "bool", "version")


def lookup_attribute(device: Device, name: str) -> Mapping[str, Any] | None:
    """``lookupAttribute``: the fully qualified name, or its bare identifier when the domain
    is the device's driver (a driver's attributes may leave their domain out)."""
    attributes = device.spec.get("attributes") or {}
    found = attributes.get(name)
    if isinstance(found, Mapping):
        return found
    domain, slash, ident = name.partition("/")
    if not slash or domain != device.id[0]:
        return None
    found = attributes.get(ident)
    return found if isinstance(found, Mapping) else None


def _same_value(first: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    for value_type in _VALUE_TYPES:
        value = other.get(value_type)
        if value is not None:
            expected = first.get(value_type)
            return expected is not None and type(expected) is type(value) and expected == value
    # A value of a type this version does not know cannot match.
    return False


class MatchAttribute:
    def __init__(self, request_names: list[str], attribute: str) -> None:
        self.request_names = set(request_names)
        self.attribute = attribute
        self.first: Mapping[str, Any] | None = None
        self.count = 0

    def covers(self, request: str, subrequest: str) -> bool:
        if not self.request_names:
            return True
        if request in self.request_names:
            return True
        return bool(subrequest) and f"{request}/{subrequest}" in self.request_names

    def add(self, request: str, subrequest: str, device: Device) -> bool:
        if not self.covers(request, subrequest):
            return True
        attribute = lookup_attribute(device, self.attribute)
        if attribute is None:
            return False
        if self.count == 0:
            self.first = attribute
        elif self.first is None or not _same_value(self.first, attribute):
            return False
        self.count += 1
        return True

    def remove(self, request: str, subrequest: str) -> None:
        if self.covers(request, subrequest):
            self.count -= 1
