"""A request body the handler decoded for itself is handed to the registry without a copy
(issue 16); a caller that keeps its dict still gets it back untouched, and both give the
same stored object."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

from taintplane.api.scheme import SCHEME
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster


def test_owned_and_copied_bodies_store_the_same(tmp_path: Path) -> None:
    nodes = SCHEME.lookup("", "v1", "nodes")
    assert nodes is not None

    def body(name: str) -> dict[str, Any]:
        return {
            "metadata": {"name": name, "labels": {"a": "b"}},
            "spec": {"podCIDR": "10.0.0.0/24"},
        }

    async def main() -> None:
        clock = VirtualClock()
        async with in_process_cluster(tmp_path, clock, components=()) as cluster:
            assert cluster.apiserver is not None
            registry = cluster.apiserver.registry
            kept = body("kept")
            copied = await registry.create(nodes, "", kept, manager="m")
            assert kept == body("kept")  # not owned: the caller's dict is untouched
            owned = await registry.create(nodes, "", body("owned"), manager="m", owned=True)

            def same(obj: dict[str, Any]) -> dict[str, Any]:
                obj = copy.deepcopy(obj)
                for field in ("name", "uid", "resourceVersion"):
                    obj["metadata"].pop(field)
                return obj

            assert same(copied) == same(owned)
            # The same update of each: one handed over, one kept by the caller.
            results = []
            for name, hand_over in (("kept", False), ("owned", True)):
                update = body(name)
                update["metadata"]["labels"] = {"k": "w"}
                sent = copy.deepcopy(update)
                results.append(
                    await registry.update(nodes, "", name, update, manager="m", owned=hand_over)
                )
                if not hand_over:
                    assert update == sent
            assert same(results[0]) == same(results[1])
            assert results[1]["metadata"]["labels"] == {"k": "w"}

    asyncio.run(main())
