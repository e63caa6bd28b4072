"""What a simulated kubelet knows of a pod it runs, and the status it reports from that.

``PodRun`` is the kubelet's own record (the container runtime's state, in a real kubelet):
when each container started, how often it restarted, how the last run ended, whether the
pod failed as a whole. ``generate_status`` turns it into the API status as upstream's
``generateAPIPodStatus`` and status manager do: every container status complete (name,
state, lastState, ready, restartCount, image, imageID, containerID, started), the
kubelet-owned conditions after everyone else's in upstream's order (PodReadyToStartContainers,
Initialized, Ready, ContainersReady, PodScheduled) with transition times kept while a status
holds, and a host-network pod on its node's address.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass, field
from typing import Any

import orjson

from taintplane.api.gofmt import go_quote
from taintplane.api.podconditions import update_pod_condition
from taintplane.client.informer import object_key

__all__ = [
    "KUBELET_CONDITIONS",
    "ContainerRun",
    "PodRun",
    "generate_status",
    "is_restartable_init",
    "owned_view",
    "status_patch",
]

#: Conditions the kubelet owns (``PodConditionByKubelet``), in the order it reports them.
KUBELET_CONDITIONS = (
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
)

DEADLINE_REASON = "DeadlineExceeded"
DEADLINE_MESSAGE = "Pod was active on the node longer than the specified deadline"


def is_restartable_init(container: dict[str, Any]) -> bool:
    """A sidecar: an init container with ``restartPolicy: Always`` keeps running."""
    return container.get("restartPolicy") == "Always"


def _image_id(image: str) -> str:
    return f"{image}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def container_id(pod_key: str, name: str, restart: int) -> str:
    digest = hashlib.sha256(f"{pod_key}/{name}/{restart}".encode()).hexdigest()
    # Interned, as what the record keeps from start_pod: see there.
    return sys.intern(f"containerd://{digest}")


@dataclass(slots=True)
class ContainerRun:
    name: str
    image: str
    container_id: str
    started_at: str
    restart_count: int = 0
    #: How the container's current run ended (None while it runs).
    terminated: dict[str, Any] | None = None
    #: How its previous run ended (``lastState.terminated``).
    last_terminated: dict[str, Any] | None = None
    #: A regular init container: it ran to completion before the others started.
    completed_init: bool = False

    def stop(self, exit_code: int, at: str) -> None:
        if self.terminated is None:
            self.terminated = {
                "exitCode": exit_code,
                "reason": "Completed" if exit_code == 0 else "Error",
                "startedAt": self.started_at,
                "finishedAt": at,
                "containerID": self.container_id,
            }

    def status(self) -> dict[str, Any]:
        running = self.terminated is None
        if self.completed_init:
            assert self.terminated is not None
            state: dict[str, Any] = {"terminated": self.terminated}
            ready, started = self.terminated["exitCode"] == 0, False
        elif running:
            state, ready, started = {"running": {"startedAt": self.started_at}}, True, True
        else:
            state, ready, started = {"terminated": self.terminated}, False, False
        return {
            "name": self.name,
            "state": state,
            "lastState": {"terminated": self.last_terminated} if self.last_terminated else {},
            "ready": ready,
            "restartCount": self.restart_count,
            "image": self.image,
            "imageID": _image_id(self.image),
            "containerID": self.container_id,
            "started": started,
        }


@dataclass(slots=True)
class PodRun:
    uid: str
    started_at: str
    host_ip: str
    pod_ip: str
    init_containers: list[ContainerRun] = field(default_factory=list)
    containers: list[ContainerRun] = field(default_factory=list)
    #: The pod failed as a whole (reason, message): its active deadline passed.
    failure: tuple[str, str] | None = None
    #: A digest of the status last written, as ``owned_view`` sees it (to tell our own
    #: changes from another writer's, which wait for the periodic reconcile as upstream's);
    #: a digest, not the view, because the kubelets hold one per running pod.
    last_sent: int | None = None

    def running(self) -> list[ContainerRun]:
        return [
            c
            for c in (*self.init_containers, *self.containers)
            if c.terminated is None and not c.completed_init
        ]

    def stop_all(self, exit_code: int, at: str) -> None:
        for container in self.running():
            container.stop(exit_code, at)

    def phase(self) -> str:
        if self.failure is not None:
            return "Failed"
        if any(c.terminated is None for c in self.containers):
            return "Running"
        codes = [c.terminated["exitCode"] for c in self.containers if c.terminated]
        return "Succeeded" if all(code == 0 for code in codes) else "Failed"


def start_pod(
    pod: dict[str, Any], host_ip: str, pod_ip: str, now: str, *, host_network: bool
) -> PodRun:
    """A pod's first run: init containers done, sidecars and containers running."""
    key = object_key(pod)
    spec = pod.get("spec") or {}
    # Interned: the shared informers cache the status written from this record with its
    # strings interned (startTime, hostIP, podIP, containerID), so the record, kept for every
    # running pod, holds those strings rather than a second copy of them.
    now, host_ip, pod_ip = sys.intern(now), sys.intern(host_ip), sys.intern(pod_ip)
    run = PodRun(
        uid=str(pod["metadata"].get("uid", "")),
        started_at=now,
        host_ip=host_ip,
        pod_ip=host_ip if host_network else pod_ip,
    )
    for container in spec.get("initContainers") or []:
        name = str(container.get("name", ""))
        entry = ContainerRun(name, str(container.get("image", "")), container_id(key, name, 0), now)
        if not is_restartable_init(container):
            entry.completed_init = True
            entry.terminated = {
                "exitCode": 0,
                "reason": "Completed",
                "startedAt": now,
                "finishedAt": now,
                "containerID": entry.container_id,
            }
        run.init_containers.append(entry)
    for container in spec.get("containers") or []:
        name = str(container.get("name", ""))
        image = str(container.get("image", ""))
        run.containers.append(ContainerRun(name, image, container_id(key, name, 0), now))
    return run


