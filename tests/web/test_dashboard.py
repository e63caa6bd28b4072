"""The read-only dashboard in a real headless browser, against a running cluster on virtual
time: tainted nodes, pending pods and why, pods on their way out, and a node's page saying
which toleration decides how long each pod stays, when it is evicted and how long is left."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from taintplane.testing import LocalCluster, local_cluster

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
#: Screenshots kept for a person to look at (ignored by git; CI keeps them as artefacts).
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)"
)


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec},
    }


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with local_cluster(tmp_path_factory.mktemp("dashboard"), nodes=2) as running:
        with httpx.Client(base_url=running.url) as api:
            nodes = f"{running.url}/api/v1/nodes"
            taint = {"key": "maintenance", "value": "true", "effect": "NoExecute"}
            gpu = {"key": "gpu", "effect": "NoSchedule"}
            tolerate_an_hour = [
                {
                    "key": "maintenance",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 3600,
                }
            ]
            pods = "/api/v1/namespaces/default/pods"
            api.post(pods, json=pod("patient", nodeName="node-1", tolerations=tolerate_an_hour))
            # A finalizer keeps the evicted pod in sight while it is Terminating.
            doomed = pod("doomed", nodeName="node-1")
            doomed["metadata"]["finalizers"] = ["example.com/keep"]
            api.post(pods, json=doomed)
            api.post(pods, json=pod("picky", nodeSelector={"disk": "ssd"}))
            running.advance(0)
            merge = {"Content-Type": "application/merge-patch+json"}
            api.patch(f"{nodes}/node-1", json={"spec": {"taints": [taint, gpu]}}, headers=merge)
            running.advance(0)
            # Kept to node-1 by its selector, and kept off it by both taints.
            api.post(pods, json=pod("pinned", nodeSelector={"kubernetes.io/hostname": "node-1"}))
            running.advance(0)
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            yield launched
        finally:
            launched.close()


def rows(page: Any, table_id: str) -> list[list[str]]:
    cells = page.locator(f"#{table_id} tr").all()
    return [row.inner_text().split("\t") for row in cells[1:]]


def screenshot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_the_overview(cluster: LocalCluster, browser: Any) -> None:
    page = browser.new_page()
    response = page.goto(f"{cluster.url}/dashboard")  # redirected to /dashboard/
    assert response is not None
    assert (response.status, page.url) == (200, f"{cluster.url}/dashboard/")
    assert page.title() == "taintplane"
    assert page.locator(".summary").inner_text() == (
        "clock 2026-01-01T00:00:00Z · 2 of 2 nodes Ready · 1 pods running · 2 pending · "
        "1 terminating"
    )
    assert rows(page, "nodes") == [
        ["node-1", "", "✓ Ready", "maintenance=true:NoExecute gpu:NoSchedule", "1 / 110"],
        ["node-2", "", "✓ Ready", "", "0 / 110"],
    ]
    # The NoExecute taint is drawn as such.
    assert page.locator("#nodes .taint.NoExecute").inner_text() == "maintenance=true:NoExecute"
    pending = {row[0]: row for row in rows(page, "pending")}
    assert pending["default/picky"][1] == ""
    assert pending["default/picky"][2] == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
        "no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is "
        "not helpful for scheduling."
    )
    [leaving] = rows(page, "leaving")
    assert leaving[:3] == ["default/doomed", "node-1", "DeletionByTaintManager"]
    events = rows(page, "events")
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", row[0]) for row in events)
    reasons = [row[2] for row in events]
    assert "TaintManagerEviction" in reasons
    assert page.locator('meta[http-equiv="refresh"]').get_attribute("content") == "5"


def test_pending_pods_are_explained_node_by_node(cluster: LocalCluster, browser: Any) -> None:
    page = browser.new_page()
    page.goto(f"{cluster.url}/dashboard/")
    pending = {row[0]: row[2] for row in rows(page, "pending")}
    # The scheduler's own sentence, word for word (FailedScheduling's message).
    assert pending["default/pinned"] == (
        "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint(s). no new claims to deallocate, preemption: 0/2 "
        "nodes are available: 2 Preemption is not helpful for scheduling."
    )
    # Then explain's table: every plugin that rejects each node, and what lets the pod in.
    node_1, node_2 = rows(page, "explain-default-pinned")
    assert node_1[:3] == ["node-1", "rejected", "TaintToleration"]
    assert node_1[3].startswith("node(s) had untolerated taint(s)")
    fixes = [json.loads(line) for line in node_1[4].split("\n")]
    assert fixes == [
        {"key": "maintenance", "operator": "Equal", "value": "true", "effect": "NoExecute"},
        {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},
    ]
    assert node_2[:3] == ["node-2", "rejected", "NodeAffinity"]
    assert node_2[4] == ""  # no toleration helps against a selector
    # The same for picky: no node takes it, and no toleration alone would do.
    picky = rows(page, "explain-default-picky")
    assert [row[2].split("\n")[0] for row in picky] == ["TaintToleration", "NodeAffinity"]
    assert picky[0][4] == "no toleration alone: still rejected by NodeAffinity"
    screenshot(page, "dashboard-overview")


def test_colours_say_it_in_words_too(cluster: LocalCluster, browser: Any) -> None:
    page = browser.new_page()
    page.goto(f"{cluster.url}/dashboard/")

    def style(selector: str, prop: str) -> str:
        return str(page.eval_on_selector(selector, f"e => getComputedStyle(e).{prop}"))

    no_execute = style("#nodes .taint.NoExecute", "backgroundColor")
    no_schedule = style("#nodes .taint.NoSchedule", "backgroundColor")
    assert no_execute != no_schedule
    assert style("#nodes .ready.True", "color") == "rgb(27, 94, 32)"  # green
    # Timestamps never wrap, however narrow the window.
    page.set_viewport_size({"width": 480, "height": 800})
    assert style("#events time", "whiteSpace") == "nowrap"
    first = page.locator("#events time").first
    assert first.bounding_box()["height"] < 20  # one line
    screenshot(page, "dashboard-narrow")


def test_the_last_hour_chart(cluster: LocalCluster, browser: Any) -> None:
    page = browser.new_page()
    page.goto(f"{cluster.url}/dashboard/")
    svg = page.locator("svg#history")
    assert svg.get_attribute("role") == "img"
    # What a screen reader reads: the figures in words (at the start of the clock, the
    # series hold what is there now).
    assert page.locator("#history-desc").text_content() == (
        "From 23:00 to 00:00: running 0 to 1 (now 1), pending 0 to 2 (now 2), terminating "
        "up to 1 (now 1); 1 taint evictions."
    )
    assert page.locator("#history polyline.series").count() == 3
    assert page.locator("#history rect.evictions title").text_content() == ("1 evicted from 23:55")


def test_a_node_page_says_who_stays_and_for_how_long(cluster: LocalCluster, browser: Any) -> None:
    page = browser.new_page()
    page.goto(f"{cluster.url}/dashboard/")
    with page.expect_navigation():  # the node page loaded, not only its URL committed
        page.locator("#nodes a", has_text="node-1").click()
    assert page.url == f"{cluster.url}/dashboard/nodes/node-1"
    assert page.title() == "node node-1"
    assert rows(page, "taints") == [
        ["maintenance=true:NoExecute", "NoExecute", ""],
        ["gpu:NoSchedule", "NoSchedule", ""],
    ]
    assert ["Ready", "True", "KubeletReady", "2026-01-01T00:00:00Z"] in rows(page, "conditions")
    pods = {row[0]: row[2] for row in rows(page, "pods")}
    assert pods["default/patient"] == (
        "maintenance:NoExecute op=Exists for 3600s: evicted at 01:00:00, in 1h0m0s"
    )
    # Already evicted (a finalizer holds it): not listed as staying.
    assert pods["default/doomed"] == "being deleted (DeletionByTaintManager)"
    with page.expect_navigation():
        page.locator("a", has_text="all nodes").click()
    assert page.url == f"{cluster.url}/dashboard/"


def test_unknown_pages_and_writes_are_refused(cluster: LocalCluster) -> None:
    with httpx.Client(base_url=cluster.url) as client:
        missing = client.get("/dashboard/nodes/nope")
        assert missing.status_code == 404
        assert "There is no node nope." in missing.text
        assert client.get("/dashboard/elsewhere").status_code == 404
        assert client.get("/dashboard/nodes/").status_code == 404
        assert client.post("/dashboard/").status_code == 405
        # The API next door is untouched.
        assert client.get("/api/v1/nodes/node-2").json()["metadata"]["name"] == "node-2"


def test_a_pod_its_kubelet_never_started_is_pending_too(
    tmp_path_factory: pytest.TempPathFactory, browser: Any
) -> None:
    with local_cluster(tmp_path_factory.mktemp("silent"), nodes=2) as running:
        running.stop_node("node-2")
        with httpx.Client(base_url=running.url) as api:
            api.post("/api/v1/namespaces/default/pods", json=pod("stuck", nodeName="node-2"))
            soft = {"key": "spot", "effect": "PreferNoSchedule"}
            api.patch(
                "/api/v1/nodes/node-1",
                json={"spec": {"taints": [soft]}},
                headers={"Content-Type": "application/merge-patch+json"},
            )
            running.advance(0)
            assert "1 pending" in api.get("/dashboard/").text
        # The node lifecycle controller hears nothing from node-2 for its grace period.
        running.advance(60)
        page = browser.new_page()
        page.goto(f"{running.url}/dashboard/")
        ready = {row[0]: row[2] for row in rows(page, "nodes")}
        assert ready == {"node-1": "✓ Ready", "node-2": "? Unknown"}

        def colour(selector: str) -> str:
            return str(page.eval_on_selector(selector, "e => getComputedStyle(e).color"))

        assert colour("#nodes .ready.Unknown") == "rgb(138, 75, 0)"  # amber
        chips = page.locator("#nodes .taint").all_inner_texts()
        assert "spot:PreferNoSchedule" in chips
        assert "node.kubernetes.io/unreachable:NoSchedule" in chips
        effects = {
            effect: page.eval_on_selector(
                f"#nodes .taint.{effect}", "e => getComputedStyle(e).backgroundColor"
            )
            for effect in ("PreferNoSchedule", "NoSchedule")
        }
        assert effects["PreferNoSchedule"] != effects["NoSchedule"]
        screenshot(page, "dashboard-unknown-node")


def test_the_chart_over_half_an_hour(
    tmp_path_factory: pytest.TempPathFactory, browser: Any
) -> None:
    with local_cluster(tmp_path_factory.mktemp("hour"), nodes=2) as running:
        with httpx.Client(base_url=running.url) as api:
            pods = "/api/v1/namespaces/default/pods"
            for i in range(4):
                api.post(pods, json=pod(f"web-{i}", nodeName="node-1"))
            running.advance(600)
            for i in range(2):
                api.post(pods, json=pod(f"ssd-{i}", nodeSelector={"disk": "ssd"}))
            running.advance(600)
            taint = {"key": "maintenance", "effect": "NoExecute"}
            api.patch(
                "/api/v1/nodes/node-1",
                json={"spec": {"taints": [taint]}},
                headers={"Content-Type": "application/merge-patch+json"},
            )
            running.advance(600)
        page = browser.new_page()
        page.goto(f"{running.url}/dashboard/")
        # The four pods ran for twenty minutes and were evicted; the two others still wait.
        assert page.locator("#history-desc").text_content() == (
            "From 23:30 to 00:30: running 0 to 4 (now 0), pending 0 to 2 (now 2), "
            "terminating up to 4 (now 0); 4 taint evictions."
        )
        assert page.locator("#history rect.evictions title").all_text_contents() == [
            "4 evicted from 00:20"
        ]
        page.locator("#history").screenshot(path=str(ARTIFACTS / "dashboard-chart.png"))
