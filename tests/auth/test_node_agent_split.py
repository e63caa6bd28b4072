"""`taintplane agents` with a node's own credentials against `taintplane serve --auth`: the
simulated kubelet runs its one node, watching only its Node and the pods bound to it (all the
Node authorizer lets a kubelet read), and still registers, heartbeats and runs pods."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import Kubectl

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")

TAINTPLANE = str(Path(sys.executable).with_name("taintplane"))
NODE_TOKEN = "node-1-token"


def _serve(data: Path, tokens: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [TAINTPLANE, "serve", "--port", "0", "--data-dir", str(data), "--auth", str(tokens)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("export KUBECONFIG="):
            return process
    raise AssertionError("taintplane serve never became ready")


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Kubectl, list[str]]]:
    data = tmp_path_factory.mktemp("node-agent")
    tokens = data / "tokens.csv"
    tokens.write_text(f'{NODE_TOKEN},system:node:node-1,2001,"system:nodes"\n')
    server = _serve(data, tokens)
    admin = data / "kubeconfig"
    config = yaml.safe_load(admin.read_text())
    config["users"][0]["user"]["token"] = NODE_TOKEN
    as_node = data / "node-1.kubeconfig"
    as_node.write_text(yaml.safe_dump(config))
    agents = subprocess.Popen(
        [TAINTPLANE, "agents", "--nodes", "2", "--kubeconfig", str(as_node)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ},
    )
    assert agents.stdout is not None
    said = [agents.stdout.readline() for _ in range(3)]
    try:
        yield Kubectl(admin, tmp_path_factory.mktemp("home")), said
    finally:
        for process in (agents, server):
            process.terminate()
        for process in (agents, server):
            process.wait(30)
            if process.stdout is not None:
                process.stdout.close()


def test_a_kubelet_with_its_nodes_token_runs_its_node_and_pods(
    split: tuple[Kubectl, list[str]],
) -> None:
    kubectl, said = split
    assert said[1:] == [
        "running as system:node:node-1: simulating node node-1 only (a node's credentials read "
        "only its own node and the pods bound to it)\n",
        "1 simulated node(s) registered\n",
    ]
    kubectl("wait", "--for=condition=Ready", "node/node-1", "--timeout=30s")
    assert kubectl("get", "nodes", "-o", "name") == "node/node-1\n"
    kubectl("run", "web", "--image=nginx", '--overrides={"spec":{"nodeName":"node-1"}}')
    kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=30s")
    lease = kubectl("get", "lease", "-n", "kube-node-lease", "node-1", "-o", "name")
    assert lease == "lease.coordination.k8s.io/node-1\n"
