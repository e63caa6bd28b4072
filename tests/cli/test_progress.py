"""Progress of long runs (issue 16 item 4): a bar on a terminal or with --progress, nothing
otherwise, and one last line of totals in stable words."""

from __future__ import annotations

import asyncio
import io
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import orjson
import pytest
from click.testing import CliRunner
from rich.console import Console

from taintplane.cli import clock_progress
from taintplane.cli.main import cli
from taintplane.cli.progress import ProgressDisplay, short_duration, totals_line
from taintplane.client import resource
from taintplane.clock import VirtualClock
from taintplane.sim import admin
from taintplane.sim.cluster import Cluster, in_process_cluster, running_cluster
from taintplane.sim.progress import WorkCount
from tests.cli.test_what_if_cli import SNAPSHOT_FROM_ELSEWHERE

START = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
EXAMPLES = Path(__file__).parents[2] / "examples"
TOTALS = re.compile(
    r"^(advanced|simulated|predicted) \S+ of cluster time in \d+\.\ds \([\d.]+x\): "
    r"\d+ objects written \(\d+/s\), \d+ events \(\d+/s\)$"
)


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Stopwatch:
    """A wall clock that reads 0 when the run starts and ``end`` at every later reading."""

    def __init__(self, end: float) -> None:
        self.end = end
        self.started = False

    def __call__(self) -> float:
        if not self.started:
            self.started = True
            return 0.0
        return self.end


def last_line(drawn: io.StringIO) -> str:
    return ANSI.sub("", drawn.getvalue()).rstrip().splitlines()[-1]


def test_the_totals_line_is_stable() -> None:
    assert totals_line("advanced", WorkCount(86400, 86400, 1204, 310), 8.2) == (
        "advanced 24h of cluster time in 8.2s (10537x): "
        "1204 objects written (147/s), 310 events (38/s)"
    )
    assert totals_line("simulated", WorkCount(90, 90, 3, 0), 20.0) == (
        "simulated 1m30s of cluster time in 20.0s (4.5x): 3 objects written (0/s), 0 events (0/s)"
    )
    assert totals_line("predicted", WorkCount(0, 0, 0, 0), 0.0) == (
        "predicted 0s of cluster time in 0.0s (0.0x): 0 objects written (-/s), 0 events (-/s)"
    )


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (86400, "24h"),
        (5400, "1h30m"),
        (3661, "1h1m1s"),
        (90, "1m30s"),
        (600, "10m"),
        (0.5, "500ms"),
    ],
)
def test_durations_drop_trailing_zero_units(seconds: float, shown: str) -> None:
    assert short_duration(seconds) == shown


def test_the_meter_counts_writes_and_events_from_its_start(tmp_path: Path) -> None:
    """What the display is fed: store writes (an Event is one) and Events, since the start."""
    out = io.StringIO()
    display = ProgressDisplay(
        "advanced",
        "advancing",
        60,
        console=Console(file=out, force_terminal=True, width=120),
        wall=Stopwatch(2.0),
    )

    async def run() -> None:
        clock = VirtualClock(START)
        async with in_process_cluster(tmp_path, clock, components=()) as cluster:
            assert cluster.client is not None
            await display(cluster, 0.0, 60)
            for name in ("a", "b", "c"):
                await cluster.client.create(
                    resource("", "v1", "pods"),
                    {
                        "metadata": {"name": name, "namespace": "default"},
                        "spec": {"containers": [{"name": "c", "image": "i"}]},
                    },
                    "default",
                )
            await cluster.client.create(
                resource("", "v1", "events"),
                {
                    "metadata": {"name": "e", "namespace": "default"},
                    "involvedObject": {"kind": "Pod", "name": "a", "namespace": "default"},
                    "reason": "Tested",
                    "message": "m",
                },
                "default",
            )
            await clock.advance(60)
            await display(cluster, 60.0, 60)

    asyncio.run(run())
    assert display.last == WorkCount(60.0, 60, 4, 1)
    line = display.finish()
    assert line == (
        "advanced 1m of cluster time in 2.0s (30x): 4 objects written (2/s), 1 events (0/s)"
    )
    assert "advancing 1m" in out.getvalue()  # the bar was drawn on the (forced) terminal
    assert last_line(out) == line


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running_cluster(tmp_path, clock=VirtualClock(START), components=()) as running:
        yield running


