"""The ``pods/eviction`` subresource (what ``kubectl drain`` posts), as kube-apiserver's
EvictionREST does.

- A pod that is Succeeded, Failed, Pending or already being deleted is deleted at once; its
  PodDisruptionBudget is not consulted.
- Otherwise its budget (at most one may match) is checked *and decremented* in the budget's
  status, under optimistic concurrency: ``disruptionsAllowed`` goes down by one and the pod is
  recorded in ``disruptedPods``, so the disruption controller does not count it as healthy
  while it goes and two concurrent evictions cannot both take the last disruption. A status
  the controller has not caught up with (``observedGeneration`` behind), no disruptions left,
  a negative count or too many unconfirmed evictions refuse the eviction (429 or 403, with
  upstream's messages).
- A pod that is not Ready may go without using the budget when the budget's
  ``unhealthyPodEvictionPolicy`` is AlwaysAllow, or (IfHealthyBudget, the default) while the
  budget is met; the deletion then names the pod's resourceVersion, so a pod that became
  Ready meanwhile is answered 429 rather than deleted.
- Before the deletion the pod gets the ``DisruptionTarget`` condition (reason
  ``EvictionByEvictionAPI``).

- A write that conflicts with another (the pod's deletion, the budget's status) is tried
  again 500 ms later (up to 10 % more), 20 attempts in all (upstream's EvictionsRetry), on
  the wall clock: the request is held open meanwhile.

``dryRun`` (in the query or in ``deleteOptions``) checks everything and changes nothing.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

from taintplane.api.conditions import set_status_condition
from taintplane.api.decoding import format_time
from taintplane.api.podconditions import is_pod_ready, update_pod_condition
from taintplane.api.selectors import SelectorError, label_selector_from_dict
from taintplane.apiserver.admission_hook import admitted
from taintplane.apiserver.registry import Registry
from taintplane.apiserver.requestinfo import RequestInfo
from taintplane.apiserver.status import APIError, success
from taintplane.apiserver.strict_decoding import NO_NOTES, DecodeNotes
from taintplane.apiserver.subresource_body import EVICTION, decode_body
from taintplane.backoff import Backoff
from taintplane.clock import Clock, RealClock

__all__ = ["evict", "evictions_retry"]

_T = TypeVar("_T")

PDB_VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
#: Upstream's MaxDisruptedPodSize: evictions the disruption controller has not yet confirmed.
MAX_DISRUPTED_POD_SIZE = 2000


def evictions_retry(rng: random.Random | None = None) -> Backoff:
    """Upstream's EvictionsRetry: 20 attempts on conflicts, 500 ms apart (jitter 0.1)."""
    return Backoff(0.5, factor=1.0, jitter=0.1, steps=20, rng=rng)


async def _retry_on_conflict(
    clock: Clock, attempt: Callable[[], Awaitable[_T]], *, retry: bool = True
) -> _T:
    """``retry.OnError(EvictionsRetry, IsConflict, …)``: the last conflict is the answer
    once the attempts run out."""
    backoff = evictions_retry()
    while True:
        try:
            return await attempt()
        except APIError as error:
            if not retry or error.status.get("reason") != "Conflict" or backoff.steps <= 1:
                raise
        await clock.sleep(backoff.step())


async def evict(
    registry: Registry,
    info: RequestInfo,
    body: Any,
    *,
    dry_run_query: bool = False,
    clock: Clock | None = None,
    field_validation: str = "Warn",
    notes: DecodeNotes = NO_NOTES,
) -> dict[str, Any]:
    """``clock`` paces the retries on conflicts: the request is held open meanwhile, so it
    is the wall clock (the handlers' request clock), also under virtual time."""
    decode_body(body, EVICTION, registry.scheme, field_validation=field_validation, notes=notes)
    _check_body(info, body)
    # The Eviction's own admission (CREATE on pods/eviction: NodeRestriction lets a node
    # evict only its pods); what follows writes below admission, as EvictionREST does.
    await registry.admit("CREATE", info.resource, info.namespace, body, None, "eviction")
    await registry.validate_admission(
        "CREATE", info.resource, info.namespace, body, None, "eviction"
    )
    with admitted():
        return await _evict(registry, clock or RealClock(), info, body, dry_run_query)


