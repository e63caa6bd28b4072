"""What became of each pod in a ``what-if`` run, and the words that say why.

A pod on a tainted node is evicted, deleted, left terminating or stays; a pod created or
scheduled in the window lands somewhere or waits. The wording is the report's whole value (why a
pod stays: tolerated for good, a countdown past the window, an eviction cancelled by removing the
taint; that PodDisruptionBudgets do not hold taint eviction back; that an owner the copy does not
run will not replace it), so it lives here, apart from running the copy and from the plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from taintplane.api.decoding import format_time, parse_timestamp
from taintplane.api.duration import format_duration
from taintplane.api.podconditions import find_condition
from taintplane.api.scheme import SCHEME
from taintplane.api.selectors import SelectorError, label_selector_from_dict
from taintplane.api.taints import Taint, TaintEffect
from taintplane.client import object_key
from taintplane.sim.recorder import Recorder, node_taints
from taintplane.sim.whatif_plan import eviction_delay

__all__ = [
    "PodOutcome",
    "Replacement",
    "placement",
    "running_pod_outcome",
    "terminating_on",
    "terminating_outcome",
]


#: The taint eviction controller's DisruptionTarget reason (PDBs do not hold it back).
TAINT_EVICTION_REASON = "DeletionByTaintManager"


@dataclass(frozen=True)
class PodOutcome:
    """What became of a pod that ran on one of the tainted nodes."""

    namespace: str
    name: str
    node: str
    #: evicted (by the taint eviction controller or the Eviction API: a DisruptionTarget
    #: condition), deleted (by anyone else, e.g. its DaemonSet), terminating (its deletion
    #: began before the taint), or stays
    outcome: str
    at: datetime | None
    detail: str
    #: The PodDisruptionBudgets covering a pod the taint eviction controller evicted: upstream
    #: does not consult them, so they did not hold the eviction back.
    budgets_not_applied: tuple[str, ...] = ()


@dataclass(frozen=True)
class Replacement:
    """A pod created during the window (by a ReplicaSet, a DaemonSet, …), and where it went."""

    namespace: str
    name: str
    owner: str
    #: The node it was scheduled to (last), or "" if it never was.
    node: str
    detail: str
    #: Deleted before the window ended.
    gone: bool = False

    @property
    def pending(self) -> bool:
        return not self.node and not self.gone


def terminating_on(pod: dict[str, Any], nodes: Sequence[str]) -> bool:
    """A pod whose deletion began before the question: the taint eviction controller still
    marks it (and deletes it again), whatever its phase."""
    return bool(
        (pod.get("spec") or {}).get("nodeName") in nodes
        and pod["metadata"].get("deletionTimestamp")
    )


def _since_start(started: datetime, moment: datetime) -> str:
    return f"+{format_duration((moment - started).total_seconds())}"


def _flag_unsimulated_owner(outcome: PodOutcome, pod: dict[str, Any]) -> PodOutcome:
    """A pod whose controller the copy does not run (a StatefulSet, a Job): nobody replaces
    it there, so the report says so rather than suggest it is simply gone."""
    for ref in pod["metadata"].get("ownerReferences") or []:
        if (
            ref.get("controller")
            and SCHEME.by_kind(str(ref.get("apiVersion")), str(ref.get("kind"))) is None
        ):
            owner = f"{ref.get('kind')}/{ref.get('name')}"
            note = f"its owner {owner} is not simulated: a replacement is not shown"
            return replace(outcome, detail=f"{outcome.detail}; {note}" if outcome.detail else note)
    return outcome


def _countdown_start(pod: dict[str, Any], taints: Sequence[Taint], fallback: datetime) -> datetime:
    """When the taint eviction controller began timing ``pod``'s tolerations, as well as the
    snapshot says: it saw the pod on the node with the NoExecute taint, so the later of the
    earliest such taint's timeAdded and the pod's scheduling."""
    added = [
        t.time_added
        for t in taints
        if t.effect == TaintEffect.NO_EXECUTE and t.time_added is not None
    ]
    scheduled = (find_condition(pod, "PodScheduled") or {}).get("lastTransitionTime")
    landed = pod["metadata"].get("creationTimestamp") if scheduled is None else scheduled
    instants = [min(added)] if added else []
    try:
        parsed = parse_timestamp(str(landed)) if landed else None
    except ValueError:
        parsed = None
    if parsed is not None:
        instants.append(parsed)
    return max(instants) if instants else fallback


def _why_it_stays(
    pod: dict[str, Any],
    before: Sequence[Taint],
    node: dict[str, Any] | None,
    end: datetime,
    started: datetime,
) -> str:
    taints = node_taints(node) if node is not None else []
    pending = eviction_delay(pod, before)
    if pending is not None and eviction_delay(pod, taints) is None:
        due = _countdown_start(pod, before, started) + timedelta(seconds=pending)
        return (
            f"its pending eviction (due at {format_time(due)}) is cancelled: the taint is removed"
        )
    if not any(t.effect == TaintEffect.NO_EXECUTE for t in taints):
        return "no NoExecute taint on its node: NoSchedule and PreferNoSchedule do not evict"
    delay = eviction_delay(pod, taints)
    if delay is None:
        return "tolerates every NoExecute taint on its node with no time limit"
    due = started + timedelta(seconds=delay)
    if due > end:
        return f"tolerationSeconds {delay}: due at {format_time(due)}, after the window"
    return "not evicted in the window"


def _budgets_covering(objects: Sequence[dict[str, Any]], pod: dict[str, Any]) -> tuple[str, ...]:
    """The PodDisruptionBudgets whose selector matches ``pod`` in its namespace (one with an
    empty selector matches nothing, as the disruption controller reads it)."""
    namespace = pod["metadata"].get("namespace")
    labels = pod["metadata"].get("labels") or {}
    names = []
    for pdb in objects:
        if pdb.get("kind") != "PodDisruptionBudget":
            continue
        if pdb["metadata"].get("namespace", "default") != namespace:
            continue
        try:
            selector = label_selector_from_dict((pdb.get("spec") or {}).get("selector"))
        except SelectorError:
            continue
        if not selector.is_empty() and selector.matches(labels):
            names.append(str(pdb["metadata"]["name"]))
    return tuple(sorted(names))


def _not_held_back(outcome: PodOutcome, budgets: tuple[str, ...]) -> PodOutcome:
    """An eviction by the taint eviction controller, which (as upstream) deletes without asking
    the PodDisruptionBudgets that cover the pod: the report names them."""
    if not budgets or not outcome.detail.startswith(TAINT_EVICTION_REASON):
        return outcome
    if len(budgets) == 1:
        note = f"its PodDisruptionBudget {budgets[0]} does not apply to taint eviction"
    else:
        note = f"its PodDisruptionBudgets {', '.join(budgets)} do not apply to taint eviction"
    return replace(outcome, detail=f"{outcome.detail}; {note}", budgets_not_applied=budgets)


def _deletion_outcome(pod: dict[str, Any], recorder: Recorder) -> PodOutcome | None:
    """A pod whose deletion began in the window: evicted or deleted, when and by whom."""
    key = object_key(pod)
    deleting = recorder.deletion(key)
    if deleting is None:
        return None
    detail = deleting[2]
    if key not in recorder.deleted:
        # Its deletion began but nothing finished it: a kubelet that is not running (a node
        # already down in the snapshot) leaves it Terminating.
        detail += "; still Terminating at the end (its kubelet did not stop it)"
    outcome = "evicted" if deleting[1] else "deleted"
    metadata = pod["metadata"]
    return PodOutcome(
        metadata["namespace"],
        metadata["name"],
        pod["spec"]["nodeName"],
        outcome,
        deleting[0],
        detail,
    )


def running_pod_outcome(
    pod: dict[str, Any],
    recorder: Recorder,
    objects: Sequence[dict[str, Any]],
    taints_before: Sequence[Taint],
    *,
    started: datetime,
    end: datetime,
) -> PodOutcome:
    """A pod running on a changed node when the question was asked (``taints_before``: its
    node's taints then): evicted or deleted in the window, or why it stays."""
    outcome = _deletion_outcome(pod, recorder)
    if outcome is None:
        node_name = pod["spec"]["nodeName"]
        now = recorder.pods.get(object_key(pod)) or pod
        why = _why_it_stays(now, taints_before, recorder.nodes.get(node_name), end, started)
        metadata = pod["metadata"]
        outcome = PodOutcome(metadata["namespace"], metadata["name"], node_name, "stays", None, why)
    outcome = _not_held_back(outcome, _budgets_covering(objects, pod))
    return _flag_unsimulated_owner(outcome, pod)


def terminating_outcome(pod: dict[str, Any], recorder: Recorder, started: datetime) -> PodOutcome:
    """A pod already Terminating: the taint eviction controller still marks it (upstream adds
    its DisruptionTarget condition and deletes it again), whether or not it then goes."""
    key = object_key(pod)
    marked = recorder.marked.get(key)
    detail = "already terminating"
    if marked is not None:
        detail += f"; marked by the taint manager at {_since_start(started, marked[0])}"
    gone = recorder.deleted.get(key)
    if gone is not None:
        detail += f"; deleted at {_since_start(started, gone)}"
    metadata = pod["metadata"]
    return PodOutcome(
        metadata["namespace"],
        metadata["name"],
        pod["spec"]["nodeName"],
        "terminating",
        marked[0] if marked is not None else None,
        detail,
    )


def placement(recorder: Recorder, started: datetime, key: str, owner: str) -> Replacement:
    """Where a pod scheduled (or created) in the window went, or why it is still pending."""
    final = recorder.pods.get(key)
    namespace, _, name = key.partition("/")
    if final is None:
        # Ran (or waited) and was deleted in the window: where it ran, and when.
        placed = recorder.placed.get(key, "")
        gone = recorder.deleted.get(key)
        detail = f"deleted at {_since_start(started, gone)}" if gone else ""
    else:
        placed = (final.get("spec") or {}).get("nodeName") or ""
        detail = "" if placed else recorder.unschedulable.get(key, "pending")
    return Replacement(namespace, name, owner, placed, detail, gone=final is None)
