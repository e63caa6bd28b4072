"""One sync of one DaemonSet (upstream's ``syncDaemonSet``, ``manage``, ``syncNodes``,
``rollingUpdate`` and ``updateDaemonSetStatus``): the current revision first, then pods
created and deleted, the rollout advanced, old revisions trimmed and the status written.

Each pass reads the DaemonSet's kept per-node results (``daemonset_nodes``), brought up to date
for the nodes that changed since the last sync, instead of visiting every node."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from taintplane.client import ApiError, resource
from taintplane.clock import Clock
from taintplane.controllers import daemonset_rollout as rollout
from taintplane.controllers import daemonset_util as util
from taintplane.controllers.daemonset_history import revision_hash
from taintplane.controllers.daemonset_kept import KeptResults
from taintplane.controllers.daemonset_nodes import COUNTS, Manage, creation_order

if TYPE_CHECKING:
    from taintplane.controllers.daemonset import DaemonSetController

__all__ = ["DaemonSetSync", "Expectations"]

log = logging.getLogger(__name__)

PODS = resource("", "v1", "pods")
DAEMONSETS = resource("apps", "v1", "daemonsets")
BURST_REPLICAS = 250
SLOW_START_INITIAL_BATCH = 1
STATUS_UPDATE_RETRIES = 1
EXPECTATIONS_TIMEOUT = 300.0  # upstream's ExpectationsTimeout: a lost watch event heals
STATUS_FIELDS = (*COUNTS, "numberUnavailable")
#: DaemonSetStatus' counts that are ``omitempty`` in Go: a zero is not written at all.
OMITTED_WHEN_ZERO = ("updatedNumberScheduled", "numberAvailable", "numberUnavailable")


@dataclass
class _Expected:
    adds: int
    deletes: int
    since: datetime


@dataclass
class Expectations:
    """``ControllerExpectations``: creates and deletes a DaemonSet waits to see."""

    clock: Clock
    _items: dict[str, _Expected] = field(default_factory=dict)

    def set(self, key: str, adds: int, deletes: int) -> None:
        self._items[key] = _Expected(adds, deletes, self.clock.now())

    def satisfied(self, key: str) -> bool:
        found = self._items.get(key)
        if found is None:
            return True
        if found.adds <= 0 and found.deletes <= 0:
            return True
        return self.clock.now() - found.since > timedelta(seconds=EXPECTATIONS_TIMEOUT)

    def creation_observed(self, key: str) -> None:
        if key in self._items:
            self._items[key].adds -= 1

    def deletion_observed(self, key: str) -> None:
        if key in self._items:
            self._items[key].deletes -= 1

    def lower(self, key: str, adds: int) -> None:
        if key in self._items:
            self._items[key].adds -= adds

    def delete(self, key: str) -> None:
        self._items.pop(key, None)


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


class DaemonSetSync:
    def __init__(self, controller: DaemonSetController) -> None:
        self.c = controller
        #: Every DaemonSet's per-node results, kept between syncs.
        self.kept = KeptResults(controller, self._pure_manage)

    @staticmethod
    def key(ds: dict[str, Any]) -> str:
        return f"{ds['metadata']['namespace']}/{ds['metadata']['name']}"

    async def sync(self, key: str) -> None:
        c = self.c
        ds = c.daemonsets.get(key)
        if ds is None:
            c.expectations.delete(key)
            return
        ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", **ds}
        selector = (ds.get("spec") or {}).get("selector")
        if (
            selector is not None
            and not selector.get("matchLabels")
            and not selector.get("matchExpressions")
        ):
            c.recorder.event(
                ds,
                "Warning",
                "SelectingAll",
                "This daemon set is selecting all pods. A non-empty selector is required.",
            )
            return
        if ds["metadata"].get("deletionTimestamp"):
            return
        # The current revision's hash, not one computed here: after a rollback it is the old
        # revision's, which the pods of that template still carry.
        current, old = await c.history.construct(ds)
        hash_ = revision_hash(current)
        if not c.expectations.satisfied(key):
            await self.update_status(ds, hash_, observed_generation=False)
            return
        error: Exception | None = None
        try:
            await self.manage(ds, hash_)
            if c.expectations.satisfied(key) and self._rolling(ds):
                await self.rolling_update(ds, hash_)
            await c.history.cleanup(ds, old)
        except ApiError as failure:
            error = failure
        await self.update_status(ds, hash_, observed_generation=True)
        if error is not None:
            raise error

    @staticmethod
    def _rolling(ds: dict[str, Any]) -> bool:
        strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
        return bool(strategy.get("type", "RollingUpdate") == "RollingUpdate")

    # ---- manage -----------------------------------------------------------------------------

    async def manage(self, ds: dict[str, Any], hash_: str) -> None:
        c = self.c
        kept = self.kept.results(ds, hash_)
        create: list[str] = []
        delete: list[str] = []
        if kept.acting:
            # In the node cache's order, as the full pass visited the nodes.
            for name in [n for n in c.nodes.cache if n in kept.acting]:
                result = kept.results[name]
                if result.manage is None:  # a failed or succeeded pod: events, back-off
                    more, fewer = self.pods_should_be_on_node(
                        ds, hash_, name, result.should_run, True, c.pods_on_node(ds, name)
                    )
                else:
                    more = [name] if result.manage[0] else []
                    fewer = list(result.manage[1])
                create += more
                delete += fewer
            gone = {n for n in kept.acting if n not in c.nodes.cache}
            if gone:
                # Nodes that are gone, in the order their pods come (as the full pass had them).
                order = dict.fromkeys(
                    t for p in c.owned_pods(ds) if (t := util.target_node_name(p)) in gone
                )
                for name in order:
                    manage = kept.results[name].manage
                    delete += list(manage[1]) if manage is not None else []
        await self.sync_nodes(ds, delete, create, hash_)

    def _pure_manage(
        self,
        ds: dict[str, Any],
        hash_: str,
        name: str,
        should_run: bool,
        should_continue: bool,
        pods: list[dict[str, Any]],
    ) -> Manage:
        more, fewer = self.pods_should_be_on_node(
            ds, hash_, name, should_run, should_continue, pods
        )
        return bool(more), tuple(fewer)

    def pods_should_be_on_node(
        self,
        ds: dict[str, Any],
        hash_: str,
        name: str,
        should_run: bool,
        should_continue: bool,
        pods: list[dict[str, Any]],
    ) -> tuple[list[str], list[str]]:
        """``podsShouldBeOnNode``: nodes to create a pod on ([name] or []) and pods to delete.
        Without side effects unless a live pod failed or succeeded (events, back-off)."""
        c = self.c
        if should_run and not pods:
            return [name], []
        if not pods:
            return [], []
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        if not should_continue:
            return [], [p["metadata"]["name"] for p in live]
        delete: list[str] = []
        running: list[dict[str, Any]] = []
        for pod in live:
            pod_name, namespace = pod["metadata"]["name"], pod["metadata"]["namespace"]
            if _phase(pod) == "Failed":
                # The controller often fights a kubelet that rejects the pod: back off.
                backoff_key = (
                    f"{ds['metadata'].get('uid')}/"
                    f"{(ds.get('status') or {}).get('observedGeneration') or 0}/{name}"
                )
                now = c.clock.now()
                if c.backoff.in_backoff_since_update(backoff_key, now):
                    c.enqueue_after(ds, c.backoff.get(backoff_key))
                    continue
                c.backoff.next(backoff_key, now)
                message = (
                    f"Found failed daemon pod {namespace}/{pod_name} on node {name}, "
                    "will try to kill it"
                )
                c.recorder.event(ds, "Warning", "FailedDaemonPod", message)
                delete.append(pod_name)
            elif _phase(pod) == "Succeeded":
                message = (
                    f"Found succeeded daemon pod {namespace}/{pod_name} on node {name}, "
                    "will try to delete it"
                )
                c.recorder.event(ds, "Normal", "SucceededDaemonPod", message)
                delete.append(pod_name)
            else:
                running.append(pod)
        running.sort(key=creation_order)
        if not util.allows_surge(ds):
            # Every running pod but the oldest goes.
            return [], delete + [p["metadata"]["name"] for p in running[1:]]
        if not running:
            # Surging keeps at least one pod that is not being deleted on the node.
            return ([name] if should_run else []), delete
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        excess = rollout.excess_while_surging(running, hash_, min_ready, c.clock.now())
        return [], delete + excess

    async def sync_nodes(
        self, ds: dict[str, Any], delete: list[str], create: list[str], hash_: str
    ) -> None:
        c = self.c
        key = self.key(ds)
        creates, deletes = min(len(create), BURST_REPLICAS), min(len(delete), BURST_REPLICAS)
        c.expectations.set(key, creates, deletes)
        errors: list[ApiError] = []
        template = util.pod_template(ds, hash_)
        position, batch = 0, min(creates, SLOW_START_INITIAL_BATCH)
        # Slow start: batches of 1, 2, 4, … stop at the first batch with an error.
        while position < creates:
            nodes = create[position : position + batch]
            results = await asyncio.gather(*(self._create(ds, template, n) for n in nodes))
            failed = [e for e in results if e is not None]
            for error in failed:
                c.expectations.creation_observed(key)
                errors.append(error)
            position += batch
            if failed and position < creates:
                c.expectations.lower(key, creates - position)
                break
            batch = min(2 * batch, creates - position)
        results = await asyncio.gather(*(self._delete(ds, n) for n in delete[:deletes]))
        for result in results:
            if result is not None:
                c.expectations.deletion_observed(key)
                if result.code != 404:
                    errors.append(result)
        if errors:
            raise errors[0]

    async def _create(
        self, ds: dict[str, Any], template: dict[str, Any], node: str
    ) -> ApiError | None:
        meta = ds["metadata"]
        spec = dict(template.get("spec") or {})
        spec["affinity"] = util.replace_node_name_affinity(spec.get("affinity"), node)
        tmeta = template.get("metadata") or {}
        pod_meta: dict[str, Any] = {
            "generateName": f"{meta['name']}-",
            "namespace": meta["namespace"],
            "labels": dict(tmeta.get("labels") or {}),
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "name": meta["name"],
                    "uid": meta.get("uid", ""),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        }
        for extra in ("annotations", "finalizers"):
            if tmeta.get(extra):
                pod_meta[extra] = tmeta[extra]
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}
        try:
            created = await self.c.client.create(PODS, pod, namespace=meta["namespace"])
        except ApiError as error:
            if error.status.get("details", {}).get("causes") and any(
                cause.get("reason") == "NamespaceTerminating"
                for cause in error.status["details"]["causes"]
            ):
                return None  # the namespace is going: every create would fail
            self.c.recorder.event(ds, "Warning", "FailedCreate", f"Error creating: {error}")
            return error
        name = created["metadata"]["name"]
        self.c.recorder.event(ds, "Normal", "SuccessfulCreate", f"Created pod: {name}")
        return None

    async def _delete(self, ds: dict[str, Any], name: str) -> ApiError | None:
        try:
            await self.c.client.delete(PODS, name, ds["metadata"]["namespace"])
        except ApiError as error:
            if error.code != 404:
                self.c.recorder.event(ds, "Warning", "FailedDelete", f"Error deleting: {error}")
            return error
        self.c.recorder.event(ds, "Normal", "SuccessfulDelete", f"Deleted pod: {name}")
        return None

    # ---- rolling update -----------------------------------------------------------------------

    async def rolling_update(self, ds: dict[str, Any], hash_: str) -> None:
        """``rollingUpdate`` over the kept results (``Plan``'s pass, from its sums)."""
        kept = self.kept.results(ds, hash_)
        wanted = kept.counts[0]  # the nodes that should run a pod
        max_surge = util.surge_count(ds, wanted)
        max_unavailable = util.unavailable_count(ds, wanted)
        if wanted and not max_surge and not max_unavailable:
            max_unavailable = 1  # neither set would never progress: upstream's default
        if not max_surge:
            await self.sync_nodes(ds, kept.without_surge(max_unavailable), [], hash_)
            return
        # A node that is gone should not run a pod (upstream fails the sync on it instead).
        surge = kept.with_surge(max_surge, wanted)
        await self.sync_nodes(ds, surge.delete, surge.create, hash_)

    # ---- status -------------------------------------------------------------------------------

    async def update_status(
        self, ds: dict[str, Any], hash_: str, *, observed_generation: bool
    ) -> None:
        c = self.c
        counts = dict(zip(COUNTS, self.kept.results(ds, hash_).counts, strict=True))
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        counts["numberUnavailable"] = counts["desiredNumberScheduled"] - counts["numberAvailable"]
        await self._store_status(ds, counts, observed_generation)
        if min_ready > 0 and counts["numberReady"] != counts["numberAvailable"]:
            c.enqueue_after(ds, min_ready)

    async def _store_status(
        self, ds: dict[str, Any], counts: dict[str, int], observed_generation: bool
    ) -> None:
        status = ds.get("status") or {}
        generation = int(ds["metadata"].get("generation") or 0)
        if all(int(status.get(k) or 0) == v for k, v in counts.items()) and (
            int(status.get("observedGeneration") or 0) >= generation
        ):
            return
        target = ds
        for attempt in range(STATUS_UPDATE_RETRIES + 1):
            merged = {**(target.get("status") or {}), **counts}
            if observed_generation:
                merged["observedGeneration"] = generation
            body = {**target, "status": _omit_zero(merged)}
            try:
                await self.c.client.update(DAEMONSETS, body, subresource="status")
                return
            except ApiError:
                if attempt >= STATUS_UPDATE_RETRIES:
                    raise
            meta = ds["metadata"]
            fresh = await self.c.get_daemonset(meta["namespace"], meta["name"])
            if fresh is None:
                return
            target = fresh


def _omit_zero(status: dict[str, Any]) -> dict[str, Any]:
    """The status as kube-apiserver encodes it: an omitempty count (and observedGeneration)
    at zero is absent, so a DaemonSet that places no pod reads as upstream's."""
    return {
        k: v
        for k, v in status.items()
        if not (k in (*OMITTED_WHEN_ZERO, "observedGeneration") and not v)
    }