def advance(cluster: Cluster, *flags: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli, ["clock", "advance", "1h", *flags, "--kubeconfig", str(cluster.kubeconfig_path)]
    )
    return result.exit_code, result.output


def test_clock_advance_is_quiet_off_a_terminal(cluster: Cluster) -> None:
    assert advance(cluster) == (0, "2026-03-01T13:00:00Z\n")
    assert advance(cluster, "--no-progress") == (0, "2026-03-01T14:00:00Z\n")


def test_clock_advance_with_progress_ends_with_the_totals(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn = io.StringIO()

    def display(verb: str, doing: str, total: float, console: Console) -> ProgressDisplay:
        assert console.is_terminal  # --progress forces the bar on a non-terminal
        forced = Console(file=drawn, force_terminal=True, width=120)
        return ProgressDisplay(verb, doing, total, console=forced, wall=Stopwatch(2.0))

    monkeypatch.setattr(clock_progress, "ProgressDisplay", display)
    code, output = advance(cluster, "--progress")
    assert (code, output) == (0, "2026-03-01T13:00:00Z\n")
    # Nothing runs on this cluster: no writes.
    assert last_line(drawn) == (
        "advanced 1h of cluster time in 2.0s (1800x): 0 objects written (0/s), 0 events (0/s)"
    )


def test_the_server_streams_progress_only_when_asked(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(admin, "PROGRESS_INTERVAL", 0.01)
    url = f"{cluster.url}/taintplane/v1/clock/advance"
    with httpx.stream("POST", url, json={"seconds": 600, "progress": True}) as response:
        assert response.headers["content-type"] == "application/x-ndjson"
        lines = [orjson.loads(line) for line in response.iter_lines() if line]
    *progress, final = lines
    assert all(set(line) == {"progress"} for line in progress)
    assert all(line["progress"]["total"] == 600 for line in progress)
    assert final == {
        "now": "2026-03-01T12:10:00Z",
        "virtual": True,
        "totals": {"done": 600.0, "total": 600.0, "objects": 0, "events": 0},
    }
    # Old clients: one JSON object, as before.
    plain = httpx.post(url, json={"seconds": 60})
    assert plain.headers["content-type"] == "application/json"
    assert plain.json() == {"now": "2026-03-01T12:11:00Z", "virtual": True}


def test_simulate_with_progress_ends_with_the_totals() -> None:
    result = CliRunner().invoke(
        cli,
        [
            "simulate",
            str(EXAMPLES / "gpu-overheating" / "scenario.yaml"),
            "--progress",
            "-o",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    last = ANSI.sub("", result.stderr).rstrip().splitlines()[-1]
    assert TOTALS.match(last), last
    assert last.startswith("simulated 10m of cluster time in ")
    assert orjson.loads(result.stdout)["name"]  # stdout is still the report alone


def test_simulate_off_a_terminal_prints_no_progress() -> None:
    result = CliRunner().invoke(
        cli, ["simulate", str(EXAMPLES / "gpu-overheating" / "scenario.yaml")]
    )
    assert result.exit_code == 0, result.output
    assert result.stderr == ""


def test_what_if_with_progress_ends_with_the_totals(tmp_path: Path) -> None:
    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(SNAPSHOT_FROM_ELSEWHERE)
    args = ["what-if", "taint", "nodes", "worker", "maint=1:NoExecute", "--snapshot"]
    result = CliRunner().invoke(cli, [*args, str(snapshot), "--until", "2m", "--progress"])
    assert result.exit_code == 0, result.output
    last = ANSI.sub("", result.stderr).rstrip().splitlines()[-1]
    assert TOTALS.match(last), last
    assert last.startswith("predicted 2m of cluster time in ")
    assert result.stdout.startswith("What if: kubectl taint nodes worker maint=1:NoExecute\n")
    quiet = CliRunner().invoke(cli, [*args, str(snapshot), "--until", "2m"])
    assert quiet.exit_code == 0, quiet.output
    assert quiet.stderr == ""
