"""A node cannot label itself into a dedicated namespace (issue 17, item 6), over TLS with a
node's token and the real kubectl.

`taintplane dedicate` marks dedicated nodes with `node-restriction.kubernetes.io/dedicated`,
which NodeRestriction refuses to nodes. node-3, not dedicated, tries both labels on itself:
the new one is refused with upstream's 403; the old one (`dedicated`, which a node may set)
it gets, and it no longer matters: team-a's pods run on node-1 and node-2 only.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.auth.test_dedicated_invariant import ADMISSION
from tests.auth.test_kubectl_tls import Server, _stop

pytestmark = pytest.mark.skipif(
    subprocess.run(["which", "kubectl"], capture_output=True, check=False).returncode != 0,
    reason="needs kubectl",
)

NODE_3 = "node-3-token"


def _start(tmp: Path) -> Server:
    tokens = tmp / "tokens.csv"
    tokens.write_text(f'{NODE_3},system:node:node-3,2003,"system:nodes"\n')
    config = tmp / "admission.yaml"
    config.write_text(ADMISSION)
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "taintplane", "up", "--auth", str(tokens), "--port", "0"),
            *("--data-dir", str(tmp / "data"), "--nodes", "3"),
            *("--admission-config", str(config)),
            "--enable-admission-plugins=PodTolerationRestriction,PodNodeSelector",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp,
    )
    assert process.stdout is not None
    url, kubeconfig = "", None
    for line in process.stdout:
        if "serving " in line:
            url = line.rsplit("serving ", 1)[1].strip()
        if line.startswith("export KUBECONFIG="):
            kubeconfig = Path(line.split("=", 1)[1].strip())
            break
    assert kubeconfig is not None, "taintplane up did not start"
    threading.Thread(target=process.stdout.read, daemon=True).start()
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    return Server(process, kubeconfig, home, tmp / "data", url)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = _start(tmp_path_factory.mktemp("self-label"))
    try:
        nodes = ("node/node-1", "node/node-2", "node/node-3")
        running.ok("wait", "--for=condition=Ready", *nodes, "--timeout=30s")
        dedicate = subprocess.run(
            [
                *(sys.executable, "-m", "taintplane", "dedicate", "nodes", "node-1", "node-2"),
                *("--to-namespace", "team-a", "--kubeconfig", str(running.kubeconfig)),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert dedicate.returncode == 0, dedicate.stderr
        yield running
    finally:
        _stop(running)


def test_a_node_labelling_itself_never_draws_the_tenants_pods(server: Server) -> None:
    refused = server.kubectl(
        "label", "node", "node-3", "node-restriction.kubernetes.io/dedicated=team-a", token=NODE_3
    )
    assert refused.returncode == 1
    assert refused.stderr == (
        'Error from server (Forbidden): nodes "node-3" is forbidden: is not allowed to modify '
        "labels: node-restriction.kubernetes.io/dedicated\n"
    )
    # The label earlier dedications used, NodeRestriction lets a node set on itself.
    server.ok("label", "node", "node-3", "dedicated=team-a", token=NODE_3)
    for i in range(5):
        server.ok("run", f"web-{i}", "--image=nginx", "-n", "team-a", "--labels=app=web")
    server.ok(
        "wait", "--for=condition=Ready", "pod", "-l", "app=web", "-n", "team-a", "--timeout=60s"
    )
    placed = json.loads(server.ok("get", "pods", "-n", "team-a", "-o", "json"))["items"]
    nodes = sorted(p["spec"]["nodeName"] for p in placed)
    assert len(nodes) == 5
    assert set(nodes) <= {"node-1", "node-2"}, nodes
    # `who-can-land` says team-a's pods cannot reach node-3, and why the label is suspicious.
    report = subprocess.run(
        [
            *(sys.executable, "-m", "taintplane", "policy", "who-can-land", "node-3"),
            *("-o", "json", "--kubeconfig", str(server.kubeconfig)),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(report.stdout)
    team_a = next(row for row in found["namespaces"] if row["namespace"] == "team-a")
    assert (team_a["scheduled"], team_a["direct"]) == (False, False)
    assert found["warnings"] == [
        "node-3 has the label dedicated=team-a but not the taint dedicated=team-a: it may have "
        "labelled itself; a namespace that selects that label lands there"
    ]
