"""Cells of upstream's printers that kubectl cannot easily reach: every ResourceClaim state,
and Events from the new API (series, eventTime, reporting fields)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from taintplane.apiserver.table_workloads import EVENT_COLUMNS, claim_state

NOW = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
ALLOCATION: dict[str, Any] = {"devices": {"results": []}}


@pytest.mark.parametrize(
    ("metadata", "status", "expected"),
    [
        ({}, {}, "pending"),
        ({}, {"allocation": ALLOCATION}, "allocated"),
        ({}, {"allocation": ALLOCATION, "reservedFor": [{"name": "p"}]}, "allocated,reserved"),
        ({"deletionTimestamp": "x"}, {}, "deleted"),
        ({"deletionTimestamp": "x"}, {"allocation": ALLOCATION}, "deleted,allocated,deallocating"),
        (
            {"deletionTimestamp": "x"},
            {"allocation": ALLOCATION, "reservedFor": [{"name": "p"}]},
            "deleted,allocated,reserved",
        ),
    ],
)
def test_claim_state(metadata: dict[str, Any], status: dict[str, Any], expected: str) -> None:
    assert claim_state({"metadata": metadata, "status": status}, NOW) == expected


def cells(event: dict[str, Any]) -> dict[str, object]:
    return {column.name: column.cell(event, NOW) for column in EVENT_COLUMNS}


def test_an_events_k8s_io_style_event() -> None:
    event = {
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Node"},
        "reason": "Scheduled",
        "message": "hello",
        "eventTime": "2026-01-01T00:05:00.000000Z",
        "reportingComponent": "default-scheduler",
        "reportingInstance": "sched-1",
        "type": "Normal",
    }
    got = cells(event)
    assert got["Object"] == "node"  # no name: the kind alone
    assert got["Last Seen"] == got["First Seen"] == "5m"
    assert got["Count"] == 1  # singleton events have no count in the new API
    assert got["Source"] == "default-scheduler, sched-1"
    series = {**event, "series": {"count": 7, "lastObservedTime": "2026-01-01T00:09:00.000000Z"}}
    assert cells(series)["Last Seen"] == "60s"
    assert cells(series)["Count"] == 7
