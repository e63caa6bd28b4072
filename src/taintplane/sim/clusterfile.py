"""``taintplane up --cluster FILE``: node pools described in YAML.

    pools:
    - name: gpu                 # nodes gpu-1, gpu-2, ...
      count: 4
      zones: [zone-a, zone-b]   # spread round-robin (or `zone: zone-a`)
      region: eu-west
      labels: {accelerator: a100}
      taints: ["dedicated=ml:NoSchedule"]     # kubectl taint syntax, or {key, value, effect}
      capacity: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "8"}
      devices:                  # DRA devices, one ResourceSlice per node and driver (optional)
      - {driver: gpu.example.com, count: 8, name: gpu,
         attributes: {model: a100, memoryGB: 80}, capacity: {memory: 80Gi}}

``--nodes N`` is the same as one pool ``{name: node, count: N}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from taintplane.agents.nodes import DeviceSet, NodeShape
from taintplane.api.dra_validation import is_dns1123_label, validate_driver_name
from taintplane.api.field import FieldError
from taintplane.api.field import Path as FieldPath
from taintplane.api.names import is_dns1123_subdomain
from taintplane.api.quantity import QuantityError, parse_quantity
from taintplane.api.taint_spec import TaintSpecError, parse_taint
from taintplane.api.taints import Taint
from taintplane.api.validation import validate_labels, validate_node_taints

__all__ = ["ClusterFileError", "default_nodes", "load_cluster_file", "parse_pools"]

_POOL_KEYS = {
    "name",
    "count",
    "zone",
    "zones",
    "region",
    "labels",
    "taints",
    "capacity",
    "devices",
}
_DEVICE_KEYS = {"driver", "count", "name", "attributes", "capacity"}
#: Devices per slice stay within what a slice may hold once a device is tainted.
MAX_DEVICES = 64


class ClusterFileError(ValueError):
    pass


def default_nodes(count: int) -> list[NodeShape]:
    return [NodeShape(f"node-{i}") for i in range(1, count + 1)]


def _taint(item: Any, where: str) -> Taint:
    if isinstance(item, str):
        try:
            return parse_taint(item)
        except TaintSpecError as error:
            raise ClusterFileError(f"{where}: {error}") from error
    if isinstance(item, dict):
        return Taint(
            key=str(item.get("key", "")),
            value=str(item.get("value", "")),
            effect=str(item.get("effect", "")),
        )
    raise ClusterFileError(f"{where}: a taint is KEY[=VALUE]:EFFECT or {{key, value, effect}}")


def _taints(value: Any, index: int) -> list[dict[str, Any]]:
    where = f"pools[{index}].taints"
    if value is None:
        return []
    if not isinstance(value, list):
        raise ClusterFileError(f"{where} must be a list")
    taints = [_taint(item, f"{where}[{i}]") for i, item in enumerate(value)]
    # As a whole, so two taints with one key and effect are refused as the API server would.
    errors = validate_node_taints(taints, FieldPath.root("pools").index(index).child("taints"))
    if errors:
        raise ClusterFileError(str(errors[0]))
    return [taint.to_dict() for taint in taints]


def _strings(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ClusterFileError(f"{where} must be a mapping")
    return {str(k): str(v) for k, v in value.items()}


def _labels(value: Any, index: int) -> dict[str, str]:
    labels = _strings(value, f"pools[{index}].labels")
    # Refused here, as the API server would refuse the nodes (ValidateLabels), not at start-up.
    errors = validate_labels(labels, FieldPath.root("pools").index(index).child("labels"))
    if errors:
        raise ClusterFileError(str(errors[0]))
    return labels


def _capacity(value: Any, where: str, path: FieldPath) -> dict[str, str]:
    capacity = _strings(value, where)
    for name, quantity in capacity.items():
        try:
            parse_quantity(quantity)
        except QuantityError as error:
            # resource.ParseQuantity's words: decoding such a node fails with them.
            invalid = FieldError.invalid(path.key(name), quantity, str(error))
            raise ClusterFileError(str(invalid)) from error
    return capacity


def _device_set(item: Any, where: str, path: FieldPath) -> DeviceSet:
    if not isinstance(item, dict):
        raise ClusterFileError(f"{where} must be a mapping")
    unknown = sorted(set(item) - _DEVICE_KEYS)
    if unknown:
        raise ClusterFileError(
            f"{where}: unknown field(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(_DEVICE_KEYS))}"
        )
    driver = item.get("driver")
    problems = validate_driver_name(driver, FieldPath.root("driver")) if driver else []
    if not isinstance(driver, str) or not driver or problems:
        detail = f": {problems[0].body}" if problems else ""
        raise ClusterFileError(f"{where}.driver must be a driver name like gpu.example.com{detail}")
    count = item.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= MAX_DEVICES:
        raise ClusterFileError(f"{where}.count must be a whole number from 0 to {MAX_DEVICES}")
    name = item.get("name", driver.split(".")[0])
    if not isinstance(name, str) or is_dns1123_label(f"{name}-{max(count - 1, 0)}"):
        raise ClusterFileError(f"{where}.name must make DNS labels as device names (gpu-0, ...)")
    attributes = item.get("attributes") or {}
    if not isinstance(attributes, dict) or not all(
        isinstance(v, bool | int | str) for v in attributes.values()
    ):
        raise ClusterFileError(f"{where}.attributes must map names to booleans, numbers or text")
    return DeviceSet(
        driver=driver,
        count=count,
        name=name,
        attributes={str(k): v for k, v in attributes.items()},
        capacity=_capacity(item.get("capacity"), f"{where}.capacity", path.child("capacity")),
    )


def _device_sets(value: Any, index: int) -> list[DeviceSet]:
    where = f"pools[{index}].devices"
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    path = FieldPath.root("pools").index(index).child("devices")
    sets = [_device_set(item, f"{where}[{i}]", path.index(i)) for i, item in enumerate(items)]
    drivers = [s.driver for s in sets]
    if len(set(drivers)) != len(drivers):
        raise ClusterFileError(f"{where}: one entry per driver")
    return sets


def parse_pools(data: Any) -> list[NodeShape]:
    if not isinstance(data, dict) or not isinstance(data.get("pools"), list) or not data["pools"]:
        raise ClusterFileError("the cluster file must have a non-empty list `pools`")
    shapes: list[NodeShape] = []
    seen: set[str] = set()
    for index, pool in enumerate(data["pools"]):
        where = f"pools[{index}]"
        if not isinstance(pool, dict):
            raise ClusterFileError(f"{where} must be a mapping")
        unknown = sorted(set(pool) - _POOL_KEYS)
        if unknown:
            raise ClusterFileError(
                f"{where}: unknown field(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(_POOL_KEYS))}"
            )
        name = pool.get("name")
        if not isinstance(name, str) or not name:
            raise ClusterFileError(f"{where}.name is required")
        if name in seen:
            raise ClusterFileError(f"{where}.name {name!r} is used by another pool")
        seen.add(name)
        count = pool.get("count", 1)
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise ClusterFileError(f"{where}.count must be a whole number, 0 or more")
        zones = pool.get("zones") or ([pool["zone"]] if pool.get("zone") else [""])
        if not isinstance(zones, list):
            raise ClusterFileError(f"{where}.zones must be a list")
        problems = is_dns1123_subdomain(f"{name}-{count}") if count else []
        if problems:
            raise ClusterFileError(f"{where}.name {name!r} makes invalid node names: {problems[0]}")
        taints = _taints(pool.get("taints"), index)
        labels = _labels(pool.get("labels"), index)
        capacity = _capacity(
            pool.get("capacity"),
            f"{where}.capacity",
            FieldPath.root("pools").index(index).child("capacity"),
        )
        devices = _device_sets(pool.get("devices"), index)
        for i in range(1, count + 1):
            shapes.append(
                NodeShape(
                    name=f"{name}-{i}",
                    labels=dict(labels),
                    capacity={"cpu": "4", "memory": "16Gi", "pods": "110", **capacity},
                    taints=[dict(t) for t in taints],
                    zone=str(zones[(i - 1) % len(zones)]),
                    region=str(pool.get("region") or ""),
                    devices=list(devices),
                )
            )
    return shapes


def load_cluster_file(path: Path) -> list[NodeShape]:
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as error:
        raise ClusterFileError(f"cannot read {path}: {error.strerror}") from error
    except yaml.YAMLError as error:
        raise ClusterFileError(f"{path} is not valid YAML: {error}") from error
    try:
        return parse_pools(data)
    except ClusterFileError as error:
        raise ClusterFileError(f"{path}: {error}") from error
