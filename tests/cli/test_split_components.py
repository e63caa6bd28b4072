"""Split deployment: `taintplane serve` plus `controller-manager`, `agents` and `scheduler` as
separate processes, driven by the real kubectl."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Kubectl

TAINTPLANE = str(Path(sys.executable).with_name("taintplane"))

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
"""


def component(kubeconfig: Path, *args: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [TAINTPLANE, *args, "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ},
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    assert first.startswith(f"taintplane {args[0]} running against http://127.0.0.1:"), first
    return process


def serve(data: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [TAINTPLANE, "serve", "--port", "0", "--data-dir", str(data)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("export KUBECONFIG="):
            return process
    raise AssertionError("taintplane serve never became ready")


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    data = tmp_path_factory.mktemp("split")
    server = serve(data)
    kubeconfig = data / "kubeconfig"
    parts = [
        component(kubeconfig, "agents", "--nodes", "2"),
        component(kubeconfig, "controller-manager"),
        component(kubeconfig, "scheduler"),
    ]
    try:
        yield Kubectl(kubeconfig, tmp_path_factory.mktemp("home"))
    finally:
        for process in [*parts, server]:
            process.terminate()
        for process in [*parts, server]:
            process.wait(30)
            if process.stdout is not None:
                process.stdout.close()


def test_a_deployment_rolls_out_on_split_components(split: Kubectl) -> None:
    assert split("apply", "-f", "-", stdin=DEPLOYMENT) == "deployment.apps/web created\n"
    assert split("rollout", "status", "deploy/web", "--timeout=30s").splitlines()[-1] == (
        'deployment "web" successfully rolled out'
    )
    nodes = split("get", "nodes", "-o", "jsonpath={.items[*].metadata.name}")
    assert nodes == "node-1 node-2"
    phases = split("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].status.phase}")
    assert phases == "Running Running Running"


def test_unknown_controllers_are_named(split: Kubectl) -> None:
    done = subprocess.run(
        [TAINTPLANE, "controller-manager", "--controllers", "nope"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "unknown controller(s) nope; known: taint-eviction-controller" in done.stderr


def test_scheduler_and_controller_manager_hold_their_leases(split: Kubectl) -> None:
    for lease in ("kube-scheduler", "kube-controller-manager"):
        holder = split(
            "get", "lease", lease, "-n", "kube-system", "-o", "jsonpath={.spec.holderIdentity}"
        )
        assert holder.count("_") == 1, holder  # hostname_uuid, as upstream's identities
        assert (
            split(
                "get",
                "lease",
                lease,
                "-n",
                "kube-system",
                "-o",
                "jsonpath={.spec.leaseDurationSeconds}",
            )
            == "15"
        )