def adopt_pod(pod: dict[str, Any], host_ip: str) -> PodRun:
    """The record of a pod already running before this kubelet (a restarted ``up``): taken
    from the status it reported then."""
    status = pod.get("status") or {}
    run = PodRun(
        uid=str(pod["metadata"].get("uid", "")),
        started_at=str(status.get("startTime") or ""),
        host_ip=host_ip,
        pod_ip=str(status.get("podIP") or host_ip),
    )
    for target, key in (
        (run.init_containers, "initContainerStatuses"),
        (run.containers, "containerStatuses"),
    ):
        for reported in status.get(key) or []:
            state = reported.get("state") or {}
            running = state.get("running") or {}
            terminated = state.get("terminated")
            entry = ContainerRun(
                str(reported.get("name", "")),
                str(reported.get("image", "")),
                str(reported.get("containerID", "")),
                str(running.get("startedAt") or (terminated or {}).get("startedAt") or ""),
                int(reported.get("restartCount") or 0),
                terminated=terminated,
                last_terminated=(reported.get("lastState") or {}).get("terminated"),
                completed_init=key == "initContainerStatuses" and terminated is not None,
            )
            target.append(entry)
    if status.get("reason") == DEADLINE_REASON:
        run.failure = (DEADLINE_REASON, DEADLINE_MESSAGE)
    return run


def _readiness_gates_unready(pod: dict[str, Any], conditions: list[dict[str, Any]]) -> str:
    """GeneratePodReadyCondition's message for the readiness gates whose condition (written
    by someone else) is missing or not True; empty when every gate is met."""
    by_type = {c.get("type"): c for c in conditions}
    unready = []
    for gate in (pod.get("spec") or {}).get("readinessGates") or []:
        kind = str((gate or {}).get("conditionType") or "")
        condition = by_type.get(kind)
        if condition is None:
            unready.append(
                f"corresponding condition of pod readiness gate {go_quote(kind)} does not exist."
            )
        elif condition.get("status") != "True":
            unready.append(
                f'the status of pod readiness gate {go_quote(kind)} is not "True", but '
                f"{condition.get('status') or ''}"
            )
    return ", ".join(unready)


