"""The pod garbage collector finds pods on missing nodes from the nodes it suspects (named by
a pod while absent, or deleted while they had pods) instead of looking up every node with pods
each pass: over random histories of node and pod events, delivered as the informers deliver
them (relists included), a pass sees exactly what the look-up of every node would see."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from taintplane.client import Client
from taintplane.client.informer import Informer, object_key
from taintplane.client.shared import SharedInformers
from taintplane.clock import VirtualClock
from taintplane.controllers.podgc import NODE_INDEX, PodGCController

NODE_NAMES = ("n1", "n2", "n3", "n4")
POD_NAMES = ("p1", "p2", "p3", "p4", "p5", "p6")


def _node(name: str, version: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": str(version)}}


def _pod(name: str, node: str, version: int) -> dict[str, Any]:
    spec = {"nodeName": node} if node else {}
    meta = {"name": name, "namespace": "default", "resourceVersion": str(version)}
    return {"metadata": meta, "spec": spec, "status": {"phase": "Running"}}


def _put(informer: Informer, obj: dict[str, Any]) -> None:
    """A watch's ADDED or MODIFIED, as the informer handles it."""
    old = informer._store(object_key(obj), obj)
    if old is None:
        informer._added(obj)
    else:
        informer._updated(old, obj)


def _remove(informer: Informer, key: str) -> None:
    """A watch's DELETED (or a relist that no longer has the object)."""
    gone = informer.cache.get(key)
    if gone is not None:
        informer._store(key, None)
        informer._deleted(gone)


def _every_node_looked_up(gc: PodGCController) -> dict[str, list[dict[str, Any]]]:
    """What the pass found before: every node with pods, looked up."""
    return {
        node: gc.pods.by_index(NODE_INDEX, node)
        for node in gc.pods.index_values(NODE_INDEX)
        if gc.nodes.get(node) is None
    }


STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("node+"), st.sampled_from(NODE_NAMES)),
        st.tuples(st.just("node-"), st.sampled_from(NODE_NAMES)),
        st.tuples(st.just("pod+"), st.sampled_from(POD_NAMES), st.sampled_from(("", *NODE_NAMES))),
        st.tuples(st.just("pod-"), st.sampled_from(POD_NAMES)),
        st.tuples(st.just("pass")),
    ),
    max_size=60,
)


@settings(max_examples=400, deadline=None)
@given(STEPS, st.booleans())
def test_a_pass_sees_what_looking_up_every_node_sees(steps: list[Any], late: bool) -> None:
    async def scenario() -> None:
        informers = SharedInformers(cast(Client, None), clock=VirtualClock())
        pods, nodes = informers.pods, informers.nodes
        gc: PodGCController | None = None
        if not late:  # the collector registers before the informers fill, or after
            gc = PodGCController(cast(Client, None), VirtualClock(), informers)
        for version, step in enumerate(steps, start=1):
            if step[0] == "node+":
                _put(nodes, _node(step[1], version))
            elif step[0] == "node-":
                _remove(nodes, step[1])
            elif step[0] == "pod+":
                current = pods.cache.get(f"default/{step[1]}")
                # A bound pod stays on its node; an unbound one may be bound.
                bound = (current or {}).get("spec", {}).get("nodeName")
                _put(pods, _pod(step[1], bound or step[2], version))
            elif step[0] == "pod-":
                _remove(pods, f"default/{step[1]}")
            else:
                if gc is None:
                    gc = PodGCController(cast(Client, None), VirtualClock(), informers)
                assert gc._on_missing_nodes() == _every_node_looked_up(gc)
        if gc is None:
            gc = PodGCController(cast(Client, None), VirtualClock(), informers)
        assert gc._on_missing_nodes() == _every_node_looked_up(gc)

    asyncio.run(scenario())
