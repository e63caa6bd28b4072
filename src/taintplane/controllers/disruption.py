"""The disruption controller: keeps each PodDisruptionBudget's status current, as upstream's.

``currentHealthy`` counts matching pods that are Ready, not being deleted and not just evicted;
``expectedPods`` and ``desiredHealthy`` follow from the budget (disruption_scale.py: the
matching pods for a numeric ``minAvailable``, the pods' controllers' scale for
``maxUnavailable`` and percentages, unmanaged pods left out with an ``UnmanagedPods`` warning);
``disruptionsAllowed`` is what is left (0 while nothing is expected), and the
``DisruptionAllowed`` condition says so (``SufficientPods`` / ``InsufficientPods``). When the
expected count cannot be computed (a controller without a scale, or gone) the budget fails
safe: nothing allowed, ``SyncFailed`` with the reason, the rest of the status untouched. This is
what ``kubectl get pdb`` shows and what the eviction subresource checks and decrements.

Pods the eviction subresource recorded in ``disruptedPods`` are not counted as healthy for two
minutes (upstream's DeletionTimeout) unless they are being deleted; an entry whose pod is still
there after that is dropped with a ``NotDeleted`` warning on the pod, and the budget is looked
at again exactly when the earliest entry expires. A ``DisruptionTarget`` condition on a pod
that has not started going two minutes after it was set is reset to False (upstream's stale
pod disruption cleanup; the kubelet's own ``TerminationByKubelet`` marks excepted).
"""

from __future__ import annotations

import asyncio
import copy
from datetime import datetime, timedelta
from typing import Any

from taintplane.api.conditions import set_status_condition
from taintplane.api.decoding import format_time, parse_timestamp
from taintplane.api.podconditions import find_condition, update_pod_condition
from taintplane.api.selectors import SelectorError, label_selector_from_dict
from taintplane.client import ApiError, Client, object_key, resource
from taintplane.client.events import EventRecorder
from taintplane.client.shared import SharedInformers
from taintplane.client.workqueue import WorkQueue
from taintplane.clock import Clock
from taintplane.controllers.disruption_pods import BudgetPods
from taintplane.controllers.disruption_scale import SyncError, expected_pods, selector_string
from taintplane.controllers.workloads import NAMESPACE_INDEX, namespace_index

__all__ = ["DisruptionController", "disruption_allowed_condition"]

PDBS = resource("policy", "v1", "poddisruptionbudgets")
REPLICASETS = resource("apps", "v1", "replicasets")
DEPLOYMENTS = resource("apps", "v1", "deployments")
PODS = resource("", "v1", "pods")
#: How long an eviction's pod may take to start going before it counts again (upstream's).
DELETION_TIMEOUT = timedelta(minutes=2)
#: How long a DisruptionTarget condition may stand on a pod that does not go (upstream's).
STALE_POD_DISRUPTION_TIMEOUT = timedelta(minutes=2)


def disruption_allowed_condition(
    allowed: bool, reason: str, message: str, observed_generation: int
) -> dict[str, Any]:
    """The DisruptionAllowed condition as UpdateDisruptionAllowedCondition writes it
    (metav1.Condition's observedGeneration is omitempty: a budget never observed has none)."""
    condition: dict[str, Any] = {
        "type": "DisruptionAllowed",
        "status": "True" if allowed else "False",
        "reason": reason,
        "message": message,
    }
    if observed_generation:
        condition["observedGeneration"] = observed_generation
    return condition