def _kubelet_conditions(run: PodRun, phase: str, gates_unready: str) -> list[dict[str, Any]]:
    terminal = phase in ("Succeeded", "Failed")
    all_ready = not terminal and all(c.status()["ready"] for c in run.containers)
    sandbox = "False" if terminal else "True"
    wanted: list[dict[str, Any]] = [
        {"type": "PodReadyToStartContainers", "status": sandbox},
        {"type": "Initialized", "status": "True"},
    ]
    if terminal:
        finished = "PodCompleted" if phase == "Succeeded" else "PodFailed"
        if phase == "Succeeded":
            wanted[1]["reason"] = "PodCompleted"
        wanted += [
            {"type": "Ready", "status": "False", "reason": finished},
            {"type": "ContainersReady", "status": "False", "reason": finished},
        ]
    else:
        ready = "True" if all_ready else "False"
        wanted += [
            {"type": "Ready", "status": ready},
            {"type": "ContainersReady", "status": ready},
        ]
        if not all_ready:
            for condition in wanted[2:]:
                condition["reason"] = "ContainersNotReady"
        elif gates_unready:
            # Ready waits for the gates; ContainersReady does not.
            wanted[2] = {
                "type": "Ready",
                "status": "False",
                "reason": "ReadinessGatesNotReady",
                "message": gates_unready,
            }
    wanted.append({"type": "PodScheduled", "status": "True"})
    return wanted


def generate_status(pod: dict[str, Any], run: PodRun, now: str) -> dict[str, Any]:
    """The whole status the kubelet reports for ``pod`` from its record ``run``."""
    old = pod.get("status") or {}
    phase = run.phase()
    # Others' conditions first (DisruptionTarget, readiness gates), then the kubelet's own,
    # with transition times as UpdatePodCondition keeps them.
    scratch = {"status": {"conditions": [dict(c) for c in old.get("conditions") or []]}}
    others = [
        c
        for c in scratch["status"]["conditions"]
        if isinstance(c, dict) and c.get("type") not in KUBELET_CONDITIONS
    ]
    wanted = _kubelet_conditions(run, phase, _readiness_gates_unready(pod, others))
    generation = (pod.get("metadata") or {}).get("generation")
    if isinstance(generation, int):
        # PodObservedGenerationTracking: the spec generation this status reflects.
        for condition in wanted:
            condition["observedGeneration"] = generation
    for condition in wanted:
        update_pod_condition(scratch, {**condition, "lastProbeTime": None}, now)
    by_type = {c.get("type"): c for c in scratch["status"]["conditions"]}
    conditions = [
        c for c in scratch["status"]["conditions"] if c.get("type") not in KUBELET_CONDITIONS
    ]
    conditions += [by_type[c["type"]] for c in wanted]
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": conditions,
        "hostIP": run.host_ip,
        "hostIPs": [{"ip": run.host_ip}],
        "podIP": run.pod_ip,
        "podIPs": [{"ip": run.pod_ip}],
        "startTime": run.started_at,
    }
    if run.init_containers:
        status["initContainerStatuses"] = [c.status() for c in run.init_containers]
    status["containerStatuses"] = [c.status() for c in run.containers]
    if isinstance(generation, int):
        status["observedGeneration"] = generation
    if old.get("qosClass"):
        status["qosClass"] = old["qosClass"]
    if run.failure is not None:
        status["reason"], status["message"] = run.failure
    return status


def status_patch(status: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """``status`` as the strategic merge patch the status manager sends: the conditions'
    order, and a null for a reason or message a kubelet condition no longer has (a Ready
    that was held back by a readiness gate drops the gate's message when it turns True)."""
    before = {c.get("type"): c for c in old.get("conditions") or [] if isinstance(c, dict)}
    conditions = []
    for condition in status["conditions"]:
        stored = before.get(condition.get("type"))
        if stored is not None and condition.get("type") in KUBELET_CONDITIONS:
            dropped = [k for k in ("reason", "message") if k in stored and k not in condition]
            condition = {**condition, **dict.fromkeys(dropped)}
        conditions.append(condition)
    order = [{"type": c["type"]} for c in status["conditions"]]
    return {**status, "conditions": conditions, "$setElementOrder/conditions": order}


def owned_view(status: dict[str, Any]) -> Any:
    """The parts of a status the kubelet owns, transition times left out: equal views mean
    nothing of the kubelet's needs writing."""
    conditions = sorted(
        (str(c.get("type")), c.get("status"), c.get("reason"), c.get("message"))
        for c in status.get("conditions") or []
        if isinstance(c, dict) and c.get("type") in KUBELET_CONDITIONS
    )
    return (
        status.get("phase"),
        status.get("observedGeneration"),
        tuple(conditions),
        status.get("podIP"),
        status.get("hostIP"),
        status.get("startTime"),
        status.get("reason"),
        orjson.dumps(status.get("initContainerStatuses") or [], option=orjson.OPT_SORT_KEYS),
        orjson.dumps(status.get("containerStatuses") or [], option=orjson.OPT_SORT_KEYS),
    )
