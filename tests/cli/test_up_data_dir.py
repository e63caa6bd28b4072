"""``taintplane up`` / ``serve`` refuse what would go wrong later, before anything starts (a
pool file the API server would refuse, a token file that is not there, a data dir another
cluster runs on), and a virtual clock continues across restarts. No server is started."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from taintplane.cli.data_dir import (
    DataDirInUseError,
    DataDirLock,
    save_instant,
    saved_instant,
    virtual_clock,
)
from taintplane.cli.main import cli

WALL = datetime(2026, 3, 1, 12, 0, 0, 250_000, tzinfo=UTC)


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_a_bad_label_in_the_pool_file_is_a_usage_error(tmp_path: Path) -> None:
    pools = tmp_path / "badlabel.yaml"
    pools.write_text('pools:\n- name: a\n  count: 1\n  labels: {"bad key!": x}\n')
    code, output = invoke("up", "--cluster", str(pools), "--port", "0", "--data-dir", "d")
    assert code == 2
    assert (
        f'Error: --cluster: {pools}: pools[0].labels: Invalid value: "bad key!": name part must'
        in output
    )
    assert "Traceback" not in output


def test_nodes_and_cluster_help_says_what_up_does(tmp_path: Path) -> None:
    code, output = invoke("up", "--help")
    assert code == 0
    assert "not with --cluster" in " ".join(output.split())
    pools = tmp_path / "pools.yaml"
    pools.write_text("pools: [{name: a}]\n")
    code, output = invoke("up", "--nodes", "2", "--cluster", str(pools))
    assert code == 2
    assert "Error: --nodes and --cluster exclude each other: pick one" in output


@pytest.mark.parametrize("command", ["up", "serve"])
def test_a_missing_token_file_is_refused_not_created(tmp_path: Path, command: str) -> None:
    tokens = tmp_path / "tokens.csv"
    data = tmp_path / "data"
    code, output = invoke(command, "--auth", str(tokens), "--port", "0", "--data-dir", str(data))
    assert code == 2
    assert (
        f"Error: --auth: cannot read {tokens}: No such file or directory; create it with a "
        'line per user, token,user,uid[,"group1,group2"] (see the README)'
    ) in output
    assert not tokens.exists()
    assert not data.exists()


@pytest.mark.parametrize("command", ["up", "serve"])
def test_a_data_dir_in_use_is_refused(tmp_path: Path, command: str) -> None:
    data = tmp_path / "data"
    holder = DataDirLock(data)
    holder.acquire()
    holder.describe("pid 4242, serving http://127.0.0.1:6443")
    try:
        code, output = invoke(command, "--port", "0", "--data-dir", str(data))
    finally:
        holder.release()
    assert code == 1
    assert output == (
        f"Error: --data-dir {data} is in use by another taintplane (pid 4242, serving "
        "http://127.0.0.1:6443): stop it first, or pass another --data-dir\n"
    )
    assert not (data / "kubeconfig").exists()


def test_the_lock_is_exclusive_and_released(tmp_path: Path) -> None:
    first, second = DataDirLock(tmp_path), DataDirLock(tmp_path)
    first.acquire()
    with pytest.raises(DataDirInUseError, match=r"in use by another taintplane \(pid \d+\)"):
        second.acquire()
    first.release()
    second.acquire()  # a stopped (or crashed: the kernel drops it) holder frees the data dir
    second.release()


def test_a_virtual_clock_continues_where_it_was_advanced_to(tmp_path: Path) -> None:
    clock = virtual_clock(tmp_path, WALL)
    assert clock.now() == WALL.replace(microsecond=0)  # first start: the wall-clock second
    asyncio.run(clock.advance(3 * 3600 + 0.5))
    assert saved_instant(tmp_path) == datetime(2026, 3, 1, 15, 0, 0, 500_000, tzinfo=UTC)
    # Restarted ten minutes later by the wall clock: time goes on from 15:00:00.5.
    again = virtual_clock(tmp_path, datetime(2026, 3, 1, 12, 10, tzinfo=UTC))
    assert again.now() == datetime(2026, 3, 1, 15, 0, 0, 500_000, tzinfo=UTC)
    # Restarted a day later: the wall clock is ahead of anything stored, and is taken.
    later = virtual_clock(tmp_path, datetime(2026, 3, 2, 12, 0, tzinfo=UTC))
    assert later.now() == datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def test_the_saved_instant_never_goes_back(tmp_path: Path) -> None:
    save_instant(tmp_path, datetime(2026, 3, 1, 15, 0, tzinfo=UTC))
    save_instant(tmp_path, datetime(2026, 3, 1, 14, 0, tzinfo=UTC))
    assert saved_instant(tmp_path) == datetime(2026, 3, 1, 15, 0, tzinfo=UTC)
    assert (tmp_path / "clock").read_text() == "2026-03-01T15:00:00Z\n"
