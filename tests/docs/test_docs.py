"""Docs that cannot rot: every example in examples/ plays as its expected.txt says, and every
shell block the README or docs/ mark ```` ```sh runnable ```` runs, in order, as a user would
paste it (a fresh HOME, so `taintplane up -d` makes its own cluster and kubeconfig context),
its output compared with the ```` ```text output ```` block that follows it, if any.

In expected text, ``…`` stands for any run of characters within a line, and a line that is
only ``…`` for any number of lines; runs of spaces compare as one (column widths follow
generated names).
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from taintplane.cli.simulate import render_text
from taintplane.sim.scenario import load_scenario
from taintplane.sim.simulate import run_scenario

ROOT = Path(__file__).parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").iterdir() if (p / "scenario.yaml").exists())
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\S*)(.*)$")


@dataclass
class Block:
    line: int
    code: str
    expected: str | None


def blocks(path: Path) -> list[Block]:
    """The runnable blocks of a Markdown file, each with the output block that follows it."""
    found: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    pending: Block | None = None
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match or not match.group(1):
            if lines[i].strip():
                pending = None  # prose between: the next text block is not this one's output
            i += 1
            continue
        lang, info = match.group(1), match.group(2).split()
        end = i + 1
        while not lines[end].startswith("```"):
            end += 1
        body = "\n".join(lines[i + 1 : end]) + "\n"
        if lang == "sh" and "runnable" in info:
            pending = Block(i + 1, body, None)
            found.append(pending)
        elif lang == "text" and "output" in info and pending is not None:
            pending.expected = body
            pending = None
        else:
            pending = None
        i = end + 1
    return found


def _pattern(line: str) -> re.Pattern[str]:
    parts = [re.escape(p) for p in " ".join(line.split()).split("…")]
    return re.compile("^" + ".*".join(parts) + "$")


def matches(expected: str, actual: str) -> bool:
    """``actual`` as ``expected`` describes it (see the module's docstring)."""
    want = [line for line in expected.splitlines() if line.strip()]
    have = [" ".join(line.split()) for line in actual.splitlines() if line.strip()]

    def match(w: int, h: int) -> bool:
        if w == len(want):
            return h == len(have)
        if want[w].strip() == "…":
            return any(match(w + 1, k) for k in range(h, len(have) + 1))
        return h < len(have) and bool(_pattern(want[w]).match(have[h])) and match(w + 1, h + 1)

    return match(0, 0)


def contains_in_order(expected: str, actual: str) -> bool:
    """Every line of ``expected`` matches a line of ``actual``, in that order."""
    have = [" ".join(line.split()) for line in actual.splitlines() if line.strip()]
    at = 0
    for line in (w for w in expected.splitlines() if w.strip()):
        pattern = _pattern(line)
        while at < len(have) and not pattern.match(have[at]):
            at += 1
        if at == len(have):
            return False
        at += 1
    return True


def test_the_matcher() -> None:
    assert matches("a …\n…\nz\n", "a b c\nx\ny\nz\n")
    assert matches("NAME   NODE\napp    node-1\n", "NAME NODE\napp node-1\n")
    assert not matches("a\n", "a\nb\n")
    assert contains_in_order("b\nd…\n", "a\nb\nc\ndone\n")
    assert not contains_in_order("d\nb\n", "b\nd\n")


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_plays_as_expected(example: Path) -> None:
    scenario_file = yaml.safe_load((example / "scenario.yaml").read_text())
    # The scenario is the cluster file and the manifests beside it, played on virtual time.
    assert scenario_file["cluster"] == yaml.safe_load((example / "cluster.yaml").read_text())
    manifests = [o for o in yaml.safe_load_all((example / "manifests.yaml").read_text()) if o]
    assert scenario_file["objects"] == manifests
    report = asyncio.run(run_scenario(load_scenario(example / "scenario.yaml")))
    text = render_text(report, None)
    expected = (example / "expected.txt").read_text()
    assert contains_in_order(expected, text), text


RUNNABLE = [(path, block) for path in DOCS for block in blocks(path)]


@pytest.fixture(scope="module")
def shell(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A user's shell: a fresh HOME (its kubeconfig, its clusters), taintplane and kubectl on
    PATH, in the repository (examples/ at hand). Clusters left running are deleted at the end."""
    home = tmp_path_factory.mktemp("home")
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "TAINTPLANE_HOME")}
    env |= {
        "HOME": str(home),
        "TAINTPLANE_HOME": str(home / "taintplane"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        "COLUMNS": "200",
    }
    yield env
    clusters = home / "taintplane" / "clusters"
    for cluster in sorted(clusters.iterdir()) if clusters.exists() else []:
        subprocess.run(["taintplane", "delete", cluster.name], env=env, capture_output=True)


@pytest.mark.skipif(not RUNNABLE, reason="no runnable blocks")
def test_every_runnable_block_runs(shell: dict[str, str]) -> None:
    for path, block in RUNNABLE:
        where = f"{path.relative_to(ROOT)}:{block.line}"
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block.code],
            cwd=ROOT,
            env=shell,
            capture_output=True,
            text=True,
            timeout=120,
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{where} failed ({done.returncode}):\n{output}"
        if block.expected is not None:
            assert matches(block.expected, done.stdout), (
                f"{where}: its output is not what the docs show:\n{done.stdout}"
            )
