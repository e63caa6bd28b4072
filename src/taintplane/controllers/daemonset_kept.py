"""Every DaemonSet's per-node results, kept between syncs and brought up to date for the nodes
that changed (``daemonset_nodes`` says what a result is and when it must be looked at again).

The controller's informer handlers mark nodes dirty: a daemon pod's event marks the node it
is aimed at for its DaemonSet, a node's event (beyond heartbeats) or deletion marks that node
for every DaemonSet. A pass then re-evaluates the dirty and volatile nodes only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from taintplane.controllers import daemonset_util as util
from taintplane.controllers.daemonset_nodes import Manage, NodeResult, NodeResults, evaluate

if TYPE_CHECKING:
    from taintplane.controllers.daemonset import DaemonSetController

__all__ = ["KeptResults"]

#: ``podsShouldBeOnNode`` without side effects: (ds, hash, node, should run, should
#: continue, the node's pods).
PureManage = Callable[[dict[str, Any], str, str, bool, bool, list[dict[str, Any]]], Manage]


class KeptResults:
    #: Tests set this: every pass also rebuilds the per-node results from scratch and records
    #: any difference from the kept ones in ``mismatches``.
    verify: ClassVar[bool] = False
    mismatches: ClassVar[list[str]] = []

    def __init__(self, controller: DaemonSetController, manage: PureManage) -> None:
        self.c = controller
        self._manage = manage
        #: DaemonSet uid → its kept per-node results.
        self.kept: dict[str, NodeResults] = {}

    def mark(self, ds_uid: str, node: str | None) -> None:
        """The DaemonSet's pods on ``node`` changed: look at the node again next pass."""
        kept = self.kept.get(ds_uid)
        if kept is not None and node is not None:
            kept.dirty.add(node)

    def mark_node(self, node: str) -> None:
        for kept in self.kept.values():
            kept.dirty.add(node)

    def forget(self, ds_uid: str) -> None:
        self.kept.pop(ds_uid, None)

    @staticmethod
    def _basis(ds: dict[str, Any], hash_: str) -> tuple[Any, ...]:
        """What every node's result depends on besides the node and its pods."""
        meta = ds["metadata"]
        annotation = (meta.get("annotations") or {}).get(util.TEMPLATE_GENERATION_ANNOTATION)
        return (meta.get("uid"), meta.get("generation"), hash_, annotation)

    def _evaluate(self, ds: dict[str, Any], hash_: str, name: str) -> NodeResult | None:
        c = self.c
        node = c.nodes.cache.get(name)
        pods = c.pods_on_node(ds, name)
        if node is None and not pods:
            return None
        return evaluate(
            name,
            node,
            pods,
            ds,
            hash_,
            c.clock.now(),
            lambda n: c.should_run(n, ds),
            lambda node_name, run, keep, on_node: self._manage(
                ds, hash_, node_name, run, keep, on_node
            ),
        )

    def _build(self, ds: dict[str, Any], hash_: str) -> NodeResults:
        c = self.c
        kept = NodeResults(self._basis(ds, hash_))
        names = dict.fromkeys(c.nodes.cache)
        for pod in c.owned_pods(ds):
            target = util.target_node_name(pod)
            if target is not None:
                names[target] = None
        for name in names:
            kept.put(name, self._evaluate(ds, hash_, name))
        return kept

    def results(self, ds: dict[str, Any], hash_: str) -> NodeResults:
        """The DaemonSet's per-node results, brought up to date: the dirty and volatile nodes
        looked at again, everything rebuilt when the DaemonSet's basis changed (or, as a
        safety net, when the count of nodes disagrees with the node cache)."""
        uid = str(ds["metadata"].get("uid", ""))
        kept = self.kept.get(uid)
        if kept is None or kept.basis != self._basis(ds, hash_):
            kept = self.kept[uid] = self._build(ds, hash_)
        else:
            again = kept.dirty | kept.volatile
            kept.dirty = set()
            for name in again:
                kept.put(name, self._evaluate(ds, hash_, name))
            if kept.existing != len(self.c.nodes.cache):
                kept = self.kept[uid] = self._build(ds, hash_)
        if self.verify:
            self._verify(ds, hash_, kept)
        return kept

    def _verify(self, ds: dict[str, Any], hash_: str, kept: NodeResults) -> None:
        fresh = self._build(ds, hash_)
        name = f"{ds['metadata'].get('namespace')}/{ds['metadata'].get('name')}"
        for attribute in ("results", "counts", "ws_unavailable", "sg_surging", "sg_available"):
            if getattr(fresh, attribute) != getattr(kept, attribute):
                self.mismatches.append(
                    f"{name} {attribute}: kept {getattr(kept, attribute)!r}, "
                    f"rebuilt {getattr(fresh, attribute)!r}"
                )
