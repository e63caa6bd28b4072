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
            update = copy.deepcopy(owned)
            del update["metadata"]["resourceVersion"]  # unconditional updates
            update["metadata"]["labels"] = {"k": "w"}
            kept_update = copy.deepcopy(update)
            after = await registry.update(nodes, "", "owned", kept_update, manager="m")
            assert kept_update == update
            update["metadata"]["labels"] = {"k": "x"}
            after_owned = await registry.update(nodes, "", "owned", update, manager="m", owned=True)
            assert after_owned["metadata"]["labels"] == {"k": "x"}
            assert (
                same(after_owned)["metadata"]["managedFields"]
                == same(after)["metadata"]["managedFields"]
            )

    asyncio.run(main())
