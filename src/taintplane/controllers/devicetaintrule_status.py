"""The ``EvictionInProgress`` condition of a DeviceTaintRule, worded as upstream's
``devicetainteviction`` controller words it (Kubernetes 1.35).

==========  =======================  ========  =========================================
effect      situation                status    reason
==========  =======================  ========  =========================================
NoExecute   pods still to evict      True      ``PodsPendingEviction``
NoExecute   none left, some evicted  False     ``Completed``
NoExecute   none ever                False     ``NotStarted``
None        (what NoExecute would    False     ``NoEffect``: devices, pods and namespaces,
            do, reported once)                 computed once per generation of the spec
other       —                        False     ``OtherEffect``
==========  =======================  ========  =========================================

Every message ends with how many pods the rule evicted since the controller started, when
any. The condition is rewritten at most every :data:`STATUS_PERIOD` while the rule's
generation stays the same, and at once for a new generation.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from taintplane.api.decoding import format_time, optional_time
from taintplane.api.device_taints import DeviceTaint
from taintplane.api.field import Path
from taintplane.client import ApiError, resource
from taintplane.controllers.device_evictions import (
    ClaimState,
    Rule,
    allocation_results,
    claim_eviction,
    pod_eviction,
)

if TYPE_CHECKING:
    from taintplane.controllers.devicetainteviction import DeviceTaintEvictionController

__all__ = ["CONDITION_TYPE", "STATUS_PERIOD", "Counts", "RuleStatus", "eviction_condition"]

log = logging.getLogger(__name__)

DEVICE_TAINT_RULES = resource("resource.k8s.io", "v1alpha3", "devicetaintrules")

CONDITION_TYPE = "EvictionInProgress"
#: Shortest time between two status updates of one rule (upstream's ``ruleStatusPeriod``).
STATUS_PERIOD = 10.0


@dataclass(frozen=True, slots=True)
class Counts:
    pending_pods: int = 0
    pending_namespaces: int = 0
    published_devices: int = 0
    allocated_devices: int = 0
    evicted_pods: int = 0


def _plural(count: int, one: str, many: str) -> str:
    return one if count == 1 else f"{count} {many}"


def eviction_condition(effect: str, counts: Counts) -> tuple[str, str, str]:
    """(status, reason, message) of the condition for a rule with this taint effect."""
    status, message = "False", ""
    if effect == "NoExecute":
        if counts.pending_pods > 0:
            status, reason = "True", "PodsPendingEviction"
            message = (
                _plural(counts.pending_pods, "1 pod needs", "pods need")
                + " to be evicted in "
                + _plural(counts.pending_namespaces, "1 namespace", "different namespaces")
                + "."
            )
        elif counts.evicted_pods > 0:
            reason = "Completed"
        else:
            reason = "NotStarted"
    elif effect == "None":
        reason = "NoEffect"
        message = (
            _plural(counts.published_devices, "1 published device", "published devices")
            + " selected. "
            + _plural(counts.allocated_devices, "1 allocated device", "allocated devices")
            + " selected. "
            + _plural(counts.pending_pods, "1 pod", "pods")
            + " would be evicted in "
            + _plural(counts.pending_namespaces, "1 namespace", "different namespaces")
            + " if the effect was NoExecute. This information will not be updated again. "
            "Recreate the DeviceTaintRule to trigger an update."
        )
    else:
        reason = "OtherEffect"
        message = "Eviction only happens for the NoExecute effect."
    if counts.evicted_pods > 0:
        if message:
            message += " "
        message += (
            _plural(counts.evicted_pods, "1 pod", "pods")
            + " evicted since starting the controller."
        )
    return status, reason, message


class RuleStatus:
    """Keeps the ``EvictionInProgress`` condition of the controller's DeviceTaintRules."""

    period = STATUS_PERIOD

    def __init__(self, controller: DeviceTaintEvictionController) -> None:
        self.c = controller

    @staticmethod
    def item(rule: dict[str, Any]) -> tuple[str, str, str, str]:
        meta = rule["metadata"]
        return ("rule", "", meta["name"], str(meta.get("uid", "")))

    def update(self, name: str, uid: str, now: datetime) -> datetime | None:
        """Upstream's ``maybeUpdateRuleStatus``, from the caches; returns when to look again
        (None: not until something else asks)."""
        if self.c.rule_objects is None:
            return None
        obj = self.c.rule_objects.get(name)
        if obj is None or str(obj["metadata"].get("uid", "")) != uid:
            return None  # deleted or replaced
        rule = Rule.from_object(obj)
        conditions = list((obj.get("status") or {}).get("conditions") or [])
        index = next((i for i, c in enumerate(conditions) if c.get("type") == CONDITION_TYPE), -1)
        existing: dict[str, Any] = conditions[index] if index >= 0 else {}
        if existing and existing.get("observedGeneration") == rule.generation:
            since = optional_time(existing, "lastTransitionTime", "Condition", Path.root("status"))
            if since is not None and now - since < timedelta(seconds=self.period):
                return since + timedelta(seconds=self.period)
        status, reason, message = eviction_condition(rule.taint.effect, self.counts(rule))
        condition = {
            "type": CONDITION_TYPE,
            "status": status,
            "observedGeneration": rule.generation,
            "lastTransitionTime": existing.get("lastTransitionTime"),
            "reason": reason,
            "message": message,
        }
        if all(existing.get(k) == v for k, v in condition.items()):
            return None
        condition["lastTransitionTime"] = format_time(now)
        if index >= 0:
            conditions[index] = condition
        else:
            conditions.append(condition)
        self.c._spawn(self._write(name, uid, conditions))
        return None

    async def _write(self, name: str, uid: str, conditions: list[dict[str, Any]]) -> None:
        patch = {"metadata": {"uid": uid}, "status": {"conditions": conditions}}
        try:
            await self.c.client.patch(DEVICE_TAINT_RULES, name, patch, subresource="status")
        except ApiError as error:
            log.info("status of DeviceTaintRule %s not updated: %s", name, error)

    def counts(self, rule: Rule) -> Counts:
        if rule.taint.effect == "NoExecute":
            return self._pending(rule, self.c.claim_states)
        if rule.taint.effect != "None":
            return Counts(evicted_pods=self.c.evicted.get(rule.uid, 0))
        # What NoExecute would do: the claims as if this were the only rule, with that effect.
        taint = DeviceTaint(rule.taint.key, "NoExecute", rule.taint.value, rule.taint.time_added)
        simulated = replace(rule, taint=taint)
        now = self.c.clock.now()
        claims = {
            key: ClaimState(s.claim, claim_eviction(s.claim, self.c.pools, [simulated], now))
            for key, s in self.c.claim_states.items()
        }
        published = sum(1 for d in self.c.pools.devices() if rule.selects(*d))
        allocated = sum(
            1
            for s in self.c.claim_states.values()
            for r in allocation_results(s.claim)
            if rule.selects(str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
        )
        pending = self._pending(rule, claims)
        return replace(pending, published_devices=published, allocated_devices=allocated)

    def _pending(self, rule: Rule, claims: dict[str, ClaimState]) -> Counts:
        pods = 0
        namespaces: set[str] = set()
        for pod in list(self.c.pods.cache.values()):
            if pod["metadata"].get("deletionTimestamp"):
                continue
            eviction = pod_eviction(pod, claims)
            if eviction is not None and rule.uid in eviction.rule_uids():
                pods += 1
                namespaces.add(pod["metadata"]["namespace"])
        return Counts(
            pending_pods=pods,
            pending_namespaces=len(namespaces),
            evicted_pods=self.c.evicted.get(rule.uid, 0),
        )
