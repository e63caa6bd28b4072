"""Shared fixtures: a running cluster and a kubectl bound to it (fresh HOME per module)."""

from __future__ import annotations

import io
import itertools
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from taintplane.sim.cluster import Cluster, running_cluster


@dataclass
class Kubectl:
    kubeconfig: Path
    home: Path

    def env(self) -> dict[str, str]:
        return {
            "HOME": str(self.home),
            "KUBECONFIG": str(self.kubeconfig),
            "PATH": os.environ["PATH"],
        }

    def run(
        self, *args: str, stdin: str | None = None, check: bool = False
    ) -> subprocess.CompletedProcess[str]:
        env = self.env()
        done = subprocess.run(
            ["kubectl", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {done.stderr}")
        return done

    def __call__(self, *args: str, stdin: str | None = None) -> str:
        return self.run(*args, stdin=stdin, check=True).stdout


@pytest.fixture(scope="session", autouse=True)
def _own_clusters_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """`taintplane up` records its cluster in $TAINTPLANE_HOME and merges a context into
    $KUBECONFIG (else ~/.kube/config): keep the user's own out of the tests' reach. Module
    fixtures started here; each test gets its own (below), so clusters of the default name
    that tests run at the same time are not namesakes."""
    home = tmp_path_factory.mktemp("taintplane-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TAINTPLANE_HOME", str(home))
        patch.setenv("KUBECONFIG", str(home / "kubeconfig"))
        yield


_homes = itertools.count()


@pytest.fixture(autouse=True)
def _own_test_clusters_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    # Not created: taintplane creates what it writes to.
    home = tmp_path_factory.getbasetemp() / "taintplane-homes" / str(next(_homes))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TAINTPLANE_HOME", str(home))
        patch.setenv("KUBECONFIG", str(home / "kubeconfig"))
        yield


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The API server alone: these tests pin what the server does with objects, and a
    scheduler would change pods under them. Scheduler tests use their own cluster."""
    with running_cluster(tmp_path_factory.mktemp("cluster"), components=()) as running:
        yield running


@pytest.fixture(scope="module")
def kubectl(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    if shutil.which("kubectl") is None:  # pragma: no cover - CI installs it
        pytest.fail("kubectl is not on PATH; the CI image provides it")
    return Kubectl(cluster.kubeconfig_path, tmp_path_factory.mktemp("home"))


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line for the coverage of the whole run (pyproject asks pytest-cov for no table;
    `coverage report` prints it per file from the data this run saved)."""
    plugin = terminalreporter.config.pluginmanager.getplugin("_cov")
    controller = getattr(plugin, "cov_controller", None)
    if controller is None or terminalreporter.config.option.collectonly:
        return  # --no-cov, or nothing ran
    total = controller.cov.report(file=io.StringIO(), output_format="total", ignore_errors=True)
    if total is not None:
        terminalreporter.write_line(
            f"coverage: {total:.1f} % of taintplane's lines and branches "
            "(`.venv/bin/python -m coverage report` lists them per file)"
        )