async def _evict(
    registry: Registry, clock: Clock, info: RequestInfo, body: Any, dry_run_query: bool
) -> dict[str, Any]:
    options = (body or {}).get("deleteOptions") if isinstance(body, dict) else None
    options = dict(options) if isinstance(options, dict) else {}
    dry_run = _dry_run(options, dry_run_query)
    preconditions = dict(options.get("preconditions") or {})
    client_pinned_version = bool(preconditions.get("resourceVersion"))

    async def without_budget() -> dict[str, Any] | None:
        """Pods that already caused their disruption (terminal, pending, going) are deleted
        at once, a pending one pinned to the version looked at so one that changed meanwhile
        is looked at again; any other pod is returned for the budget's check."""
        pod = await registry.get(info.resource, info.namespace, info.name)
        if not _can_ignore_budget(pod):
            return pod
        pinned = preconditions
        if not client_pinned_version and _should_enforce_version(pod):
            pinned = _pinned(preconditions, pod)
        await _condition_and_delete(registry, info, options, pinned, dry_run)
        return None

    found = await _retry_on_conflict(clock, without_budget, retry=not client_pinned_version)
    if found is None:
        return success(201)
    pod = found

    budget = await _budget_for(registry, info, pod)
    use_version = False
    if budget is not None:
        policy = (budget.get("spec") or {}).get("unhealthyPodEvictionPolicy")
        status = budget.get("status") or {}
        if not is_pod_ready(pod) and (
            policy == "AlwaysAllow"
            or (
                int(status.get("currentHealthy") or 0) >= int(status.get("desiredHealthy") or 0)
                and int(status.get("desiredHealthy") or 0) > 0
            )
        ):
            use_version = True
        else:
            await _check_and_decrement(registry, clock, info, budget, dry_run)

    pinned = preconditions
    if use_version and not client_pinned_version:
        pinned = _pinned(preconditions, pod)
    try:
        await _condition_and_delete(registry, info, options, pinned, dry_run)
    except APIError as error:
        if error.status.get("reason") == "Conflict" and use_version and not client_pinned_version:
            assert budget is not None
            raise _still_processing(budget["metadata"]["name"]) from error
        raise
    return success(201)


def _check_body(info: RequestInfo, body: Any) -> None:
    """The create handler's checks after decoding (the namespace may be left out), then
    EvictionREST.Create's: the Eviction names the pod of the URL."""
    metadata = body.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    namespace = metadata.get("namespace")
    if namespace and namespace != info.namespace:
        raise APIError.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    if (metadata.get("name") or "") != info.name:
        raise APIError.bad_request("name in URL does not match name in Eviction object")


def _dry_run(options: dict[str, Any], from_query: bool) -> bool:
    """The query's dryRun and deleteOptions.dryRun (upstream's propagateDryRun: either one)."""
    in_body = options.get("dryRun") or []
    if not isinstance(in_body, list) or any(v != "All" for v in in_body):
        raise APIError.bad_request(
            f'dryRun: Unsupported value: "{in_body}": supported values: "All"'
        )
    return from_query or bool(in_body)


