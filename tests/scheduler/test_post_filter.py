"""RunPostFilterPlugins: every PostFilter plugin in order, reasons joined, as upstream's."""

from __future__ import annotations

from taintplane.scheduler.framework import (
    Code,
    CycleState,
    Framework,
    NodeToStatus,
    PostFilterHandle,
    PostFilterResult,
    Status,
)
from taintplane.scheduler.nodeinfo import PodInfo
from taintplane.scheduler.plugins import names
from taintplane.scheduler.scheduler import default_framework
from tests.scheduler.builders import make_pod


class Answer:
    def __init__(self, name: str, status: Status, result: PostFilterResult | None = None):
        self.name = name
        self.status = status
        self.result = result
        self.calls = 0

    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus, handle: PostFilterHandle
    ) -> tuple[PostFilterResult | None, Status]:
        self.calls += 1
        return self.result, self.status


def run(*plugins: Answer) -> tuple[PostFilterResult | None, Status]:
    framework = Framework(plugins, {})
    handle = PostFilterHandle((), lambda state, pod, node: None)
    return framework.run_post_filter(
        CycleState(),
        PodInfo.of(make_pod("p")),
        NodeToStatus({}, Status.unresolvable()),
        handle,
    )


def test_unschedulable_reasons_are_joined_in_order_naming_the_first_plugin():
    result, status = run(
        Answer("A", Status.unschedulable("a1", "a2")),
        Answer("B", Status.unschedulable()),
        Answer("C", Status.unschedulable("c")),
    )
    assert result is None
    assert status == Status(Code.UNSCHEDULABLE, ("a1", "a2", "c"), "A")
    assert status.message == "a1, a2, c"


def test_success_wins_and_stops_the_run():
    later = Answer("C", Status.unschedulable("c"))
    nominated = PostFilterResult("node-1")
    result, status = run(
        Answer("A", Status.unschedulable("a")), Answer("B", Status(Code.SUCCESS), nominated), later
    )
    assert (result, status.code, status.message, later.calls) == (nominated, Code.SUCCESS, "", 0)


def test_unresolvable_and_errors_stop_the_run():
    later = Answer("C", Status.unschedulable("c"))
    _, status = run(
        Answer("A", Status.unschedulable("a")), Answer("B", Status.unresolvable("b")), later
    )
    assert status == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("b",), "B")
    _, status = run(Answer("A", Status(Code.ERROR, ("boom",))), later)
    assert status == Status(Code.ERROR, ("boom",), "A")
    assert later.calls == 0


def test_no_post_filter_plugins_no_message():
    result, status = run()
    assert (result, status.code, status.message) == (None, Code.UNSCHEDULABLE, "")


def test_dynamic_resources_runs_before_default_preemption():
    framework = default_framework()
    assert [p.name for p in framework.post_filters] == [
        names.DYNAMIC_RESOURCES,
        names.DEFAULT_PREEMPTION,
    ]
