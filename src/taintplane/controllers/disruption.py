"""The disruption controller: keeps each PodDisruptionBudget's status current.

``currentHealthy`` counts matching pods that are Ready and not being deleted;
``expectedPods`` is the number of matching pods, or — for ``maxUnavailable`` and percentage
``minAvailable``, as upstream — the replicas their controllers (ReplicaSets, Deployments)
ask for; ``desiredHealthy`` follows from the budget (percentages: minAvailable rounds up,
maxUnavailable rounds up what may be unavailable); ``disruptionsAllowed`` is what is left, and
the ``DisruptionAllowed`` condition says so (``SufficientPods`` / ``InsufficientPods``). This
is what ``kubectl get pdb`` shows; the eviction subresource checks budgets itself.
"""

from __future__ import annotations

from typing import Any

from taintplane.api.decoding import format_time
from taintplane.api.intstr import scaled_value
from taintplane.api.selectors import SelectorError, label_selector_from_dict
from taintplane.client import ApiError, Client, object_key, resource
from taintplane.client.shared import SharedInformers
from taintplane.client.workqueue import WorkQueue
from taintplane.clock import Clock
from taintplane.controllers.workloads import is_pod_ready

__all__ = ["DisruptionController"]

PDBS = resource("policy", "v1", "poddisruptionbudgets")
REPLICASETS = resource("apps", "v1", "replicasets")


def _healthy(pod: dict[str, Any]) -> bool:
    """Counted by a budget: Ready and not being deleted."""
    return not pod["metadata"].get("deletionTimestamp") and is_pod_ready(pod)


class DisruptionController:
    def __init__(self, client: Client, clock: Clock, informers: SharedInformers) -> None:
        self.client = client
        self.clock = clock
        self.pdbs = informers.of(PDBS)
        self.pods = informers.pods
        self.replicasets = informers.of(REPLICASETS)
        self.queue = WorkQueue(clock, name="disruption")
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
        healthy = sum(1 for p in pods if _healthy(p))
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
        now = format_time(self.clock.now())
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
        old = {k: v for k, v in (pdb.get("status") or {}).items() if k != "disruptedPods"}
        if old == status:
            return
        body = {**pdb, "status": {**(pdb.get("status") or {}), **status}}
        try:
            await self.client.update(PDBS, body, subresource="status")
        except ApiError as error:
            if error.code == 409:
                self.queue.add_after(key, 0.01)
            elif error.code != 404:
                raise
