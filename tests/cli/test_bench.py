"""``taintplane bench``: the benchmarks behind BENCHMARKS.md from the command line."""

from __future__ import annotations

import json
import subprocess
import sys


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "taintplane", "bench", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_without_a_name_it_lists_them() -> None:
    done = bench()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "taintplane bench NAME [ARGS…]  (NAME --help for its options)"
    names = [line.split()[0] for line in lines[2:]]
    assert names == sorted(names)
    assert {"startup", "scheduler_throughput", "eviction_throughput", "memory_footprint"} <= set(
        names
    )
    assert "  startup" in done.stdout
    assert "Start-up" in next(line for line in lines[2:] if line.split()[0] == "startup")


def test_a_benchmark_runs_with_its_own_options() -> None:
    done = bench("fixture_startup", "--nodes", "1", "--runs", "1")
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert (figures["nodes"], figures["runs"]) == (1, 1)
    assert figures["ready_median_s"] > 0
    helped = bench("startup", "--help")
    assert helped.returncode == 0
    assert helped.stdout.startswith("usage: taintplane bench startup [-h] [--nodes NODES]")


def test_an_unknown_benchmark_is_a_usage_error() -> None:
    done = bench("nope")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[-1].startswith(
        "Error: no benchmark 'nope'; one of: admission_cost, bench_api, "
    )
