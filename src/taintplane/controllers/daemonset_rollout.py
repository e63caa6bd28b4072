"""Which daemon pods a rolling update replaces next (upstream's ``rollingUpdate`` and
``findUpdatedPodsOnNode``), and how many old and new pods a node may keep while surging.

Without surge (``maxSurge`` 0) an old pod is deleted first and the core loop creates its
replacement, never more than ``maxUnavailable`` nodes short at once. With surge a new pod is
created next to the old one, at most ``maxSurge`` of them waiting to become available at a
time, and the old pod goes only once the new one is available (``minReadySeconds`` after it
became ready); a node whose old pod is not available anyway gets its new pod at once.

Nodes are visited in name order (upstream's map order is random) so a rollout is repeatable.
Pure functions over plain dicts. ``Plan`` is the full pass over every node; the sync reads the
same answer from per-node sums kept between syncs (``daemonset_nodes``), and the tests hold
the two equal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from taintplane.controllers import daemonset_util as util

__all__ = ["Plan", "SurgePlan", "excess_while_surging", "find_updated_pods"]

Pod = dict[str, Any]


def _name(pod: Pod) -> str:
    return str(pod["metadata"]["name"])


def find_updated_pods(
    pods: Sequence[Pod], hash_: str, ds: dict[str, Any]
) -> tuple[Pod | None, Pod | None, bool]:
    """``findUpdatedPodsOnNode``: (new pod, old pod, at most one of each), ignoring pods
    being deleted; with more than one of either the core loop prunes the node first."""
    new: Pod | None = None
    old: Pod | None = None
    for pod in pods:
        if pod["metadata"].get("deletionTimestamp"):
            continue
        if util.is_pod_updated(pod, hash_, ds):
            if new is not None:
                return None, None, False
            new = pod
        else:
            if old is not None:
                return None, None, False
            old = pod
    return new, old, True


@dataclass(frozen=True)
class Plan:
    """The state a rolling update needs: pods by node (every node that should run one
    listed, if only with no pods), the current hash, and when a pod counts as available."""

    ds: dict[str, Any]
    by_node: Mapping[str, Sequence[Pod]]
    hash_: str
    min_ready: int
    now: datetime

    def available(self, pod: Pod) -> bool:
        return util.is_pod_available(pod, self.min_ready, self.now)

    def nodes(self) -> list[tuple[str, Sequence[Pod]]]:
        return sorted(self.by_node.items())

    def without_surge(self, max_unavailable: int) -> list[str]:
        """Old pods to delete: unavailable ones at once, available ones while fewer than
        ``maxUnavailable`` nodes lack an available pod."""
        unavailable = 0
        replace_now: list[str] = []
        candidates: list[str] = []
        for _, pods in self.nodes():
            new, old, ok = find_updated_pods(pods, self.hash_, self.ds)
            if not ok or (new is None) == (old is None):
                unavailable += 1  # the core loop creates or prunes here first
            elif new is not None:
                unavailable += not self.available(new)
            elif old is not None and not self.available(old):
                replace_now.append(_name(old))
                unavailable += 1
            elif old is not None and unavailable < max_unavailable:
                candidates.append(_name(old))
        room = max(0, min(max_unavailable - unavailable, len(candidates)))
        return replace_now + candidates[:room]

    def with_surge(
        self, max_surge: int, desired: int, should_run: Callable[[str], bool]
    ) -> SurgePlan:
        """New pods to create next to old ones, and old pods whose new pod took over."""
        plan = SurgePlan()
        surging = available = 0
        unwanted: list[str] = []  # available old pods on nodes that should not run one now
        candidates: list[str] = []
        for node, pods in self.nodes():
            new, old, ok = find_updated_pods(pods, self.hash_, self.ds)
            if not ok:
                surging += 1  # the core loop prunes this node first
                continue
            counted = old if old is not None else new
            available += counted is not None and self.available(counted)
            if old is None:
                continue  # nothing to replace; the core loop fills an empty node
            if new is None:
                if not self.available(old):
                    if should_run(node):
                        plan.create.append(node)
                    else:
                        plan.delete.append(_name(old))
                elif not should_run(node):
                    unwanted.append(_name(old))
                elif surging < max_surge:
                    candidates.append(node)
            elif not self.available(new):
                surging += 1  # waiting for the new pod
            else:
                plan.delete.append(_name(old))  # the new pod took over
        # Pods on nodes that should not run one go only while the rest are available, so
        # moving a DaemonSet between nodes never leaves it short.
        plan.delete += unwanted[: max(0, available - desired)]
        plan.create += candidates[: max(0, max_surge - surging)]
        return plan


@dataclass
class SurgePlan:
    create: list[str] = field(default_factory=list)  # nodes
    delete: list[str] = field(default_factory=list)  # pods


def excess_while_surging(
    running: Sequence[Pod], hash_: str, min_ready: int, now: datetime
) -> list[str]:
    """The pods a surging DaemonSet deletes from one node (``podsShouldBeOnNode``): only the
    oldest new pod and the oldest old pod may stay, and the old one only while it is ready
    and the new one is not yet available. ``running`` is sorted oldest first."""
    delete: list[str] = []
    oldest_new: Pod | None = None
    oldest_old: Pod | None = None
    for pod in running:
        is_new = (pod["metadata"].get("labels") or {}).get(util.REVISION_HASH_LABEL) == hash_
        if is_new and oldest_new is None:
            oldest_new = pod
        elif not is_new and oldest_old is None:
            oldest_old = pod
        else:
            delete.append(_name(pod))
    if oldest_new is None or oldest_old is None:
        return delete
    if not util.is_pod_ready(oldest_old) or util.is_pod_available(oldest_new, min_ready, now):
        delete.append(_name(oldest_old))
    return delete
