"""``taintplane clock sync``: a virtual clock that stood still jumps forward to the wall clock
(kubectl reckons event ages on the wall clock); one that is ahead cannot go back."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

from taintplane.cli import clock as clock_cli
from taintplane.cli.data_dir import virtual_clock
from taintplane.cli.main import cli
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import Cluster, running_cluster

START = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def cluster(tmp_path) -> Iterator[Cluster]:
    with running_cluster(tmp_path, clock=VirtualClock(START), components=()) as running:
        yield running


class Wall:
    def __init__(self, now: datetime) -> None:
        self.instant = now

    def now(self) -> datetime:
        return self.instant


def sync(cluster: Cluster, monkeypatch: pytest.MonkeyPatch, wall: datetime) -> tuple[int, str]:
    monkeypatch.setattr(clock_cli, "RealClock", lambda: Wall(wall))
    result = CliRunner().invoke(
        cli, ["clock", "sync", "--kubeconfig", str(cluster.kubeconfig_path)]
    )
    return result.exit_code, result.output


def test_a_clock_behind_jumps_to_the_wall_clocks_second(cluster, monkeypatch):
    assert sync(cluster, monkeypatch, START + timedelta(hours=2, seconds=5.7)) == (
        0,
        "2026-03-01T14:00:05Z\n",
    )
    assert cluster.clock.now() == START + timedelta(hours=2, seconds=5)
    # In step already: nothing moves.
    assert sync(cluster, monkeypatch, START + timedelta(hours=2, seconds=5.2)) == (
        0,
        "2026-03-01T14:00:05Z\n",
    )


def test_a_clock_ahead_cannot_go_back(cluster, monkeypatch):
    code, output = sync(cluster, monkeypatch, START - timedelta(minutes=5))
    assert code == 1
    assert output == (
        "Error: the cluster's clock (2026-03-01T12:00:00Z) is 5m0s ahead of the wall clock "
        "(2026-03-01T11:55:00Z), and a clock cannot go back: kubectl reckons the ages of "
        "events on the wall clock, so they read <invalid> for another 5m0s\n"
    )
    assert cluster.clock.now() == START


def test_a_real_clock_has_nothing_to_sync(tmp_path):
    with running_cluster(tmp_path, components=()) as cluster:
        result = CliRunner().invoke(
            cli, ["clock", "sync", "--kubeconfig", str(cluster.kubeconfig_path)]
        )
    assert result.exit_code == 0
    assert result.output.endswith("Z (the cluster runs on the wall clock: nothing to sync)\n")


def test_up_clock_virtual_starts_at_the_wall_clocks_second(tmp_path):
    wall = datetime(2026, 3, 1, 12, 0, 7, 900_000, tzinfo=UTC)
    assert virtual_clock(tmp_path, wall).now() == wall.replace(microsecond=0)
