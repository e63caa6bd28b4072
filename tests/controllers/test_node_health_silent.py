"""A silent node whose conditions are all Unknown already is not copied every pass to find
that marking it silent changes nothing: over random condition lists, whenever
``already_silent`` says so, ``marked_silent`` gives back the node unchanged, and otherwise it
changes something."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from taintplane.controllers.nodelifecycle.health import already_silent, marked_silent

CONDITION = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"]
        ),
        "status": st.sampled_from(["True", "False", "Unknown"]),
    },
    optional={
        "reason": st.sampled_from(["KubeletReady", "NodeStatusUnknown"]),
        "lastTransitionTime": st.just("2026-01-01T00:00:00Z"),
    },
)


@given(st.lists(CONDITION, max_size=7))
def test_already_silent_is_exactly_when_marking_changes_nothing(
    conditions: list[dict[str, Any]],
) -> None:
    node = {
        "metadata": {"name": "n1", "creationTimestamp": "2025-12-31T00:00:00Z"},
        "status": {"conditions": conditions},
    }
    before = copy.deepcopy(node)
    marked = marked_silent(node, datetime(2026, 1, 2, tzinfo=UTC))
    assert node == before  # a copy is marked, never the informer's node
    assert already_silent(node) == (marked == node)
