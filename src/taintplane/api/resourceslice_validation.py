"""Validation of a ResourceSlice's spec (``validateResourceSliceSpec``, Kubernetes v1.35).

A slice belongs to a driver and a pool, is reachable from exactly one of ``nodeName``,
``nodeSelector``, ``allNodes`` or ``perDeviceNodeSelection``, and lists at most 128 devices —
64 as soon as any device has taints (or consumes counters), since taints make devices larger.
A device has at most 16 taints; its taints are checked only when they changed, so a taint
stored with an effect this server does not know stays as it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from taintplane.api import names
from taintplane.api.device_taints import parse_device_taints
from taintplane.api.dra_validation import (
    DEVICE_TAINTS_MAX,
    GoList,
    as_dict,
    as_list,
    c_identifier_errors,
    too_many,
    validate_device_name,
    validate_device_taint,
    validate_driver_name,
    validate_pool_name,
)
from taintplane.api.field import ErrorType, FieldError, Path
from taintplane.api.gofmt import GoStruct

__all__ = [
    "SLICE_MAX_DEVICES",
    "SLICE_MAX_DEVICES_WITH_TAINTS",
    "validate_resource_slice_spec",
]

SLICE_MAX_DEVICES = 128
#: ``ResourceSliceMaxDevicesWithAdvancedFeatures``: taints or counter consumption.
SLICE_MAX_DEVICES_WITH_TAINTS = 64
MAX_ATTRIBUTES_AND_CAPACITIES = 32
DEVICE_MAX_DOMAIN_LENGTH = 63
ATTRIBUTE_MAX_VALUE_LENGTH = 64
_SELECTION = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection`"
_SEMVER_RE = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?"
    r"(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?",
    re.ASCII,
)
_ATTRIBUTE_KINDS = ("bool", "int", "string", "version", "bools", "ints", "strings", "versions")


def _immutable(path: Path, new: object, old: object) -> list[FieldError]:
    if new == old:
        return []
    return [FieldError.invalid(path, new, "field is immutable")]


def validate_resource_slice_spec(
    spec: Mapping[str, Any], old: Mapping[str, Any] | None, path: Path
) -> list[FieldError]:
    driver = spec.get("driver") if isinstance(spec.get("driver"), str) else ""
    pool = as_dict(spec.get("pool"))
    errors = validate_driver_name(str(driver), path.child("driver"))
    errors += _pool(pool, path.child("pool"))
    if old is not None:
        errors += _immutable(
            path.child("pool", "name"), pool.get("name", ""), as_dict(old.get("pool")).get("name")
        )
        errors += _immutable(path.child("driver"), driver, old.get("driver"))
        errors += _immutable(path.child("nodeName"), spec.get("nodeName"), old.get("nodeName"))
    errors += _node_selection(spec, path)
    devices = as_list(spec.get("devices"))
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        detail = "only one of `sharedCounters` or `devices` is allowed"
        errors.append(FieldError.invalid(path, "", detail))
    tainted = any(as_dict(d).get("taints") or as_dict(d).get("consumesCounters") for d in devices)
    maximum = SLICE_MAX_DEVICES_WITH_TAINTS if tainted else SLICE_MAX_DEVICES
    at = path.child("devices")
    if len(devices) > maximum:
        return [*errors, too_many(at, len(devices), maximum)]
    old_devices = {as_dict(d).get("name"): as_dict(d) for d in as_list((old or {}).get("devices"))}
    seen: set[str] = set()
    for i, device in enumerate(devices):
        device = as_dict(device)
        name = device.get("name") if isinstance(device.get("name"), str) else ""
        errors += _device(device, old_devices.get(name), at.index(i))
        if name in seen:
            errors.append(FieldError.duplicate(at.index(i), name))
        seen.add(str(name))
    return errors


def _pool(pool: Mapping[str, Any], path: Path) -> list[FieldError]:
    name = pool.get("name") if isinstance(pool.get("name"), str) else ""
    errors = validate_pool_name(str(name), path.child("name"))
    count = pool.get("resourceSliceCount")
    count = count if isinstance(count, int) else 0
    if count <= 0:
        detail = "must be greater than zero"
        errors.append(FieldError.invalid(path.child("resourceSliceCount"), count, detail))
    generation = pool.get("generation")
    if isinstance(generation, int) and generation < 0:
        detail = "must be greater than or equal to zero"
        errors.append(FieldError.invalid(path.child("generation"), generation, detail))
    return errors


def _node_selection(spec: Mapping[str, Any], path: Path) -> list[FieldError]:
    errors: list[FieldError] = []
    chosen: list[str] = []
    node_name = spec.get("nodeName")
    if isinstance(node_name, str):
        if node_name:
            chosen.append("`nodeName`")
            errors += [
                FieldError.invalid(path.child("nodeName"), node_name, m)
                for m in names.is_dns1123_subdomain(node_name)
            ]
        else:
            detail = "must be either unset or set to a non-empty string"
            errors.append(FieldError.invalid(path.child("nodeName"), node_name, detail))
    selector = spec.get("nodeSelector")
    if isinstance(selector, dict):
        chosen.append("`nodeSelector`")
        terms = as_list(selector.get("nodeSelectorTerms"))
        if len(terms) != 1:
            errors.append(
                FieldError.invalid(
                    path.child("nodeSelector", "nodeSelectorTerms"),
                    GoList((), terms),
                    "must have exactly one node selector term",
                )
            )
    for flag in ("allNodes", "perDeviceNodeSelection"):
        value = spec.get(flag)
        if value is True:
            chosen.append(f"`{flag}`")
        elif value is False:
            detail = "must be either unset or set to true"
            errors.append(FieldError.invalid(path.child(flag), False, detail))
    if not chosen:
        errors.append(FieldError.required(path, f"{_SELECTION} is required"))
    elif len(chosen) > 1:
        value = "{" + ", ".join(chosen) + "}"
        detail = f"{_SELECTION} is required, but multiple fields are set"
        errors.append(FieldError.invalid(path, value, detail))
    return errors


def _device(
    device: Mapping[str, Any], old: Mapping[str, Any] | None, path: Path
) -> list[FieldError]:
    name = device.get("name") if isinstance(device.get("name"), str) else ""
    errors = validate_device_name(str(name), path.child("name"))
    attributes = as_dict(device.get("attributes"))
    capacity = as_dict(device.get("capacity"))
    total = len(attributes) + len(capacity)
    if total > MAX_ATTRIBUTES_AND_CAPACITIES:
        detail = (
            "the total number of attributes and capacities must not exceed "
            f"{MAX_ATTRIBUTES_AND_CAPACITIES}"
        )
        errors.append(FieldError.invalid(path, total, detail))
    for key in sorted(attributes):
        errors += _qualified_name(key, path.child("attributes"))
        errors += _attribute(as_dict(attributes[key]), path.child("attributes").key(key))
    for key in sorted(capacity):
        errors += _qualified_name(key, path.child("capacity"))
    if old is None or old.get("taints") != device.get("taints"):
        at = path.child("taints")
        taints = parse_device_taints(device.get("taints"), at)
        if len(taints) > DEVICE_TAINTS_MAX:
            return [*errors, too_many(at, len(taints), DEVICE_TAINTS_MAX)]
        for i, taint in enumerate(taints):
            errors += validate_device_taint(taint, None, at.index(i))
    return errors


def _qualified_name(key: str, path: Path) -> list[FieldError]:
    parts = key.split("/")
    if len(parts) == 1:
        return c_identifier_errors(key, path)
    if len(parts) > 2:
        return [FieldError.invalid(path, key, "must not contain more than one slash")]
    errors: list[FieldError] = []
    if not parts[0]:
        errors.append(FieldError.invalid(path, "", "the domain must not be empty"))
    else:
        errors += validate_driver_name(parts[0], path)
    if not parts[1]:
        errors.append(FieldError.invalid(path, "", "the name must not be empty"))
    else:
        errors += c_identifier_errors(parts[1], path)
    return errors


def _attribute(attribute: Mapping[str, Any], path: Path) -> list[FieldError]:
    errors: list[FieldError] = []
    present = [kind for kind in _ATTRIBUTE_KINDS if attribute.get(kind) is not None]
    for kind in ("string", "version"):
        value = attribute.get(kind)
        if isinstance(value, str):
            errors += _string_value(value, kind, path.child(kind))
    if not present:
        errors.append(FieldError.invalid(path, "", "exactly one value must be specified"))
    elif len(present) > 1:
        value = GoStruct(tuple((k, attribute.get(k)) for k in present))
        errors.append(FieldError.invalid(path, value, "exactly one value must be specified"))
    return errors


def _string_value(value: str, kind: str, path: Path) -> list[FieldError]:
    errors: list[FieldError] = []
    if kind == "version" and not _SEMVER_RE.fullmatch(value):
        detail = "must be a string compatible with semver.org spec 2.0.0"
        errors.append(FieldError.invalid(path, value, detail))
    if len(value.encode()) > ATTRIBUTE_MAX_VALUE_LENGTH:
        detail = f"must have at most {ATTRIBUTE_MAX_VALUE_LENGTH} bytes"
        errors.append(FieldError(ErrorType.TOO_LONG, str(path), "", detail))
    return errors
