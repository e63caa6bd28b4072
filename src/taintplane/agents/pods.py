"""The pod side of the simulated kubelets: admission, start-up, reconciliation, the active
deadline and graceful termination.

A pod bound to a simulated, running node is admitted — refused, as upstream's kubelet does,
when it does not tolerate one of the node's NoExecute taints (static pods are exempt) — and
then runs: init containers complete, sidecars and containers run, after the kubelet's Pulled /
Created / Started events (container_events.py), and the pod reports phase Running with
upstream's conditions (pod_status.py keeps the kubelet's record and builds the status). A
container whose image is changed is restarted. A pod whose ``activeDeadlineSeconds`` pass
fails (``DeadlineExceeded``). A status someone else changed (the node lifecycle controller's
Ready=False while the node was unreachable) is written back at the next periodic reconcile,
every 10 s, as upstream's status manager does.

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

from taintplane.agents.admission import admission_failure, is_static
from taintplane.agents.container_events import record_killing, record_started
from taintplane.agents.nodes import node_address
from taintplane.agents.pod_rounds import StatusWrite, log_failure, send_statuses, take_round
from taintplane.agents.pod_status import (
    DEADLINE_MESSAGE,
    DEADLINE_REASON,
    PodRun,
    adopt_pod,
    container_id,
    generate_status,
    owned_view,
    start_pod,
    status_patch,
)
from taintplane.api.decoding import format_time, parse_timestamp
from taintplane.client import ApiError, resource
from taintplane.client.informer import object_key
from taintplane.client.workqueue import WorkQueue

if TYPE_CHECKING:
    from taintplane.agents.kubelet import Kubelets

__all__ = ["SHUTDOWN_ANNOTATION", "PodRuntime"]

#: How often the status manager compares what it reported with what the API holds.
RECONCILE_SECONDS = 10.0

log = logging.getLogger(__name__)

PODS = resource("", "v1", "pods")
SHUTDOWN_ANNOTATION = "sim.taintplane.io/shutdown-seconds"

#: Exit code of a container still running when its grace period ends (SIGKILL).
KILLED_EXIT_CODE = 137


def _pod_ip(key: str) -> str:
    digest = hashlib.sha256(key.encode()).digest()
    return f"10.244.{digest[0]}.{digest[1] % 254 + 1}"


def _shutdown_seconds(pod: dict[str, Any]) -> float:
    annotations = pod["metadata"].get("annotations") or {}
    try:
        return float(annotations.get(SHUTDOWN_ANNOTATION, 0))
    except ValueError:
        return 0.0


def _exit_code(pod: dict[str, Any], grace: float) -> int:
    """Containers exit 0 on SIGTERM within their simulated shutdown time; one outliving the
    grace period is killed."""
    return 0 if _shutdown_seconds(pod) <= grace else KILLED_EXIT_CODE


class PodRuntime:
    def __init__(self, kubelets: Kubelets) -> None:
        self.kubelets = kubelets
        self.informer = kubelets.informers.pods
        self.queue = WorkQueue(kubelets.clock, name="kubelet-pods")
        self._worker: asyncio.Task[None] | None = None
        #: The kubelet's record of every pod it runs (key -> run).
        self.runs: dict[str, PodRun] = {}
        #: Pods whose stop is scheduled (key -> the instant it happens).
        self.stopping: dict[str, datetime] = {}
        self._stop_tasks: dict[str, asyncio.Task[None]] = {}
        #: Pods whose API status another writer changed: written back at the next reconcile.
        self.diverged: set[str] = set()
        self._reconciling: set[str] = set()
        #: Pods with a timer for their active deadline (key -> the instant).
        self._deadlines: dict[str, datetime] = {}
        self._timers: set[asyncio.Task[None]] = set()
        #: While the worker syncs a round of pods: their status writes, sent together.
        self._pending: list[StatusWrite] | None = None
        self.informer.add_handlers(self._seen, lambda old, new: self._seen(new), self._gone)

    def _ours(self, pod: dict[str, Any]) -> bool:
        node = (pod.get("spec") or {}).get("nodeName")
        simulated = self.kubelets.nodes.get(node) if node else None
        return simulated is not None and simulated.running

    def _seen(self, pod: dict[str, Any]) -> None:
        if self._worker is not None and self._ours(pod):
            self.queue.add(object_key(pod))

    def _gone(self, pod: dict[str, Any]) -> None:
        key = object_key(pod)
        self.stopping.pop(key, None)
        self.runs.pop(key, None)
        self.diverged.discard(key)
        self._deadlines.pop(key, None)

    def resync(self, node: str) -> None:
        if self._worker is None:
            return
        for pod in self.informer.by_index("node", node):
            self.queue.add(object_key(pod))

    def start(self) -> None:
        self._worker = asyncio.create_task(self._work(), name="kubelet-pods")
        self._spawn(self._reconcile_loop())

    async def stop(self) -> None:
        tasks = [*self._timers, *([self._worker] if self._worker else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _spawn(self, work: Any) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.create_task(work)
        self._timers.add(task)
        task.add_done_callback(self._timers.discard)
        return task

    async def _reconcile_loop(self) -> None:
        while True:
            await self.kubelets.clock.sleep(RECONCILE_SECONDS)
            for key in list(self.diverged):
                self._reconciling.add(key)
                self.queue.add(key)
            self.diverged.clear()

    # ---- rounds of pods --------------------------------------------------------------------

    async def _work(self) -> None:
        """Sync every pod queued, then send their status writes as one batch (one store
        transaction in-process): the simulated kubelets run side by side, as a cluster's do,
        so a burst of pods reaches Running in one round rather than one pod a write."""
        queue = self.queue
        while True:
            keys = await take_round(queue)
            failed: set[str] = set()
            pending = self._pending = []
            try:
                for key in keys:
                    try:
                        await self.sync(key)
                    except asyncio.CancelledError:
                        raise
                    except Exception as error:
                        log_failure(queue.name, key, error)
                        failed.add(key)
            finally:
                self._pending = None
            if pending:
                failed |= await send_statuses(self.kubelets.client, queue.name, pending)
            for key in keys:
                if key in failed:
                    queue.retry(key)
                else:
                    queue.forget(key)
                queue.done(key)

    # ---- one pod ---------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        pod = self.informer.get(key)
        if pod is None or not self._ours(pod):
            return
        meta = pod["metadata"]
        run = self.runs.get(key)
        if run is not None and run.uid != meta.get("uid"):
            del self.runs[key]  # a new pod under an old name
            run = None
        if meta.get("deletionTimestamp"):
            self._schedule_stop(key, pod)
            return
        status = pod.get("status") or {}
        phase = status.get("phase")
        if run is None:
            if phase in ("Succeeded", "Failed"):
                return
            if phase == "Running" and status.get("containerStatuses"):
                run = self.runs[key] = adopt_pod(pod, self._host_ip(pod))
                run.last_sent = hash(owned_view(status))
            else:
                run = await self._admit_and_start(key, pod)
                if run is None:
                    return
        elif run.failure is None and run.phase() == "Running":
            self._restart_changed(pod, run)
        self._watch_deadline(key, pod, run)
        await self._report(key, pod, run)

    def _host_ip(self, pod: dict[str, Any]) -> str:
        simulated = self.kubelets.nodes[pod["spec"]["nodeName"]]
        return node_address(simulated.shape, simulated.index)

    async def _admit_and_start(self, key: str, pod: dict[str, Any]) -> PodRun | None:
        kubelets = self.kubelets
        node_name = pod["spec"]["nodeName"]
        refusal = admission_failure(
            pod, kubelets.node_informer.get(node_name), self._admitted_on(node_name, key)
        )
        if refusal is None:
            spec = pod.get("spec") or {}
            run = start_pod(
                pod,
                self._host_ip(pod),
                _pod_ip(key),
                format_time(kubelets.clock.now()),
                host_network=bool(spec.get("hostNetwork")),
            )
            self.runs[key] = run
            recorder = kubelets.recorders[node_name]
            record_started(recorder, pod, spec.get("initContainers") or [], "initContainers")
            record_started(recorder, pod, spec.get("containers") or [], "containers")
            return run
        reason, message = refusal
        kubelets.recorders[node_name].event(pod, "Warning", reason, message)
        status = {"phase": "Failed", "reason": reason, "message": f"Pod was rejected: {message}"}
        await self._patch_status(pod, status)
        return None

    def _admitted_on(self, node: str, key: str) -> list[dict[str, Any]]:
        """The node's other pods this kubelet admitted and that have not finished (upstream's
        active pods: the ones admission counts against the node's allocatable)."""
        admitted = []
        for pod in self.informer.by_index("node", node):
            other = object_key(pod)
            run = self.runs.get(other)
            if other != key and run is not None and run.phase() not in ("Succeeded", "Failed"):
                admitted.append(pod)
        return admitted

    def _restart_changed(self, pod: dict[str, Any], run: PodRun) -> None:
        """A container whose image changed is killed and started again with the new one
        (the kubelet's "definition changed" restart)."""
        recorder = self.kubelets.recorders[pod["spec"]["nodeName"]]
        now = format_time(self.kubelets.clock.now())
        specs = {c.get("name"): c for c in (pod.get("spec") or {}).get("containers") or []}
        for container in run.containers:
            spec = specs.get(container.name)
            if spec is None or spec.get("image") == container.image:
                continue
            record_killing(
                recorder,
                pod,
                [container.name],
                f"Container {container.name} definition changed, will be restarted",
            )
            container.stop(0, now)
            container.last_terminated = container.terminated
            container.terminated = None
            container.restart_count += 1
            container.image = str(spec.get("image", ""))
            container.container_id = container_id(
                object_key(pod), container.name, container.restart_count
            )
            container.started_at = now
            record_started(recorder, pod, [spec], "containers")

    def _watch_deadline(self, key: str, pod: dict[str, Any], run: PodRun) -> None:
        """``activeDeadlineSeconds``: once the pod has been active that long, it fails."""
        seconds = (pod.get("spec") or {}).get("activeDeadlineSeconds")
        if run.failure is not None or run.phase() != "Running" or not isinstance(seconds, int):
            return
        clock = self.kubelets.clock
        started = parse_timestamp(run.started_at)
        if started is None:
            return
        due = started + timedelta(seconds=seconds)
        if clock.now() >= due:
            run.failure = (DEADLINE_REASON, DEADLINE_MESSAGE)
            self.kubelets.recorders[pod["spec"]["nodeName"]].event(
                pod, "Normal", DEADLINE_REASON, DEADLINE_MESSAGE
            )
            grace = float((pod.get("spec") or {}).get("terminationGracePeriodSeconds") or 30)
            run.stop_all(_exit_code(pod, grace), format_time(clock.now()))
            return
        if self._deadlines.get(key) == due:
            return
        self._deadlines[key] = due

        async def wake() -> None:
            await clock.sleep((due - clock.now()).total_seconds())
            if self._deadlines.get(key) == due:
                self.queue.add(key)

        self._spawn(wake())

    async def _report(self, key: str, pod: dict[str, Any], run: PodRun) -> None:
        """Write the status if the kubelet's record changed since its last write; a status
        changed by someone else waits for the periodic reconcile."""
        if is_static(pod) and run.phase() != "Running":
            return
        status = generate_status(pod, run, format_time(self.kubelets.clock.now()))
        wanted = owned_view(status)
        digest = hash(wanted)
        reconciling = key in self._reconciling
        self._reconciling.discard(key)
        if wanted == owned_view(pod.get("status") or {}):
            run.last_sent = digest
            self.diverged.discard(key)
            return
        if digest == run.last_sent and not reconciling:
            self.diverged.add(key)
            return
        patch = status_patch(status, pod.get("status") or {})
        if self._pending is not None:
            self._pending.append(StatusWrite(key, pod, patch, run, digest))
        elif await self._patch_status(pod, patch):
            run.last_sent = digest

    async def _patch_status(self, pod: dict[str, Any], status: dict[str, Any]) -> bool:
        meta = pod["metadata"]
        try:
            await self.kubelets.client.patch(
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
            return False
        return True

    # ---- termination -----------------------------------------------------------------------

    def _schedule_stop(self, key: str, pod: dict[str, Any]) -> None:
        """Stop a pod being deleted: now, or when its grace period is over. A shorter grace
        period given later (a second delete) brings the stop forward, never back."""
        meta = pod["metadata"]
        clock = self.kubelets.clock
        grace = float(meta.get("deletionGracePeriodSeconds") or 0)
        delay = max(0.0, min(grace, _shutdown_seconds(pod)))
        at = clock.now() + timedelta(seconds=delay)
        scheduled = self.stopping.get(key)
        if scheduled is not None and scheduled <= at:
            return
        run = self.runs.get(key)
        if scheduled is None:
            stopping = [c.name for c in run.running() if c in run.containers] if run else []
            record_killing(self.kubelets.recorders[pod["spec"]["nodeName"]], pod, stopping)
        else:
            self._stop_tasks.pop(key).cancel()
        self.stopping[key] = at
        self._stop_tasks[key] = self._spawn(
            self._stop_after(key, pod, delay, _exit_code(pod, grace))
        )

    async def _stop_after(
        self, key: str, deleted: dict[str, Any], delay: float, exit_code: int
    ) -> None:
        clock = self.kubelets.clock
        await clock.sleep(delay)
        self._stop_tasks.pop(key, None)
        namespace, name = deleted["metadata"]["namespace"], deleted["metadata"]["name"]
        uid = deleted["metadata"].get("uid")
        pod = self.informer.get(key)
        if pod is None or not self._ours(pod) or pod["metadata"].get("uid") != uid:
            self.stopping.pop(key, None)
            return  # gone already, or the node went silent: it stays Terminating
        run = self.runs.get(key)
        try:
            if run is not None and run.running() and not is_static(pod):
                run.stop_all(exit_code, format_time(clock.now()))
                status = generate_status(pod, run, format_time(clock.now()))
                await self._patch_status(pod, status_patch(status, pod.get("status") or {}))
            await self.kubelets.client.delete(PODS, name, namespace, grace_period=0, uid=uid)
        except ApiError as error:
            if error.code != 404:
                log.info("kubelet: removing %s failed: %s", key, error)
                self.stopping.pop(key, None)
