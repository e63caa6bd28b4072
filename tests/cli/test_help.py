"""Every command's --help shows an example and describes every option, in the user's words;
exit codes are 2 for usage and input-file errors, 1 for failures."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from taintplane.cli.main import cli


def commands(
    command: click.Command = cli, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None
            yield from commands(sub, (*path, name))


ALL = list(commands())
IDS = [" ".join(path) or "taintplane" for path, _ in ALL]


@pytest.mark.parametrize(("path", "command"), ALL, ids=IDS)
def test_every_help_has_an_example_and_describes_every_option(path, command):
    result = CliRunner().invoke(cli, [*path, "--help"], prog_name="taintplane", terminal_width=100)
    assert result.exit_code == 0, result.output
    text = result.output
    if path != ("bench",):  # bench --help lists the benchmarks; its docstring is checked below
        assert "Example" in text, text
        assert "  taintplane " in text.split("Example", 1)[1]
    assert "Example" in (command.help or "")
    undescribed = [
        p.opts
        for p in command.params
        if isinstance(p, click.Option) and not p.hidden and not p.help and p.name != "help"
    ]
    assert undescribed == []
    for internal in ("seed 0", "recipe", "DESIGN.md", "H3", "TODO"):
        assert internal not in text


def taintplane(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "taintplane", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("simulate", "bad.yaml"),
            "bad.yaml: nodes must be a whole number, 1 or more",
        ),
        (
            ("what-if", "taint", "nodes", "n1", "a:NoExecute", "--snapshot", "bad.yaml"),
            "snapshot bad.yaml, document 1: an object needs apiVersion, kind and metadata",
        ),
        (
            ("up", "--cluster", "bad.yaml", "--data-dir", "d", "--port", "0"),
            "--cluster: bad.yaml: the cluster file must have a non-empty list `pools`",
        ),
        (
            ("serve", "--admission-config", "bad.yaml", "--data-dir", "d", "--port", "0"),
            None,
        ),
    ],
    ids=["simulate", "what-if", "up", "serve"],
)
def test_a_bad_input_file_exits_2_saying_what_is_wrong_without_usage(tmp_path, args, message):
    (tmp_path / "bad.yaml").write_text("nodes: 0\n")
    done = taintplane(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert "Usage:" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"Error: {message or ''}")
    assert not (tmp_path / "d").exists()


def test_a_usage_error_exits_2_with_usage_and_a_failure_exits_1(tmp_path):
    usage = taintplane("simulate", cwd=tmp_path)
    assert usage.returncode == 2
    assert usage.stderr.startswith("Usage: python -m taintplane simulate [OPTIONS] SCENARIO")
    missing = taintplane("clock", "now", "--kubeconfig", str(tmp_path / "none"), cwd=tmp_path)
    assert missing.returncode == 1
    assert missing.stderr.startswith("Error: ")
