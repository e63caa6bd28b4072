"""kubectl's STATUS column for pods, as upstream's printPod computes it (init containers, then
regular containers)."""

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
    init: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase, "containerStatuses": containers or []}
    spec: dict[str, Any] = {"containers": []}
    if init is not None:
        status["initContainerStatuses"] = init
        spec["initContainers"] = [{"name": c["name"]} for c in init]
    if reason:
        status["reason"] = reason
    if conditions is not None:
        status["conditions"] = conditions
    metadata: dict[str, Any] = {"name": "p"}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:30Z"
    return {"metadata": metadata, "spec": spec, "status": status}


READY = [{"type": "Ready", "status": "True"}]


def waiting(name: str, reason: str) -> dict[str, Any]:
    return {"name": name, "state": {"waiting": {"reason": reason}}}


DONE = terminated("init", exitCode=0, reason="Completed")


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
        # A container that failed outweighs one that completed, whatever their order
        # (kubernetes#124766, in 1.35); one running and ready still reads Running.
        (
            pod(
                "Failed",
                [terminated("a", exitCode=0, reason="Completed"), terminated("b", exitCode=1)],
            ),
            "ExitCode:1",
        ),
        (
            pod(
                "Running",
                [
                    terminated("a", exitCode=0, reason="Completed"),
                    terminated("b", exitCode=137, reason="OOMKilled"),
                    running("c"),
                ],
                conditions=READY,
            ),
            "Running",
        ),
        # Init containers: the first that has not completed names the status.
        (pod("Pending", init=[DONE, terminated("b", exitCode=1, reason="Error")]), "Init:Error"),
        (pod("Pending", init=[terminated("a", exitCode=2, signal=9)]), "Init:Signal:9"),
        (pod("Pending", init=[terminated("a", exitCode=3)]), "Init:ExitCode:3"),
        (pod("Pending", init=[DONE, waiting("b", "CrashLoopBackOff")]), "Init:CrashLoopBackOff"),
        (pod("Pending", init=[waiting("a", "PodInitializing"), DONE]), "Init:0/2"),
        (pod("Pending", init=[DONE, running("b"), waiting("c", "")]), "Init:1/3"),
        # Once the pod is Initialized its regular containers are read too, and one that waits
        # or stopped has the last word (a running one leaves the reason as it was).
        (
            pod(
                "Running",
                [waiting("main", "ContainerCreating")],
                init=[terminated("a", exitCode=1, reason="Error")],
                conditions=[{"type": "Initialized", "status": "True"}],
            ),
            "ContainerCreating",
        ),
        (
            pod(
                "Running",
                [running("main")],
                init=[terminated("a", exitCode=1, reason="Error")],
                conditions=[*READY, {"type": "Initialized", "status": "True"}],
            ),
            "Init:Error",
        ),
    ],
)
def test_status_column(obj: dict[str, Any], expected: str) -> None:
    assert status_of(obj) == expected


def cells(obj: dict[str, Any], now: datetime = NOW) -> tuple[object, object, object]:
    assert PODS is not None
    table = table_for(PODS, [obj], now)
    got = dict(
        zip([c["name"] for c in table["columnDefinitions"]], table["rows"][0]["cells"], strict=True)
    )
    return got["Ready"], got["Status"], got["Restarts"]


def restarted(state: dict[str, Any], count: int, finished: str | None) -> dict[str, Any]:
    last = {"terminated": {"exitCode": 1, "finishedAt": finished}} if finished else {}
    return {**state, "restartCount": count, "lastState": last}


def test_ready_and_restarts_count_sidecars_and_the_latest_restart() -> None:
    sidecar = {**running("proxy"), "started": True}
    obj = pod(
        "Running",
        [
            restarted(running("a"), 1, "2025-12-31T23:50:00Z"),
            restarted(running("b", ready=False), 2, None),
        ],
        init=[restarted(sidecar, 3, "2025-12-31T23:59:15Z"), restarted(DONE, 5, None)],
        conditions=READY,
    )
    obj["spec"]["initContainers"][0]["restartPolicy"] = "Always"
    obj["spec"]["containers"] = [{"name": "a"}, {"name": "b"}]
    # 2 containers + 1 sidecar; the completed init container's restarts no longer count.
    assert cells(obj) == ("2/3", "Running", "6 (45s ago)")
    # A restart without a finish time prints the count alone.
    obj["status"]["initContainerStatuses"][0]["lastState"] = {}
    obj["status"]["containerStatuses"][0]["lastState"] = {}
    assert cells(obj) == ("2/3", "Running", "6")
    # While initializing, only init containers count, up to the one that holds the pod.
    obj["status"]["initContainerStatuses"][1] = restarted(
        waiting("init", "ImagePullBackOff"), 5, None
    )
    obj["status"]["conditions"] = []
    assert cells(obj) == ("1/3", "Init:ImagePullBackOff", "8")
