"""How long a pod stays on its node against the node's NoExecute taints, as the taint eviction
controller decides it (upstream ``processPodOnNode`` and ``getMinTolerationTime``).

One deadline per pod: the instant the controller began timing the pod plus the smallest
``tolerationSeconds`` among the tolerations that matched its NoExecute taints; at once when a
taint is not tolerated or a matched toleration says ≤ 0; never when none of them sets seconds.

The instant comes from the controller's own queue when the dashboard runs beside it
(:class:`EvictionSchedule`): nothing in the API records when an eviction was scheduled (upstream
emits an event only when it deletes or cancels, and no metric per pod). Without it the start is
reckoned from the API: the later of the pod's scheduling and the earliest NoExecute taint's
``timeAdded`` — or, for a taint written without one, the node's last write of its taints (the
``managedFields`` time) — which is when the controller, handling changes as they come, saw it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from taintplane.api.decoding import parse_timestamp
from taintplane.api.podconditions import find_condition
from taintplane.api.taints import Taint, TaintEffect
from taintplane.api.tolerations import Toleration, TolerationOperator

__all__ = ["EvictionSchedule", "Stay", "describe_toleration", "go_duration", "stay"]


class EvictionSchedule(Protocol):
    """The taint eviction controller's queue: when a pod's deletion is due, if scheduled."""

    def scheduled(self, namespace: str, name: str) -> datetime | None: ...


@dataclass(frozen=True)
class Stay:
    """What the dashboard says of one pod: the sentence, and whether the instant in it is the
    controller's own (``False``: reckoned from the API)."""

    text: str
    from_controller: bool = True


def describe_toleration(toleration: Toleration) -> str:
    """As ``kubectl describe pod`` prints a toleration (``key=value:effect op=Exists for Ns``);
    ``Lt``/``Gt`` are named too, since ``key=value`` alone would read as equality."""
    text = toleration.key
    if toleration.value:
        text += f"={toleration.value}"
    if toleration.effect:
        text += f":{toleration.effect}"
    if toleration.operator == TolerationOperator.EXISTS and not toleration.value:
        text += " op=Exists" if toleration.key or toleration.effect else "op=Exists"
    elif toleration.operator in (TolerationOperator.LT, TolerationOperator.GT):
        text += f" op={toleration.operator}"
    if toleration.toleration_seconds is not None:
        text += f" for {toleration.toleration_seconds}s"
    return text


def go_duration(seconds: float) -> str:
    """Whole seconds (rounded up, so a countdown never shows 0s before it is due) as Go's
    ``Duration.String`` prints them: ``1s``, ``9m59s``, ``1h0m0s``."""
    total = max(0, math.ceil(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def _clock_time(moment: datetime, now: datetime) -> str:
    """The time of day on the cluster clock (UTC), with the date when it is another day."""
    if moment.date() == now.date():
        return moment.strftime("%H:%M:%S")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _deciding(matched: Sequence[Toleration]) -> Toleration | None:
    """The toleration whose seconds ``getMinTolerationTime`` returns: the first saying ≤ 0,
    else the smallest positive; None when none sets seconds (tolerated forever)."""
    smallest: Toleration | None = None
    for toleration in matched:
        seconds = toleration.toleration_seconds
        if seconds is None:
            continue
        if seconds <= 0:
            return toleration
        if smallest is None or seconds < (smallest.toleration_seconds or 0):
            smallest = toleration
    return smallest


def last_taint_write(node: dict[str, Any]) -> datetime | None:
    """When ``spec.taints`` was last written, from the node's ``managedFields`` (whole
    seconds, as ``metav1.Time``)."""
    times = [
        parse_timestamp(entry.get("time"))
        for entry in node["metadata"].get("managedFields") or []
        if "f:taints" in ((entry.get("fieldsV1") or {}).get("f:spec") or {})
    ]
    known = [t for t in times if t is not None]
    return max(known) if known else None


def _landed(pod: dict[str, Any]) -> datetime | None:
    scheduled = (find_condition(pod, "PodScheduled") or {}).get("lastTransitionTime")
    return parse_timestamp(scheduled or pod["metadata"].get("creationTimestamp"))


def reckoned_start(
    pod: dict[str, Any], node: dict[str, Any], taints: Sequence[Taint]
) -> datetime | None:
    """When the controller began timing ``pod``, as far as the API tells: it saw the pod on
    the node with a NoExecute taint, so the later of the pod's scheduling and the earliest
    such taint's arrival."""
    written = last_taint_write(node)
    arrivals = [t.time_added or written for t in taints if t.effect == TaintEffect.NO_EXECUTE]
    known = [a for a in arrivals if a is not None]
    if not known:
        return None
    landed = _landed(pod)
    return max(min(known), landed) if landed is not None else min(known)


def stay(
    pod: dict[str, Any],
    node: dict[str, Any],
    taints: Sequence[Taint],
    now: datetime,
    schedule: EvictionSchedule | None,
) -> Stay:
    """The one sentence for ``pod``'s row on its node's page: the toleration with the smallest
    seconds, which decides the deadline, and that deadline. (Upstream keeps a deadline already
    scheduled when a later taint brings a shorter toleration, so then the instant shown — the
    controller's — is the earlier decision's.)"""
    meta = pod["metadata"]
    if meta.get("deletionTimestamp"):
        reason = (find_condition(pod, "DisruptionTarget") or {}).get("reason")
        why = f" ({reason})" if reason else ""
        return Stay(f"being deleted{why}")
    no_execute = [t for t in taints if t.effect == TaintEffect.NO_EXECUTE]
    if not no_execute:
        return Stay("stays: no NoExecute taint")
    tolerations = [
        Toleration.from_dict(t) for t in (pod.get("spec") or {}).get("tolerations") or []
    ]
    matched = []
    for taint in no_execute:
        match = next((t for t in tolerations if t.tolerates(taint)), None)
        if match is None:
            return Stay(f"does not tolerate {taint.to_string()}: evicted at once")
        matched.append(match)
    deciding = _deciding(matched)
    if deciding is None:
        forever = ", ".join(dict.fromkeys(describe_toleration(t) for t in matched))
        return Stay(f"stays: tolerates forever ({forever})")
    seconds = deciding.toleration_seconds or 0
    if seconds <= 0:
        return Stay(f"{describe_toleration(deciding)}: evicted at once")
    due = schedule.scheduled(meta.get("namespace", ""), meta["name"]) if schedule else None
    from_controller = due is not None
    if due is None:
        start = reckoned_start(pod, node, taints)
        if start is None:
            return Stay(
                f"{describe_toleration(deciding)}: evicted {seconds}s after the taint "
                "eviction controller saw the taint",
                from_controller=False,
            )
        due = start + timedelta(seconds=seconds)
    left = (due - now).total_seconds()
    when = f"in {go_duration(left)}" if left > 0 else f"due {go_duration(-left)} ago"
    return Stay(
        f"{describe_toleration(deciding)}: evicted at {_clock_time(due, now)}, {when}",
        from_controller=from_controller,
    )