class DisruptionController:
    def __init__(self, client: Client, clock: Clock, informers: SharedInformers) -> None:
        self.client = client
        self.clock = clock
        self.pdbs = informers.of(PDBS)
        self.pods = informers.pods
        self.replicasets = informers.of(REPLICASETS)
        self.deployments = informers.of(DEPLOYMENTS)
        for informer in (self.pods, self.pdbs):
            if not informer.has_index(NAMESPACE_INDEX):
                informer.add_index(NAMESPACE_INDEX, namespace_index)
        self._said: dict[tuple[str, str], str] = {}
        self.queue = WorkQueue(clock, name="disruption")
        self.recorder = EventRecorder(client, clock, "controllermanager")
        #: Each budget's matching pods and counts, kept by pod events from its first sync on
        #: (disruption_pods.py): namespace → budget key → its pods.
        self._budgets: dict[str, dict[str, BudgetPods]] = {}
        self.pdbs.add_handlers(
            self._enqueue, lambda old, new: self._enqueue(new), self._pdb_deleted
        )
        # Upstream's recheckQueue: a budget whose evicted pods' grace ends later is synced
        # again then; the key waits here and only moves to the sync queue when due.
        self.recheck = WorkQueue(clock, name="disruption_recheck")
        self.stale = WorkQueue(clock, name="stale_pod_disruption")
        self.pods.add_handlers(self._pod_added, self._pod_updated, self._pod_deleted)

    def _enqueue(self, pdb: dict[str, Any]) -> None:
        self.queue.add(object_key(pdb))

    def _pdb_deleted(self, pdb: dict[str, Any]) -> None:
        budgets = self._budgets.get(pdb["metadata"].get("namespace", ""))
        if budgets is not None:
            budgets.pop(object_key(pdb), None)

    def _track(self, pod: dict[str, Any], gone: bool = False) -> None:
        """Keep the namespace's budgets' pods current (whether the pod matches or not: a
        label change may take it out of one)."""
        budgets = self._budgets.get(pod["metadata"].get("namespace", ""))
        if budgets:
            key = object_key(pod)
            for budget in budgets.values():
                budget.observe(key, None if gone else pod)

    def _pod_added(self, pod: dict[str, Any]) -> None:
        self._track(pod)
        self._pod_seen(pod)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._track(new)
        self._pod_seen(new)

    def _pod_deleted(self, pod: dict[str, Any]) -> None:
        self._track(pod, gone=True)
        self._pod_changed(pod)

    def _budget_pods(self, key: str, pdb: dict[str, Any]) -> BudgetPods | None:
        """The budget's kept pods, built from the namespace index when first needed or when
        its selector changed; None when the selector cannot be parsed."""
        namespace = pdb["metadata"]["namespace"]
        budgets = self._budgets.setdefault(namespace, {})
        found = budgets.get(key)
        if found is None or not found.current_for(pdb):
            found = BudgetPods.build(pdb, self.pods.by_index(NAMESPACE_INDEX, namespace))
            if found is None:
                budgets.pop(key, None)
                return None
            budgets[key] = found
        elif BudgetPods.verify:
            fresh = BudgetPods.build(pdb, self.pods.by_index(NAMESPACE_INDEX, namespace))
            if fresh is None or not fresh.same_as(found):
                BudgetPods.mismatches.append(f"{key}: kept {found!r}, rebuilt {fresh!r}")
        return found

    def _pod_changed(self, pod: dict[str, Any]) -> None:
        namespace = pod["metadata"].get("namespace", "")
        labels = pod["metadata"].get("labels") or {}
        for pdb in self.pdbs.by_index(NAMESPACE_INDEX, namespace):
            try:
                selector = label_selector_from_dict((pdb.get("spec") or {}).get("selector"))
            except SelectorError:
                continue
            if selector.matches(labels):
                self._enqueue(pdb)

    async def run(self) -> None:
        await asyncio.gather(
            self.queue.run(self._sync),
            self.recheck.run(self._recheck_due),
            self.stale.run(self._sync_stale),
        )

    async def _recheck_due(self, key: str) -> None:
        self.queue.add(key)

    # ---- stale DisruptionTarget conditions ---------------------------------------------------

    def _pod_seen(self, pod: dict[str, Any]) -> None:
        self._pod_changed(pod)
        wait = self._stale_after(pod)
        if wait is not None:
            self.stale.add_after(object_key(pod), wait)

    def _stale_after(self, pod: dict[str, Any]) -> float | None:
        """Upstream's nonTerminatingPodHasStaleDisruptionCondition: a pod marked as a
        disruption target that is not going (nor finished) two minutes later is not one; the
        seconds until then, or None. The kubelet's own marks never go stale."""
        if pod["metadata"].get("deletionTimestamp"):
            return None
        condition = find_condition(pod, "DisruptionTarget")
        if (
            condition is None
            or condition.get("status") != "True"
            or condition.get("reason") == "TerminationByKubelet"
            or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        ):
            return None
        since = parse_timestamp(condition.get("lastTransitionTime"))
        if since is None:
            return 0.0  # Go's zero time: set longer ago than any timeout
        waited = (self.clock.now() - since).total_seconds()
        return max(0.0, STALE_POD_DISRUPTION_TIMEOUT.total_seconds() - waited)

    async def _sync_stale(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is None:
            return
        wait = self._stale_after(pod)
        if wait is None:
            return
        if wait > 0:
            self.stale.add_after(key, wait)
            return
        reset = copy.deepcopy(pod)
        if not update_pod_condition(
            reset,
            {"type": "DisruptionTarget", "status": "False"},
            format_time(self.clock.now()),
        ):
            return
        try:
            await self.client.update(PODS, reset, subresource="status")
        except ApiError as error:
            if error.code == 409:
                self.stale.add_after(key, 0.01)
            elif error.code != 404:
                raise

    def _lookup(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        informer = {"replicasets": self.replicasets, "deployments": self.deployments}.get(plural)
        return None if informer is None else informer.get(f"{namespace}/{name}")

    def _event_once(self, pdb: dict[str, Any], type_: str, reason: str, message: str) -> None:
        """A budget's event, recorded again only when its message changes (upstream records
        it on every sync and client-go's correlator folds the repeats into a count)."""
        key = (pdb["metadata"].get("uid", ""), reason)
        if self._said.get(key) == message:
            return
        self._said[key] = message
        self.recorder.event(pdb, type_, reason, message)

    async def _sync(self, key: str) -> None:
        pdb = self.pdbs.get(key)
        if pdb is None:
            budgets = self._budgets.get(key.split("/", 1)[0])
            if budgets is not None:
                budgets.pop(key, None)
            return
        if pdb["metadata"].get("deletionTimestamp"):
            return
        spec = pdb.get("spec") or {}
        pods = self._budget_pods(key, pdb)
        if pods is None:
            return  # a selector that cannot be parsed
        if not pods.pods:
            self._event_once(pdb, "Normal", "NoPods", "No matching pods found")
        try:
            # One pod per controller is what the scale-based count looks at.
            expected = expected_pods(
                pdb, pods.representatives(), self._lookup, count=len(pods.pods)
            )
        except SyncError as error:
            self._event_once(
                pdb,
                "Warning",
                "CalculateExpectedPodCountFailed",
                f"Failed to calculate the number of expected pods: {error}",
            )
            now_text = format_time(self.clock.now())
            await self._write(key, pdb, self._fail_safe(pdb, str(error), now_text))
            return
        if expected.unmanaged:
            self._event_once(
                pdb,
                "Warning",
                "UnmanagedPods",
                "Pods selected by this PodDisruptionBudget (selector: "
                f"{selector_string(spec.get('selector'))}) were found to be unmanaged. As a "
                "result, the status of the PDB cannot be calculated correctly, which may result "
                'in undefined behavior. To account for these pods please set ".spec.minAvailable" '
                "field of the PDB to an integer value.",
            )
        now = self.clock.now()
        disrupted, recheck = self._disrupted_pods(pdb, pods, now)
        healthy = pods.healthy(disrupted, pdb["metadata"]["namespace"])
        allowed = healthy - expected.desired
        if expected.count <= 0 or allowed <= 0:
            allowed = 0  # a budget whose pods are not counted yet is safe
        status = {
            "observedGeneration": pdb["metadata"].get("generation", 1),
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": expected.desired,
            "expectedPods": expected.count,
        }
        if disrupted:
            status["disruptedPods"] = disrupted
        # UpdateDisruptionAllowedCondition.
        status["conditions"] = set_status_condition(
            (pdb.get("status") or {}).get("conditions") or [],
            disruption_allowed_condition(
                allowed > 0,
                "SufficientPods" if allowed > 0 else "InsufficientPods",
                "",
                status["observedGeneration"],
            ),
            format_time(now),
        )
        if recheck is not None:
            self.recheck.add_after(key, max(0.0, (recheck - now).total_seconds()))
        await self._write(key, pdb, status)

    @staticmethod
    def _fail_safe(pdb: dict[str, Any], message: str, now: str) -> dict[str, Any]:
        """Upstream's failSafe: nothing allowed, the reason in the condition; the rest of the
        status (observedGeneration included) as it was."""
        status = dict(pdb.get("status") or {})
        status["disruptionsAllowed"] = 0
        status["conditions"] = set_status_condition(
            status.get("conditions") or [],
            disruption_allowed_condition(
                False, "SyncFailed", message, int(status.get("observedGeneration") or 0)
            ),
            now,
        )
        return status

    async def _write(self, key: str, pdb: dict[str, Any], status: dict[str, Any]) -> None:
        if (pdb.get("status") or {}) == status:
            return
        try:
            await self.client.update(PDBS, {**pdb, "status": status}, subresource="status")
        except ApiError as error:
            if error.code == 409:
                self.queue.add_after(key, 0.01)
            elif error.code != 404:
                raise

    def _disrupted_pods(
        self, pdb: dict[str, Any], pods: BudgetPods, now: datetime
    ) -> tuple[dict[str, str], datetime | None]:
        """Upstream's buildDisruptedPodMap: the entries still in their two minutes (for pods
        that are not being deleted yet), and when the earliest of them runs out. Looked up
        by name: the map is a few entries, the pods may be thousands."""
        recorded = (pdb.get("status") or {}).get("disruptedPods") or {}
        kept: dict[str, str] = {}
        recheck: datetime | None = None
        namespace = pdb["metadata"]["namespace"]
        for name in recorded:
            pod = pods.pods.get(f"{namespace}/{name}")
            if pod is None:
                continue
            metadata = pod["metadata"]
            if metadata.get("deletionTimestamp"):
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