def _can_ignore_budget(pod: dict[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or bool(
        pod["metadata"].get("deletionTimestamp")
    )


def _should_enforce_version(pod: dict[str, Any]) -> bool:
    """shouldEnforceResourceVersion: a pending pod is deleted only as it was looked at (it
    may have become ready meanwhile); a finished or going one as it is."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def _pinned(preconditions: dict[str, Any], pod: dict[str, Any]) -> dict[str, Any]:
    return {**preconditions, "resourceVersion": pod["metadata"]["resourceVersion"]}


async def _budget_for(
    registry: Registry, info: RequestInfo, pod: dict[str, Any]
) -> dict[str, Any] | None:
    """The one budget whose selector matches the pod (a nil or empty selector matches
    nothing here, as upstream's getPodDisruptionBudgets)."""
    pdb_type = registry.scheme.lookup("policy", "v1", "poddisruptionbudgets")
    assert pdb_type is not None
    labels = pod["metadata"].get("labels") or {}
    budgets = []
    for pdb in (await registry.list(pdb_type, info.namespace)).items:
        raw = (pdb.get("spec") or {}).get("selector")
        try:
            selector = label_selector_from_dict(raw)
        except SelectorError:
            continue
        if (
            raw
            and (raw.get("matchLabels") or raw.get("matchExpressions"))
            and selector.matches(labels)
        ):
            budgets.append(pdb)
    if len(budgets) > 1:
        # Upstream answers a Status (not an error): code 500, no reason.
        raise APIError(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": "This pod has more than one PodDisruptionBudget, which the eviction "
                "subresource does not support.",
                "code": 500,
            }
        )
    return budgets[0] if budgets else None


async def _check_and_decrement(
    registry: Registry, clock: Clock, info: RequestInfo, budget: dict[str, Any], dry_run: bool
) -> None:
    """Upstream's checkAndDecrement under RetryOnConflict(EvictionsRetry): the status is
    written over the version read, and a conflict reads the budget again after 500 ms."""
    pdb_type = registry.scheme.lookup("policy", "v1", "poddisruptionbudgets")
    assert pdb_type is not None
    name = budget["metadata"]["name"]
    current = budget
    refresh = False

    async def attempt() -> None:
        nonlocal current, refresh
        if refresh:
            current = await registry.get(pdb_type, info.namespace, name)
        decremented = _decrement(copy.deepcopy(current), info.name, registry.clock.now())
        if dry_run:
            return
        try:
            await registry.update(
                pdb_type,
                info.namespace,
                name,
                decremented,
                subresource="status",
                manager="kube-apiserver",
            )
        except APIError:
            refresh = True
            raise

    await _retry_on_conflict(clock, attempt)


def _decrement(pdb: dict[str, Any], pod_name: str, when: datetime) -> dict[str, Any]:
    """The checks, then one disruption taken and the pod recorded (refusals raised)."""
    name = pdb["metadata"]["name"]
    now = format_time(when)
    status = pdb.setdefault("status", {})
    if int(status.get("observedGeneration") or 0) < int(pdb["metadata"].get("generation") or 0):
        raise _still_processing(name)
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed < 0:
        raise _forbidden(name, "pdb disruptions allowed is negative")
    if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_POD_SIZE:
        raise _forbidden(
            name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        )
    if allowed == 0:
        raise APIError.make(
            429,
            "TooManyRequests",
            PDB_VIOLATION,
            {
                "causes": [
                    {
                        "reason": "DisruptionBudget",
                        "message": f"The disruption budget {name} needs "
                        f"{int(status.get('desiredHealthy') or 0)} healthy pods and has "
                        f"{int(status.get('currentHealthy') or 0)} currently",
                    }
                ]
            },
        )
    status["disruptionsAllowed"] = allowed - 1
    if allowed - 1 == 0:
        _set_condition(status, now)
    status["disruptedPods"] = {**(status.get("disruptedPods") or {}), pod_name: now}
    return pdb


def _set_condition(status: dict[str, Any], now: str) -> None:
    """UpdateDisruptionAllowedCondition once no disruption is left (observedGeneration is
    omitempty in metav1.Condition)."""
    condition: dict[str, Any] = {
        "type": "DisruptionAllowed",
        "status": "False",
        "reason": "InsufficientPods",
        "message": "",
    }
    if status.get("observedGeneration"):
        condition["observedGeneration"] = int(status["observedGeneration"])
    status["conditions"] = set_status_condition(status.get("conditions") or [], condition, now)


async def _condition_and_delete(
    registry: Registry,
    info: RequestInfo,
    options: dict[str, Any],
    preconditions: dict[str, Any],
    dry_run: bool,
) -> None:
    """addConditionAndDeletePod: the DisruptionTarget condition on the latest pod (checked
    against the preconditions), then the deletion pinned to the version that wrote it."""
    if not dry_run:
        latest = await registry.get(info.resource, info.namespace, info.name)
        _check_preconditions(latest, preconditions)
        version = preconditions.get("resourceVersion")
        now = format_time(registry.clock.now())

        def mark(pod: dict[str, Any]) -> dict[str, Any]:
            if version:
                # Pinned: written only over the version the preconditions were checked on.
                pod["metadata"]["resourceVersion"] = version
            update_pod_condition(
                pod,
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": "EvictionByEvictionAPI",
                    "message": "Eviction API: evicting",
                },
                now,
            )
            return pod

        updated = await registry.guaranteed_update(
            info.resource, info.namespace, info.name, mark, subresource="status"
        )
        if version:
            # We wrote the pod ourselves: the deletion is pinned to our own write.
            preconditions = {
                **preconditions,
                "resourceVersion": updated["metadata"]["resourceVersion"],
            }
    await registry.delete(
        info.resource,
        info.namespace,
        info.name,
        grace_period=options.get("gracePeriodSeconds"),
        preconditions=preconditions,
        dry_run=dry_run,
    )


def _check_preconditions(pod: dict[str, Any], preconditions: dict[str, Any]) -> None:
    """The deletion's preconditions against the latest pod, with upstream's messages."""
    metadata = pod["metadata"]
    uid, version = preconditions.get("uid"), preconditions.get("resourceVersion")
    if uid and uid != metadata.get("uid"):
        why = (
            f"the UID in the precondition ({uid}) does not match the UID in record "
            f"({metadata.get('uid')}). The object might have been deleted and then recreated"
        )
    elif version and version != metadata["resourceVersion"]:
        why = (
            f"the ResourceVersion in the precondition ({version}) does not match the "
            f"ResourceVersion in record ({metadata['resourceVersion']}). The object might have "
            "been modified"
        )
    else:
        return
    raise APIError.make(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on Pod "{metadata["name"]}": {why}',
        {"name": metadata["name"], "kind": "Pod"},
    )


def _still_processing(name: str) -> APIError:
    """createTooManyRequestsError: retry after 10 s."""
    return APIError.make(
        429,
        "TooManyRequests",
        PDB_VIOLATION,
        {
            "causes": [
                {
                    "reason": "DisruptionBudget",
                    "message": f"The disruption budget {name} is still being processed by the "
                    "server.",
                }
            ],
            "retryAfterSeconds": 10,
        },
    )


def _forbidden(name: str, why: str) -> APIError:
    return APIError.make(
        403,
        "Forbidden",
        f'poddisruptionbudget.policy "{name}" is forbidden: {why}',
        {"name": name, "group": "policy", "kind": "poddisruptionbudget"},
    )
