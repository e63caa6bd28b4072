"""The pod side of the simulated kubelets: admission, start-up and graceful termination.

A pod bound to a simulated, running node is admitted — refused, as upstream's kubelet does,
when it does not tolerate one of the node's NoExecute taints (static pods are exempt) — and
then runs: phase Running with upstream's conditions and a running container status for each
container, after the kubelet's Pulled / Created / Started events (container_events.py).

A pod being deleted is stopped as upstream's kubelet stops it: a ``Killing`` event
("Stopping container NAME") for each running container, then the containers exit after the
pod's simulated shutdown time (annotation ``sim.taintplane.io/shutdown-seconds``, default 0:
they exit at once on SIGTERM, code 0) or are killed when the grace period runs out first (code
137), and the pod reports a terminal phase (Succeeded when every container exited 0, Failed
otherwise; static pods excepted, as upstream) with terminated container states and Ready /
ContainersReady False (``PodCompleted`` / ``PodFailed``). It is then removed: deleted with grace
period 0 and its uid as precondition, as the kubelet's status manager does — a finalizer keeps
it, in its terminal phase.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from taintplane.agents.container_events import record_killing, record_started
from taintplane.agents.nodes import node_address
from taintplane.api.decoding import format_time
from taintplane.api.podconditions import update_pod_condition
from taintplane.api.taints import Taint, TaintEffect
from taintplane.api.tolerations import Toleration, find_untolerated_taint
from taintplane.client import ApiError, resource
from taintplane.client.informer import object_key
from taintplane.client.workqueue import WorkQueue

if TYPE_CHECKING:
    from taintplane.agents.kubelet import Kubelets

__all__ = ["SHUTDOWN_ANNOTATION", "PodRuntime", "admission_failure"]

log = logging.getLogger(__name__)

PODS = resource("", "v1", "pods")
SHUTDOWN_ANNOTATION = "sim.taintplane.io/shutdown-seconds"
CONFIG_SOURCE_ANNOTATION = "kubernetes.io/config.source"

#: Exit code of a container still running when its grace period ends (SIGKILL).
KILLED_EXIT_CODE = 137

TAINT_REASON = "TaintToleration"
TAINT_MESSAGE = "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"


def is_static(pod: dict[str, Any]) -> bool:
    """``IsStaticPod``: the pod came from a file or URL, not the API server."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    source = annotations.get(CONFIG_SOURCE_ANNOTATION)
    return source is not None and source != "api"


def admission_failure(pod: dict[str, Any], node: dict[str, Any] | None) -> tuple[str, str] | None:
    """The kubelet's taint admission check: (reason, message) when it refuses the pod."""
    if node is None or is_static(pod):
        return None
    taints = [Taint.from_dict(t) for t in (node.get("spec") or {}).get("taints") or []]
    tolerations = [
        Toleration.from_dict(t) for t in (pod.get("spec") or {}).get("tolerations") or []
    ]
    untolerated = find_untolerated_taint(
        taints, tolerations, lambda t: t.effect == TaintEffect.NO_EXECUTE
    )
    return None if untolerated is None else (TAINT_REASON, TAINT_MESSAGE)


def _pod_ip(key: str) -> str:
    digest = hashlib.sha256(key.encode()).digest()
    return f"10.244.{digest[0]}.{digest[1] % 254 + 1}"


def running_status(pod: dict[str, Any], host_ip: str, now: datetime) -> dict[str, Any]:
    """The status a kubelet reports for a pod whose containers all started."""
    stamp = format_time(now)
    key = object_key(pod)
    spec = pod.get("spec") or {}
    containers = []
    for container in spec.get("containers") or []:
        image = str(container.get("image", ""))
        digest = hashlib.sha256(f"{key}/{container.get('name')}".encode()).hexdigest()
        containers.append(
            {
                "name": container.get("name"),
                "state": {"running": {"startedAt": stamp}},
                "lastState": {},
                "ready": True,
                "restartCount": 0,
                "image": image,
                "imageID": f"{image}@sha256:{hashlib.sha256(image.encode()).hexdigest()}",
                "containerID": f"containerd://{digest}",
                "started": True,
            }
        )
    conditions = [
        {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": stamp}
        for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")
    ]
    ip = _pod_ip(key)
    return {
        "phase": "Running",
        "conditions": conditions,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": stamp,
        "containerStatuses": containers,
    }


def running_containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        c
        for c in (pod.get("status") or {}).get("containerStatuses") or []
        if isinstance(c, dict) and "running" in (c.get("state") or {})
    ]


def terminated_status(pod: dict[str, Any], exit_code: int, now: datetime) -> dict[str, Any]:
    """The status patch a kubelet sends once a deleted pod's containers have stopped: the
    terminal phase, terminated container states and the conditions of a finished pod."""
    stamp = format_time(now)
    statuses = []
    for container in running_containers(pod):
        running = container["state"]["running"]
        terminated = {
            "exitCode": exit_code,
            "reason": "Completed" if exit_code == 0 else "Error",
            "startedAt": running.get("startedAt"),
            "finishedAt": stamp,
            "containerID": container.get("containerID"),
        }
        statuses.append(
            {
                "name": container.get("name"),
                "state": {"running": None, "terminated": terminated},
                "ready": False,
                "started": False,
            }
        )
    phase = "Succeeded" if exit_code == 0 else "Failed"
    finished = "PodCompleted" if exit_code == 0 else "PodFailed"
    wanted: list[dict[str, Any]] = [
        {"type": "PodReadyToStartContainers", "status": "False"},
        {"type": "Initialized", "status": "True"},
        {"type": "Ready", "status": "False", "reason": finished},
        {"type": "ContainersReady", "status": "False", "reason": finished},
    ]
    if exit_code == 0:
        wanted[1]["reason"] = "PodCompleted"
    # Transition times as UpdatePodCondition keeps them, worked out on a copy of the
    # conditions; the patch carries the four the kubelet sets.
    scratch = {"status": {"conditions": list((pod.get("status") or {}).get("conditions") or [])}}
    for condition in wanted:
        update_pod_condition(scratch, {**condition, "lastProbeTime": None}, stamp)
    types = {c["type"] for c in wanted}
    conditions = [c for c in scratch["status"]["conditions"] if c.get("type") in types]
    return {"phase": phase, "conditions": conditions, "containerStatuses": statuses}


