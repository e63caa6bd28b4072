"""kubectl's STATUS column for pods, as upstream's printPod computes it (regular containers)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from taintplane.api.scheme import SCHEME
from taintplane.apiserver.tables import table_for

PODS = SCHEME.lookup("", "v1", "pods")
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def status_of(pod: dict[str, Any]) -> str:
    assert PODS is not None
    table = table_for(PODS, [pod], NOW)
    names = [c["name"] for c in table["columnDefinitions"]]
    return str(table["rows"][0]["cells"][names.index("Status")])


def running(name: str, ready: bool = True) -> dict[str, Any]:
    return {"name": name, "ready": ready, "state": {"running": {"startedAt": "x"}}}


def terminated(name: str, **state: Any) -> dict[str, Any]:
    return {"name": name, "ready": False, "state": {"terminated": state}}


def pod(
    phase: str = "Running",
    containers: list[dict[str, Any]] | None = None,
    *,
    deleting: bool = False,
    reason: str = "",
    conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase, "containerStatuses": containers or []}
    if reason:
        status["reason"] = reason
    if conditions is not None:
        status["conditions"] = conditions
    metadata: dict[str, Any] = {"name": "p"}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:30Z"
    return {"metadata": metadata, "spec": {"containers": []}, "status": status}


READY = [{"type": "Ready", "status": "True"}]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (pod("Running", [running("a")]), "Running"),
        (
            pod("Pending", [{"name": "a", "state": {"waiting": {"reason": "ContainerCreating"}}}]),
            "ContainerCreating",
        ),
        (pod("Running", [running("a")], deleting=True), "Terminating"),
        # A deleted pod whose containers have stopped shows how they ended, not Terminating.
        (
            pod("Succeeded", [terminated("a", exitCode=0, reason="Completed")], deleting=True),
            "Completed",
        ),
        (pod("Failed", [terminated("a", exitCode=137, reason="Error")], deleting=True), "Error"),
        (pod("Failed", [terminated("a", exitCode=2)]), "ExitCode:2"),
        (pod("Failed", [terminated("a", exitCode=2, signal=9)]), "Signal:9"),
        # Containers are read from the last, so the first one's state has the last word; a
        # completed container beside a running, ready one reads Running (NotReady without the
        # pod's Ready condition).
        (
            pod(
                "Running",
                [
                    {"name": "a", "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
                    terminated("b", exitCode=0, reason="Completed"),
                ],
            ),
            "CrashLoopBackOff",
        ),
        (
            pod(
                "Running",
                [
                    terminated("b", exitCode=0, reason="Completed"),
                    {"name": "a", "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
                ],
            ),
            "Completed",
        ),
        (
            pod(
                "Running",
                [running("b"), terminated("a", exitCode=0, reason="Completed")],
                conditions=READY,
            ),
            "Running",
        ),
        (
            pod(
                "Running",
                [running("b"), terminated("a", exitCode=0, reason="Completed")],
                conditions=[],
            ),
            "NotReady",
        ),
        (pod("Failed", [], reason="TaintToleration"), "TaintToleration"),
        (pod("Running", [running("a")], deleting=True, reason="NodeLost"), "Unknown"),
        (
            pod(
                "Pending",
                conditions=[
                    {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
                ],
            ),
            "SchedulingGated",
        ),
    ],
)
def test_status_column(obj: dict[str, Any], expected: str) -> None:
    assert status_of(obj) == expected
