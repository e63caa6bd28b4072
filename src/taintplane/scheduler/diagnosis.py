"""The ``0/N nodes are available: …`` message, built exactly as kube-scheduler's FitError.

1. If a PreFilter rejected the pod, only its message is shown (the per-node histogram would
   repeat it for every node).
2. Otherwise every reason of every node's status is counted; nodes without a status count the
   absent-node status's reasons.
3. Each entry reads ``"<count> <reason>"``; the entries are sorted as strings (so "10 x" sorts
   before "2 y"), joined with ", " and closed with a period.
4. The PostFilter message follows after a space, as it is: the reasons of every PostFilter
   plugin that answered Unschedulable, in profile order, joined with ", " (with the default
   plugins, ``no new claims to deallocate, preemption: 0/N nodes are available: …``); nothing
   when preemption succeeded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from taintplane.scheduler.framework import Code, Status

__all__ = ["NO_NODES_AVAILABLE", "Diagnosis", "fit_error_message"]

NO_NODES_AVAILABLE = "no nodes available to schedule pods"


@dataclass
class Diagnosis:
    num_all_nodes: int
    node_statuses: Mapping[str, Status] = field(default_factory=dict)
    absent_status: Status = field(
        default_factory=lambda: Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
    )
    pre_filter_message: str = ""
    post_filter_message: str = ""
    pre_filter_plugin: str = ""
    #: PreFilter plugins that named the only candidate nodes (the others are absent).
    narrowed_by: frozenset[str] = frozenset()

    @property
    def unschedulable_plugins(self) -> set[str]:
        plugins = {s.plugin for s in self.node_statuses.values() if s.plugin}
        if self.pre_filter_plugin:
            plugins.add(self.pre_filter_plugin)
        return plugins | self.narrowed_by


def fit_error_message(diagnosis: Diagnosis) -> str:
    message = f"0/{diagnosis.num_all_nodes} nodes are available:"
    if diagnosis.pre_filter_message:
        message += f" {diagnosis.pre_filter_message}."
    else:
        counts: Counter[str] = Counter()
        for status in diagnosis.node_statuses.values():
            counts.update(status.reasons)
        absent = diagnosis.num_all_nodes - len(diagnosis.node_statuses)
        if absent > 0:
            for reason in diagnosis.absent_status.reasons:
                counts[reason] += absent
        entries = sorted(f"{count} {reason}" for reason, count in counts.items())
        if entries:
            message += f" {', '.join(entries)}."
    if diagnosis.post_filter_message:
        message += f" {diagnosis.post_filter_message}"
    return message
