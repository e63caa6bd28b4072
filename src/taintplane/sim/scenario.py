"""Scenario files for ``taintplane simulate``: a cluster, what runs on it, and what happens to
it, at offsets on a virtual clock.

    name: gpu maintenance                  # optional, shown in the report
    start: "2026-01-01T00:00:00Z"          # optional (this is the default)
    nodes: 3                               # node-1..node-3, or:
    cluster:                               # node pools, as `taintplane up --cluster` reads them
      pools: [{name: gpu, count: 4, zones: [a, b], taints: ["dedicated=ml:NoSchedule"]}]
    objects:                               # created at the start, in order (Lists allowed)
    - {apiVersion: apps/v1, kind: Deployment, metadata: {name: web}, spec: {…}}
    steps:                                 # each at an offset (Go duration), one action each
    - {at: 2m, taint: {nodes: [gpu-1], taints: ["maintenance=true:NoExecute"]}}
    - {at: 3m, taint: {selector: "pool=gpu", taints: ["maintenance-"]}}   # or all: true
    - {at: 5m, stop: {nodes: [gpu-2]}}                                  # or zone: a
    - {at: 9m, start: {zone: a}}
    - {at: 10m, condition: {node: gpu-3, type: MemoryPressure, status: "True"}}
    - {at: 12m, create: [{apiVersion: v1, kind: Pod, …}]}
    - {at: 13m, apply: [{apiVersion: resource.k8s.io/v1alpha3, kind: DeviceTaintRule, …}]}
    - {at: 14m, deviceHealth: {device: gpu.example.com/gpu-1/gpu-0, health: degraded}}
    until: 1h                              # default: 5m after the last step

``apply`` creates each object or, when it exists, sets its labels, annotations and spec to
the ones given (as ``kubectl apply`` of a whole manifest would): a DeviceTaintRule's effect
goes from None to NoSchedule to NoExecute that way. ``deviceHealth`` is ``taintplane device
health`` (healthy, degraded or failed, with an optional ``effect``): the simulated driver
republishes the device with its taint.

Errors name the place (``steps[2].taint.taints[0]: …``) and change nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from taintplane.agents.dra_driver import HEALTH_STATES
from taintplane.agents.nodes import NodeShape
from taintplane.api.duration import DurationError, parse_duration
from taintplane.api.selectors import LabelSelector, parse_label_selector
from taintplane.api.taint_spec import TaintChanges, TaintSpecError, parse_taint_changes
from taintplane.sim.clusterfile import ClusterFileError, default_nodes, parse_pools
from taintplane.sim.snapshot import SnapshotError, load_yaml_documents, objects_of

__all__ = [
    "ACTIONS",
    "DEFAULT_START",
    "Scenario",
    "ScenarioError",
    "Step",
    "load_scenario",
    "parse_scenario",
]

DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC)
#: Time simulated after the last step when the scenario does not say ``until``.
DEFAULT_TAIL_SECONDS = 300.0
ACTIONS = ("taint", "stop", "start", "condition", "create", "apply", "deviceHealth")
_TOP_KEYS = {"name", "start", "nodes", "cluster", "objects", "steps", "until"}
CONDITION_TYPES = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable")
CONDITION_STATUSES = ("True", "False", "Unknown")


class ScenarioError(ValueError):
    pass


@dataclass(frozen=True)
class Step:
    """One action at an offset: ``taint`` (nodes, selector or all; kubectl taint changes),
    ``stop``/``start`` (nodes or a zone), ``condition`` (node, type, status), ``create``,
    ``apply`` (objects), ``deviceHealth`` (``device`` DRIVER/POOL/DEVICE, ``health``)."""

    at: float
    action: str
    nodes: tuple[str, ...] = ()
    selector: LabelSelector | None = None
    all_nodes: bool = False
    zone: str = ""
    changes: TaintChanges = field(default_factory=TaintChanges)
    overwrite: bool = False
    condition: tuple[str, str] = ("", "")
    objects: tuple[dict[str, Any], ...] = ()
    #: deviceHealth: DRIVER/POOL/DEVICE, and (health, effect or "")
    device: str = ""
    health: tuple[str, str] = ("", "")
    #: What the step does, in a line (for timelines and reports).
    summary: str = ""


@dataclass
class Scenario:
    name: str
    start: datetime
    nodes: list[NodeShape]
    objects: list[dict[str, Any]]
    steps: list[Step]
    until: float


def _duration(value: Any, where: str) -> float:
    # A bare YAML number is read as the text it was written as: `at: 5` is refused for its
    # missing unit just as `at: "5"` and `clock advance 5` are (only 0 needs none, as in Go).
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)
    if isinstance(value, str):
        try:
            seconds = parse_duration(value)
        except DurationError as error:
            raise ScenarioError(f"{where}: {error} (use e.g. 90s, 5m, 1h30m)") from error
    else:
        raise ScenarioError(f"{where} must be a duration such as 5m")
    if seconds < 0:
        raise ScenarioError(f"{where} cannot be negative")
    return seconds


def _names(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ScenarioError(f"{where} must be a non-empty list of node names")
    return tuple(value)


def _mapping(value: Any, where: str, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ScenarioError(f"{where} must be a mapping")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise ScenarioError(
            f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(allowed))}"
        )
    return value


def _taint_step(at: float, body: Any, where: str) -> Step:
    body = _mapping(body, where, {"nodes", "selector", "all", "taints", "overwrite"})
    chosen = [key for key in ("nodes", "selector", "all") if body.get(key)]
    if len(chosen) != 1:
        raise ScenarioError(f"{where}: name the nodes with exactly one of nodes, selector, all")
    specs = body.get("taints")
    if not isinstance(specs, list) or not specs or not all(isinstance(s, str) for s in specs):
        raise ScenarioError(f"{where}.taints must be a non-empty list, e.g. [key=value:NoExecute]")
    try:
        changes = parse_taint_changes(specs)
    except TaintSpecError as error:
        raise ScenarioError(f"{where}.taints: {error.message}") from error
    selector = None
    if body.get("selector"):
        try:
            selector = parse_label_selector(str(body["selector"]))
        except ValueError as error:
            raise ScenarioError(f"{where}.selector: {error}") from error
    nodes = _names(body["nodes"], f"{where}.nodes") if body.get("nodes") else ()
    target = " ".join(nodes) or (f"-l {body['selector']}" if selector else "--all")
    return Step(
        at,
        "taint",
        nodes=nodes,
        selector=selector,
        all_nodes=bool(body.get("all")),
        changes=changes,
        overwrite=bool(body.get("overwrite")),
        summary=f"taint nodes {target} {' '.join(specs)}",
    )


def _step(index: int, raw: Any) -> Step:
    where = f"steps[{index}]"
    if not isinstance(raw, dict) or "at" not in raw:
        raise ScenarioError(f"{where} must be a mapping with `at` and one action")
    at = _duration(raw["at"], f"{where}.at")
    actions = [key for key in raw if key != "at"]
    if len(actions) != 1 or actions[0] not in ACTIONS:
        raise ScenarioError(f"{where}: give exactly one action, one of {', '.join(ACTIONS)}")
    action = actions[0]
    body, where = raw[action], f"{where}.{action}"
    if action == "taint":
        return _taint_step(at, body, where)
    if action in ("stop", "start"):
        body = _mapping(body, where, {"nodes", "zone"})
        if bool(body.get("nodes")) == bool(body.get("zone")):
            raise ScenarioError(f"{where}: give nodes or zone")
        if body.get("zone"):
            zone = str(body["zone"])
            return Step(at, action, zone=zone, summary=f"{action} zone {zone}")
        nodes = _names(body["nodes"], f"{where}.nodes")
        return Step(at, action, nodes=nodes, summary=f"{action} nodes {' '.join(nodes)}")
    if action == "condition":
        body = _mapping(body, where, {"node", "type", "status"})
        node, type_, status = body.get("node"), body.get("type"), body.get("status")
        if not isinstance(node, str) or not node:
            raise ScenarioError(f"{where}.node is required")
        if type_ not in CONDITION_TYPES:
            raise ScenarioError(f"{where}.type must be one of {', '.join(CONDITION_TYPES)}")
        if status not in CONDITION_STATUSES:
            raise ScenarioError(f"{where}.status must be one of {', '.join(CONDITION_STATUSES)}")
        return Step(
            at,
            "condition",
            nodes=(node,),
            condition=(str(type_), str(status)),
            summary=f"node {node} reports {type_}={status}",
        )
    if action == "deviceHealth":
        return _device_health_step(at, body, where)
    objects = _objects(body, where)
    names = ", ".join(f"{o['kind']}/{o['metadata']['name']}" for o in objects)
    return Step(at, action, objects=tuple(objects), summary=f"{action} {names}")


def _device_health_step(at: float, body: Any, where: str) -> Step:
    body = _mapping(body, where, {"device", "health", "effect"})
    device, health, effect = body.get("device"), body.get("health"), body.get("effect", "")
    if not isinstance(device, str) or len(device.split("/")) != 3 or not all(device.split("/")):
        raise ScenarioError(f"{where}.device must be DRIVER/POOL/DEVICE")
    if health not in HEALTH_STATES:
        raise ScenarioError(f"{where}.health must be one of {', '.join(HEALTH_STATES)}")
    if effect and effect not in ("None", "NoSchedule", "NoExecute"):
        raise ScenarioError(f"{where}.effect must be one of None, NoSchedule, NoExecute")
    summary = f"device {device} is {health}" + (f" ({effect})" if effect else "")
    return Step(
        at, "deviceHealth", device=device, health=(str(health), str(effect)), summary=summary
    )


def _objects(value: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise ScenarioError(f"{where} must be a list of objects")
    try:
        return objects_of(value, where)
    except SnapshotError as error:
        raise ScenarioError(str(error)) from error


def parse_scenario(data: Any) -> Scenario:
    data = _mapping(data, "the scenario", _TOP_KEYS)
    if "nodes" in data and "cluster" in data:
        raise ScenarioError("give nodes or cluster, not both")
    try:
        if "cluster" in data:
            shapes = parse_pools(data["cluster"])
        else:
            count = data.get("nodes", 3)
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                raise ScenarioError("nodes must be a whole number, 1 or more")
            shapes = default_nodes(count)
    except ClusterFileError as error:
        raise ScenarioError(f"cluster: {error}") from error
    start = DEFAULT_START
    if "start" in data:
        try:
            start = datetime.fromisoformat(str(data["start"]).replace("Z", "+00:00"))
        except ValueError as error:
            raise ScenarioError(f"start: {data['start']!r} is not an RFC 3339 time") from error
        if start.tzinfo is None:
            raise ScenarioError("start: give a time zone, e.g. 2026-01-01T00:00:00Z")
    raw_steps = data.get("steps") or []
    if not isinstance(raw_steps, list):
        raise ScenarioError("steps must be a list")
    steps = sorted((_step(i, raw) for i, raw in enumerate(raw_steps)), key=lambda s: s.at)
    last = steps[-1].at if steps else 0.0
    until = _duration(data["until"], "until") if "until" in data else last + DEFAULT_TAIL_SECONDS
    if until < last:
        raise ScenarioError(f"until ({until:g}s) ends before the last step (at {last:g}s)")
    return Scenario(
        name=str(data.get("name") or "scenario"),
        start=start.astimezone(UTC),
        nodes=shapes,
        objects=_objects(data.get("objects") or [], "objects"),
        steps=steps,
        until=until,
    )


def load_scenario(path: Path) -> Scenario:
    try:
        documents = load_yaml_documents(path.read_text())
    except OSError as error:
        raise ScenarioError(f"cannot read {path}: {error.strerror or error}") from error
    except SnapshotError as error:
        raise ScenarioError(f"{path} is not YAML or JSON: {error}") from error
    if len(documents) != 1:
        raise ScenarioError(f"{path}: a scenario is one YAML document")
    try:
        return parse_scenario(documents[0])
    except ScenarioError as error:
        raise ScenarioError(f"{path}: {error}") from error
