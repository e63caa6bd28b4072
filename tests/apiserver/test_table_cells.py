"""Cells of upstream's printers that kubectl cannot easily reach: every ResourceClaim state,
Events from the new API (series, eventTime, reporting fields), a DeviceTaintRule without a
timeAdded, and the default convertor's CREATED AT for odd timestamps."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from taintplane.apiserver.table_columns import since
from taintplane.apiserver.table_rbac_dra import DEFAULT_COLUMNS, DEVICE_TAINT_RULE_COLUMNS
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


def test_a_device_taint_rule_without_time_added_leaves_the_cell_empty() -> None:
    rule = {
        "metadata": {"name": "r", "creationTimestamp": "2026-01-01T00:09:00Z"},
        "spec": {"taint": {"key": "k", "effect": "None"}},
    }
    assert [c.cell(rule, NOW) for c in DEVICE_TAINT_RULE_COLUMNS] == [
        "r",
        "k",
        "",
        "None",
        "",
        "60s",
    ]


@pytest.mark.parametrize(
    ("created", "expected"),
    [
        ("2026-01-01T01:02:03.456789+01:00", "2026-01-01T00:02:03Z"),  # UTC, whole seconds
        (None, "0001-01-01T00:00:00Z"),  # Go's zero time
    ],
)
def test_created_at_is_rfc3339_in_utc(created: str | None, expected: str) -> None:
    role = {"metadata": {"name": "r", "creationTimestamp": created}}
    assert [c.cell(role, NOW) for c in DEFAULT_COLUMNS] == ["r", expected]


def test_an_age_from_a_naive_time_an_older_version_stored_reads_as_utc() -> None:
    """Before timestamps were decoded as Go does, a naive time could be stored; its age is
    counted as UTC rather than failing the whole table."""
    now = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
    assert since("2026-01-01T00:00:00", now) == "5m"
    assert since("2026-01-01T00:00:00Z", now) == "5m"
    assert since("yesterday", now) == "<unknown>"
