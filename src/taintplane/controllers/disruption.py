"""The disruption controller: keeps each PodDisruptionBudget's status current.

``currentHealthy`` counts matching pods that are Ready and not being deleted;
``expectedPods`` is the number of matching pods, or — for ``maxUnavailable`` and percentage
``minAvailable``, as upstream — the replicas their controllers (ReplicaSets, Deployments)
ask for; ``desiredHealthy`` follows from the budget (percentages: minAvailable rounds up,
maxUnavailable rounds up what may be unavailable); ``disruptionsAllowed`` is what is left, and
the ``DisruptionAllowed`` condition says so (``SufficientPods`` / ``InsufficientPods``). This
is what ``kubectl get pdb`` shows and what the eviction subresource checks and decrements.

Pods the eviction subresource recorded in ``disruptedPods`` are not counted as healthy for two
minutes (upstream's DeletionTimeout) unless they are being deleted; an entry whose pod is still
there after that is dropped with a ``NotDeleted`` warning on the pod, and the budget is looked
at again exactly when the earliest entry expires.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from taintplane.api.decoding import format_time, parse_timestamp
from taintplane.api.intstr import scaled_value
from taintplane.api.selectors import SelectorError, label_selector_from_dict
from taintplane.client import ApiError, Client, object_key, resource
from taintplane.client.events import EventRecorder
from taintplane.client.shared import SharedInformers
from taintplane.client.workqueue import WorkQueue
from taintplane.clock import Clock
from taintplane.controllers.workloads import is_pod_ready

__all__ = ["DisruptionController"]

PDBS = resource("policy", "v1", "poddisruptionbudgets")
REPLICASETS = resource("apps", "v1", "replicasets")
#: How long an eviction's pod may take to start going before it counts again (upstream's).
DELETION_TIMEOUT = timedelta(minutes=2)


def _healthy(pod: dict[str, Any], disrupted: dict[str, str]) -> bool:
    """Counted by a budget: Ready, not being deleted and not just evicted."""
    metadata = pod["metadata"]
    return (
        not metadata.get("deletionTimestamp")
        and metadata["name"] not in disrupted
        and is_pod_ready(pod)
    )


class DisruptionController:
    def __init__(self, client: Client, clock: Clock, informers: SharedInformers) -> None:
        self.client = client
        self.clock = clock
        self.pdbs = informers.of(PDBS)
        self.pods = informers.pods
        self.replicasets = informers.of(REPLICASETS)
        self.queue = WorkQueue(clock, name="disruption")
        self.recorder = EventRecorder(client, clock, "controllermanager")
        self.pdbs.add_handlers(self._enqueue, lambda old, new: self._enqueue(new))
        self.pods.add_handlers(
            self._pod_changed, lambda old, new: self._pod_changed(new), self._pod_changed
        )

    def _enqueue(self, pdb: dict[str, Any]) -> None:
        self.queue.add(object_key(pdb))

    def _pod_changed(self, pod: dict[str, Any]) -> None:
        namespace = pod["metadata"].get("namespace", "")
        labels = pod["metadata"].get("labels") or {}
        for pdb in self.pdbs.cache.values():
            if pdb["metadata"].get("namespace") != namespace:
                continue
            try:
                selector = label_selector_from_dict((pdb.get("spec") or {}).get("selector"))
            except SelectorError:
                continue
            if selector.matches(labels):
                self._enqueue(pdb)

    async def run(self) -> None:
        await self.queue.run(self._sync)

    def _expected_from_controllers(self, pods: list[dict[str, Any]]) -> int | None:
        """Replicas the pods' controllers want (None: a pod without a known controller)."""
        total, seen = 0, set()
        for pod in pods:
            ref = next(
                (r for r in pod["metadata"].get("ownerReferences") or [] if r.get("controller")),
                None,
            )
            if ref is None or ref.get("kind") != "ReplicaSet":
                return None
            if ref.get("uid") in seen:
                continue
            seen.add(ref.get("uid"))
            owner = self.replicasets.get(f"{pod['metadata']['namespace']}/{ref.get('name')}")
            if owner is None:
                return None
            total += int((owner.get("spec") or {}).get("replicas", 1))
        return total

    async def _sync(self, key: str) -> None:
        pdb = self.pdbs.get(key)
        if pdb is None or pdb["metadata"].get("deletionTimestamp"):
            return
        spec = pdb.get("spec") or {}
        namespace = pdb["metadata"]["namespace"]
        try:
            selector = label_selector_from_dict(spec.get("selector"))
        except SelectorError:
            return
        pods = [
            p
            for p in self.pods.cache.values()
            if p["metadata"].get("namespace") == namespace
            and spec.get("selector") is not None
            and selector.matches(p["metadata"].get("labels") or {})
        ]
        now_instant = self.clock.now()
        disrupted, recheck = self._disrupted_pods(pdb, pods, now_instant)
        healthy = sum(1 for p in pods if _healthy(p, disrupted))
        expected: int | None = len(pods)
        if "maxUnavailable" in spec:
            expected = self._expected_from_controllers(pods)
            desired = (
                None
                if expected is None
                else max(
                    0, expected - scaled_value(spec["maxUnavailable"], expected, round_up=True)
                )
            )
        elif isinstance(spec.get("minAvailable"), str):
            expected = self._expected_from_controllers(pods)
            desired = (
                None
                if expected is None
                else scaled_value(spec["minAvailable"], expected, round_up=True)
            )
        else:
            desired = int(spec.get("minAvailable", 0) or 0) if "minAvailable" in spec else len(pods)
        allowed = 0 if desired is None else max(0, healthy - desired)
        now = format_time(now_instant)
        previous = next(
            (
                c
                for c in (pdb.get("status") or {}).get("conditions") or []
                if c.get("type") == "DisruptionAllowed"
            ),
            None,
        )
        status_value = "True" if allowed > 0 else "False"
        condition = {
            "type": "DisruptionAllowed",
            "status": status_value,
            "observedGeneration": pdb["metadata"].get("generation", 1),
            "lastTransitionTime": (
                previous["lastTransitionTime"]
                if previous and previous.get("status") == status_value
                else now
            ),
            "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
            "message": "",
        }
        status = {
            "observedGeneration": pdb["metadata"].get("generation", 1),
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": desired or 0,
            "expectedPods": expected or 0,
            "conditions": [condition],
        }
        if disrupted:
            status["disruptedPods"] = disrupted
        if recheck is not None:
            self.queue.add_after(key, max(0.0, (recheck - now_instant).total_seconds()))
        if (pdb.get("status") or {}) == status:
            return
        body = {**pdb, "status": status}
        try:
            await self.client.update(PDBS, body, subresource="status")
        except ApiError as error:
            if error.code == 409:
                self.queue.add_after(key, 0.01)
            elif error.code != 404:
                raise

    def _disrupted_pods(
        self, pdb: dict[str, Any], pods: list[dict[str, Any]], now: datetime
    ) -> tuple[dict[str, str], datetime | None]:
        """Upstream's buildDisruptedPodMap: the entries still in their two minutes (for pods
        that are not being deleted yet), and when the earliest of them runs out."""
        recorded = (pdb.get("status") or {}).get("disruptedPods") or {}
        kept: dict[str, str] = {}
        recheck: datetime | None = None
        for pod in pods:
            metadata = pod["metadata"]
            if metadata.get("deletionTimestamp") or metadata["name"] not in recorded:
                continue
            since = parse_timestamp(recorded[metadata["name"]])
            if since is None:
                continue
            expires = since + DELETION_TIMEOUT
            # Expired at the instant itself (upstream's healthy count already counts the pod
            # then; its map keeps it a moment longer, which on virtual time would re-check the
            # same instant forever).
            if expires <= now:
                namespace = pdb["metadata"]["namespace"]
                # Upstream names the budget "<namespace>/<namespace>" here; so do we.
                self.recorder.event(
                    pod,
                    "Warning",
                    "NotDeleted",
                    f"Pod was expected by PDB {namespace}/{namespace} to be deleted but it wasn't",
                )
                continue
            kept[metadata["name"]] = recorded[metadata["name"]]
            recheck = expires if recheck is None or expires < recheck else recheck
        return kept, recheck
