"""The pods a PodDisruptionBudget selects, kept up to date by pod events (issue 16).

Upstream's sync lists every pod of the budget's namespace and matches the selector, so a burst
of N pod events costs N² pod visits. Here each budget keeps, from its first sync on, what its
status needs and updates it per pod event (O(budgets of the namespace) per event):

- the matching pods by key, in the order they came;
- how many of them are Ready and not being deleted (``healthy_base``; the healthy count is that
  minus the few pods still in ``disruptedPods``);
- the matching pods grouped by their controller's uid (unmanaged pods apart), so that the
  expected count asks each controller once, as ``getExpectedScale`` does, without a walk.

A budget's pods are rebuilt from the namespace index when its selector changes, and forgotten
with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from taintplane.api.selectors import LabelSelector, SelectorError, label_selector_from_dict
from taintplane.client import object_key
from taintplane.controllers.workloads import is_pod_ready

__all__ = ["BudgetPods", "counted_healthy"]

Pod = dict[str, Any]


def counted_healthy(pod: Pod) -> bool:
    """Ready and not being deleted (a pod just evicted is taken out by the sync)."""
    return not pod["metadata"].get("deletionTimestamp") and is_pod_ready(pod)


def _controller_uid(pod: Pod) -> str:
    """ "c:" and the pod's controller's uid; "" for a pod without a controller."""
    for ref in pod["metadata"].get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return f"c:{ref.get('uid')}"
    return ""


@dataclass
class BudgetPods:
    """One budget's matching pods and the counts its status is made of."""

    uid: str
    selector_spec: Any
    selector: LabelSelector | None  # None: a null selector matches nothing
    pods: dict[str, Pod] = field(default_factory=dict)
    healthy_base: int = 0
    #: "c:" + controller uid → its matching pods (key → pod); "" holds the unmanaged ones.
    by_controller: dict[str, dict[str, Pod]] = field(default_factory=dict)
    #: Tests set this: every sync also rebuilds the budget's pods from the namespace and
    #: records any difference from the kept ones in ``mismatches``.
    verify: ClassVar[bool] = False
    mismatches: ClassVar[list[str]] = []

    def same_as(self, other: BudgetPods) -> bool:
        """The same pods (objects as cached), counts and controllers, in any order."""
        return (
            self.pods == other.pods
            and self.healthy_base == other.healthy_base
            and self.by_controller == other.by_controller
        )

    @classmethod
    def build(cls, pdb: dict[str, Any], pods: list[Pod]) -> BudgetPods | None:
        """From the namespace's pods; None when the selector cannot be parsed."""
        spec = (pdb.get("spec") or {}).get("selector")
        selector = None
        if spec is not None:
            try:
                selector = label_selector_from_dict(spec)
            except SelectorError:
                return None
        found = cls(str(pdb["metadata"].get("uid", "")), spec, selector)
        for pod in pods:
            found.observe(object_key(pod), pod)
        return found

    def current_for(self, pdb: dict[str, Any]) -> bool:
        return self.uid == str(pdb["metadata"].get("uid", "")) and self.selector_spec == (
            (pdb.get("spec") or {}).get("selector")
        )

    def matches(self, pod: Pod) -> bool:
        return self.selector is not None and self.selector.matches(
            pod["metadata"].get("labels") or {}
        )

    def observe(self, key: str, pod: Pod | None) -> None:
        """``pod`` added or changed under ``key`` (None: deleted)."""
        old = self.pods.get(key)
        if old is not None:
            self.healthy_base -= counted_healthy(old)
            controller = _controller_uid(old)
            bucket = self.by_controller[controller]
            del bucket[key]
            if not bucket:
                del self.by_controller[controller]
        if pod is None or not self.matches(pod):
            self.pods.pop(key, None)
            return
        self.pods[key] = pod
        self.healthy_base += counted_healthy(pod)
        self.by_controller.setdefault(_controller_uid(pod), {})[key] = pod

    def representatives(self) -> list[Pod]:
        """One pod per controller, and one unmanaged pod if any: what the expected count of a
        ``maxUnavailable`` or percentage budget looks at (it asks each controller once and
        only reports whether unmanaged pods exist)."""
        found: list[Pod] = []
        for bucket in self.by_controller.values():
            found.append(next(iter(bucket.values())))
        return found

    def healthy(self, disrupted: dict[str, str], namespace: str) -> int:
        """Ready pods not being deleted, less those the eviction subresource just took."""
        taken = 0
        for name in disrupted:
            pod = self.pods.get(f"{namespace}/{name}")
            if pod is not None and counted_healthy(pod):
                taken += 1
        return self.healthy_base - taken
