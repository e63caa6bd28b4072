"""``taintplane simulate``: scenario files, a scenario played on virtual time at exact
instants, and the report (text, JSON, and the HTML page in a real headless browser)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from taintplane.sim.scenario import ScenarioError, load_scenario, parse_scenario
from taintplane.sim.simulate import SAMPLES, SimulationReport, run_scenario

WEB = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "replicas": 4,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        },
    },
}

SCENARIO: dict[str, Any] = {
    "name": "zone outage",
    "cluster": {"pools": [{"name": "node", "count": 4, "zones": ["a", "b"]}]},
    "objects": [WEB],
    "steps": [
        {"at": "1m", "taint": {"nodes": ["node-1"], "taints": ["maintenance=true:NoExecute"]}},
        {"at": "2m", "stop": {"zone": "b"}},
        {"at": "10m", "start": {"zone": "b"}},
        {"at": "11m", "taint": {"nodes": ["node-9"], "taints": ["x:NoSchedule"]}},
    ],
    "until": "15m",
}


@pytest.fixture(scope="module")
def played() -> SimulationReport:
    return asyncio.run(run_scenario(parse_scenario(SCENARIO)))


def happenings(report: SimulationReport, *events: str) -> list[tuple[float, str, str, str]]:
    return [
        (report.offset(h.at), h.event, h.object, h.detail)
        for h in report.timeline
        if h.event in events
    ]


def test_the_scenario_plays_at_exact_instants(played: SimulationReport) -> None:
    assert played.offset(played.end) == 900
    assert [(played.offset(at), step.summary) for at, step in played.steps] == [
        (0, "create Deployment/web"),
        (60, "taint nodes node-1 maintenance=true:NoExecute"),
        (120, "stop zone b"),
        (600, "start zone b"),
        (660, "taint nodes node-9 x:NoSchedule"),
    ]
    # Zone b (node-2 and node-4, zones round-robin) goes silent at 120 s: Unknown and
    # NoSchedule-tainted at the review after the 50 s grace, NoExecute-tainted one review later
    # for the first node and one rate-limited step (0.1 nodes/s) after for the second; back at
    # 600 s, untainted on recovery.
    assert happenings(played, "tainted", "untainted") == [
        (60.0, "tainted", "node/node-1", "maintenance=true:NoExecute"),
        (175.0, "tainted", "node/node-2", "node.kubernetes.io/unreachable:NoSchedule"),
        (175.0, "tainted", "node/node-4", "node.kubernetes.io/unreachable:NoSchedule"),
        (180.0, "tainted", "node/node-2", "node.kubernetes.io/unreachable:NoExecute"),
        (190.0, "tainted", "node/node-4", "node.kubernetes.io/unreachable:NoExecute"),
        (600.0, "untainted", "node/node-2", "node.kubernetes.io/unreachable:NoSchedule"),
        (600.0, "untainted", "node/node-4", "node.kubernetes.io/unreachable:NoSchedule"),
        (605.0, "untainted", "node/node-2", "node.kubernetes.io/unreachable:NoExecute"),
        (605.0, "untainted", "node/node-4", "node.kubernetes.io/unreachable:NoExecute"),
    ]
    # Evictions: node-1's pod at once; the silent nodes' pods 300 s after their node's NoExecute
    # taint (DefaultTolerationSeconds); each replaced at that instant by the ReplicaSet.

    def placed_at(moment: float) -> dict[str, str]:
        """Pod -> node, for the pods bound and not yet deleted at ``moment``."""
        where = {
            pod: detail.removeprefix("to ")
            for at, _, pod, detail in happenings(played, "scheduled")
            if at <= moment
        }
        for at, _, pod, _ in happenings(played, "deleted"):
            if at <= moment:
                where.pop(pod, None)
        return where

    expected = sorted(
        [(60.0, pod) for pod, node in placed_at(59).items() if node == "node-1"]
        + [
            ({"node-2": 480.0, "node-4": 490.0}[node], pod)
            for pod, node in placed_at(120).items()
            if node in ("node-2", "node-4")
        ]
    )
    evictions = [(at, pod) for at, _, pod, _ in happenings(played, "evicting")]
    assert sorted(evictions) == expected
    assert [at for at, *_ in evictions] == sorted(at for at, _ in expected)
    replaced = [at for at, *_ in happenings(played, "created") if at > 0]
    assert replaced == [at for at, _ in sorted(expected)]
    [failed] = happenings(played, "step-failed")
    assert failed == (660.0, "step-failed", "step/taint", 'nodes "node-9" not found')


def test_samples_count_pods_and_nodes(played: SimulationReport) -> None:
    assert len(played.samples) == SAMPLES + 1
    first, last = played.samples[0], played.samples[-1]
    assert (first.running, first.pending, first.nodes_ready) == (4, 0, 4)
    assert (last.running, last.terminating, last.nodes_ready, last.nodes_no_execute) == (
        4,
        0,
        4,
        1,
    )
    at_400 = next(s for s in played.samples if played.offset(s.at) >= 400)
    assert (at_400.nodes_ready, at_400.nodes_no_execute, at_400.nodes_no_schedule) == (2, 3, 2)


def test_the_json_report_holds_everything(played: SimulationReport) -> None:
    data = played.to_json()
    assert (data["name"], data["start"], data["until"], data["nodes"]) == (
        "zone outage",
        "2026-01-01T00:00:00Z",
        "2026-01-01T00:15:00Z",
        4,
    )
    assert data["counts"]["evicting"] == sum(h.event == "evicting" for h in played.timeline)
    assert data["samples"][0]["pods"] == {
        "running": 4,
        "pending": 0,
        "terminating": 0,
        "finished": 0,
    }
    assert len(data["timeline"]) == len(played.timeline)


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        ({"nodes": 2, "cluster": {}}, "give nodes or cluster, not both"),
        ({"nodes": 0}, "nodes must be a whole number, 1 or more"),
        (
            {"surprise": 1},
            "the scenario: unknown field(s) surprise; known: cluster, name, "
            "nodes, objects, start, steps, until",
        ),
        (
            {"steps": [{"at": "1m"}]},
            "steps[0]: give exactly one action, one of taint, stop, start, condition, create, apply, "
            "deviceHealth",
        ),
        (
            {"steps": [{"at": "soon", "stop": {"nodes": ["node-1"]}}]},
            'steps[0].at: time: invalid duration "soon" (use e.g. 90s, 5m, 1h30m)',
        ),
        (
            {"steps": [{"at": "1m", "taint": {"nodes": ["node-1"], "taints": ["k=v:Sometimes"]}}]},
            "steps[0].taint.taints: invalid taint effect: Sometimes, unsupported taint effect",
        ),
        (
            {
                "steps": [
                    {"at": "1m", "taint": {"all": True, "nodes": ["n"], "taints": ["k:NoSchedule"]}}
                ]
            },
            "steps[0].taint: name the nodes with exactly one of nodes, selector, all",
        ),
        ({"steps": [{"at": "1m", "stop": {}}]}, "steps[0].stop: give nodes or zone"),
        (
            {
                "steps": [
                    {"at": "1m", "condition": {"node": "node-1", "type": "Hot", "status": "True"}}
                ]
            },
            "steps[0].condition.type must be one of Ready, MemoryPressure, DiskPressure, "
            "PIDPressure, NetworkUnavailable",
        ),
        (
            {"steps": [{"at": "1m", "create": [{"kind": "Pod"}]}]},
            "steps[0].create[0]: an object needs apiVersion, kind and metadata",
        ),
        (
            {"steps": [{"at": "10m", "stop": {"zone": "a"}}], "until": "5m"},
            "until (300s) ends before the last step (at 600s)",
        ),
        ({"start": "yesterday"}, "start: 'yesterday' is not an RFC 3339 time"),
    ],
)
def test_a_bad_scenario_says_what_and_where(scenario: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError) as error:
        parse_scenario(scenario)
    assert str(error.value) == message


def test_defaults_and_a_file(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("steps:\n- {at: 2m, stop: {nodes: [node-1]}}\n")
    scenario = load_scenario(path)
    assert (scenario.name, len(scenario.nodes), scenario.until) == ("scenario", 3, 420.0)
    assert scenario.start.isoformat() == "2026-01-01T00:00:00+00:00"
    path.write_text("a: 1\n---\nb: 2\n")
    with pytest.raises(ScenarioError, match=r"a scenario is one YAML document$"):
        load_scenario(path)


def taintplane(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "taintplane", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "120"},
    )


def test_the_command_line_prints_and_writes_the_report(tmp_path: Path) -> None:
    scenario = tmp_path / "outage.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO))
    done = taintplane("simulate", str(scenario), "--report", "out.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[:8] == [
        "Simulated 'zone outage': 4 nodes from 2026-01-01T00:00:00Z for 15m0s.",
        "",
        "Steps:",
        "  1. +0s  create Deployment/web",
        "  2. +1m0s  taint nodes node-1 maintenance=true:NoExecute",
        "  3. +2m0s  stop zone b",
        "  4. +10m0s  start zone b",
        "  5. +11m0s  taint nodes node-9 x:NoSchedule",
    ]
    assert lines[-3].startswith("Happened: created ")
    assert ", step-failed 1, " in lines[-3]
    assert lines[-2] == "At the end: 4 pods running, 0 pending, 0 terminating; 4 of 4 nodes Ready."
    assert lines[-1] == "Report: out.html"
    assert (tmp_path / "out.html").read_text().startswith("<!doctype html>")
    as_json = taintplane("simulate", str(scenario), "-o", "json", cwd=tmp_path)
    assert json.loads(as_json.stdout)["counts"]["step-failed"] == 1


def test_the_command_line_refuses_a_bad_scenario(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("nodes: 0\n")
    done = taintplane("simulate", "bad.yaml", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")  # an input file error, as a usage error
    assert done.stderr == "Error: bad.yaml: nodes must be a whole number, 1 or more\n"
    missing = taintplane("simulate", "nope.yaml", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr == "Error: cannot read nope.yaml: No such file or directory\n"


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)")
def test_the_html_report_in_a_real_browser(played: SimulationReport, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    from taintplane.sim.report_html import render_html

    page_file = tmp_path / "report.html"
    page_file.write_text(render_html(played))
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 800})
            errors: list[str] = []
            page.on("console", lambda message: errors.append(message.text))
            requests: list[str] = []
            page.on("request", lambda request: requests.append(request.url))
            page.goto(page_file.as_uri())
            assert page.title() == "taintplane simulate: zone outage"
            # Two charts, each a line per series over every sample, the five steps marked.
            for chart, series in (("#pods-chart", 4), ("#nodes-chart", 3)):
                assert page.locator(f"{chart} polyline.series").count() == series
                assert page.locator(f"{chart} line.step").count() == 5
                box = page.locator(chart).bounding_box()
                assert box is not None
                assert (box["width"], box["height"]) == (900, 240)
            points = page.locator('#pods-chart polyline[data-series="running"]').get_attribute(
                "points"
            )
            assert points is not None
            assert len(points.split()) == SAMPLES + 1
            assert page.locator("#steps tr").count() == 1 + 5
            assert page.locator("#timeline tr").count() == 1 + len(played.timeline)
            assert page.locator("#timeline tr").nth(1).inner_text().split("\t")[:2] == [
                "+0s",
                "created",
            ]
            evicting = played.counts()["evicting"]
            assert page.locator("#counts").inner_text().count(f"evicting\t{evicting}") == 1
            # Self-contained: nothing fetched but the page itself, nothing logged.
            assert requests == [page_file.as_uri()]
            assert errors == []
            # Kept for a person to look at (.ci/run lists test-artifacts/).
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "simulate-report.png"), full_page=True)
        finally:
            browser.close()


def test_a_long_timeline_keeps_the_news_and_leaves_routine_pod_start_up_out() -> None:
    from datetime import UTC, datetime

    from taintplane.sim.recorder import Happening
    from taintplane.sim.simulate import shown_timeline

    at = datetime(2026, 1, 1, tzinfo=UTC)
    routine = [Happening(at, "created", "Pod", f"p-{i}", "default") for i in range(10)]
    news = [
        Happening(at, "tainted", "Node", "node-1", "", "k:NoExecute"),
        Happening(at, "evicting", "Pod", "p-1", "default", "DeletionByTaintManager: …"),
        Happening(at, "step-failed", "Step", "taint", "", 'nodes "x" not found'),
    ]
    timeline = [*routine[:5], news[0], *routine[5:], *news[1:]]
    assert shown_timeline(timeline, 20) == (timeline, 0, 0)
    assert shown_timeline(timeline, 5) == (news, 10, 0)
    assert shown_timeline(timeline, 2) == (news[:2], 10, 1)