class PodRuntime:
    def __init__(self, kubelets: Kubelets) -> None:
        self.kubelets = kubelets
        self.informer = kubelets.informers.pods
        self.queue = WorkQueue(kubelets.clock, name="kubelet-pods")
        self._worker: asyncio.Task[None] | None = None
        #: Pods whose stop is scheduled (key -> the instant it happens).
        self.stopping: dict[str, datetime] = {}
        self._timers: set[asyncio.Task[None]] = set()
        self.informer.add_handlers(self._seen, lambda old, new: self._seen(new), self._gone)

    def _ours(self, pod: dict[str, Any]) -> bool:
        node = (pod.get("spec") or {}).get("nodeName")
        simulated = self.kubelets.nodes.get(node) if node else None
        return simulated is not None and simulated.running

    def _seen(self, pod: dict[str, Any]) -> None:
        if self._worker is not None and self._ours(pod):
            self.queue.add(object_key(pod))

    def _gone(self, pod: dict[str, Any]) -> None:
        self.stopping.pop(object_key(pod), None)

    def resync(self, node: str) -> None:
        if self._worker is None:
            return
        for pod in self.informer.by_index("node", node):
            self.queue.add(object_key(pod))

    def start(self) -> None:
        self._worker = asyncio.create_task(self.queue.run(self.sync), name="kubelet-pods")

    async def stop(self) -> None:
        tasks = [*self._timers, *([self._worker] if self._worker else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def sync(self, key: str) -> None:
        pod = self.informer.get(key)
        if pod is None or not self._ours(pod):
            return
        meta = pod["metadata"]
        status = pod.get("status") or {}
        if meta.get("deletionTimestamp"):
            self._schedule_stop(key, pod)
        elif status.get("phase") in (None, "", "Pending") and not status.get("startTime"):
            await self._admit_and_start(pod)

    async def _admit_and_start(self, pod: dict[str, Any]) -> None:
        kubelets = self.kubelets
        node_name = pod["spec"]["nodeName"]
        node = kubelets.node_informer.get(node_name)
        meta = pod["metadata"]
        now = kubelets.clock.now()
        refusal = admission_failure(pod, node)
        if refusal is not None:
            reason, message = refusal
            kubelets.recorders[node_name].event(pod, "Warning", reason, message)
            status: dict[str, Any] = {
                "phase": "Failed",
                "reason": reason,
                "message": f"Pod was rejected: {message}",
            }
        else:
            simulated = kubelets.nodes[node_name]
            status = running_status(pod, node_address(simulated.shape, simulated.index), now)
            record_started(kubelets.recorders[node_name], pod)
        try:
            await kubelets.client.patch(
                PODS,
                meta["name"],
                {"status": status},
                namespace=meta["namespace"],
                patch_type="strategic",
                subresource="status",
            )
        except ApiError as error:
            if error.code != 404:
                raise

    def _schedule_stop(self, key: str, pod: dict[str, Any]) -> None:
        if key in self.stopping:
            return
        meta = pod["metadata"]
        grace = float(meta.get("deletionGracePeriodSeconds") or 0)
        annotations = meta.get("annotations") or {}
        try:
            shutdown = float(annotations.get(SHUTDOWN_ANNOTATION, 0))
        except ValueError:
            shutdown = 0.0
        delay = max(0.0, min(grace, shutdown))
        exit_code = 0 if shutdown <= grace else KILLED_EXIT_CODE
        record_killing(
            self.kubelets.recorders[pod["spec"]["nodeName"]],
            pod,
            [str(c.get("name", "")) for c in running_containers(pod)],
        )
        self.stopping[key] = self.kubelets.clock.now() + timedelta(seconds=delay)
        task = asyncio.create_task(self._stop_after(key, pod, delay, exit_code))
        self._timers.add(task)
        task.add_done_callback(self._timers.discard)

    async def _stop_after(
        self, key: str, deleted: dict[str, Any], delay: float, exit_code: int
    ) -> None:
        await self.kubelets.clock.sleep(delay)
        namespace, name = deleted["metadata"]["namespace"], deleted["metadata"]["name"]
        uid = deleted["metadata"].get("uid")
        pod = self.informer.get(key)
        if pod is None or not self._ours(pod) or pod["metadata"].get("uid") != uid:
            self.stopping.pop(key, None)
            return  # gone already, or the node went silent: it stays Terminating
        try:
            if running_containers(pod) and not is_static(pod):
                await self.kubelets.client.patch(
                    PODS,
                    name,
                    {"status": terminated_status(pod, exit_code, self.kubelets.clock.now())},
                    namespace=namespace,
                    patch_type="strategic",
                    subresource="status",
                )
            await self.kubelets.client.delete(PODS, name, namespace, grace_period=0, uid=uid)
        except ApiError as error:
            if error.code != 404:
                log.info("kubelet: removing %s failed: %s", key, error)
                self.stopping.pop(key, None)
