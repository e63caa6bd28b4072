"""``taintplane up --clock virtual`` driven as a user would: ``taintplane clock`` and
``taintplane node`` against the running process, the real kubectl to look.

Every command returns once the cluster is quiet at the clock's instant (``clock advance`` by
contract), so what kubectl prints after it is exact: ages, statuses, taints.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO

import httpx
import pytest

from tests.cli.test_up import start
from tests.conftest import Kubectl

RFC3339 = "%Y-%m-%dT%H:%M:%SZ"


class Drain:
    """Reads a running server's stdout and stderr as they come, so a server that logs more
    than a pipe holds (~64 KB) never blocks on a write nobody reads; ``text`` gives what
    each said once the process has ended."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._said: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self._threads = [
            threading.Thread(target=self._read, args=(stream, name), daemon=True)
            for name, stream in (("stdout", process.stdout), ("stderr", process.stderr))
            if stream is not None
        ]
        for thread in self._threads:
            thread.start()

    def _read(self, stream: IO[str], name: str) -> None:
        with stream:  # closed at the end of output, as communicate() would
            for line in stream:
                self._said[name].append(line)

    def text(self, timeout: float = 60) -> tuple[str, str]:
        for thread in self._threads:
            thread.join(timeout)
        return "".join(self._said["stdout"]), "".join(self._said["stderr"])


@dataclass
class Running:
    process: subprocess.Popen[str]
    url: str
    kubeconfig: Path
    home: Path
    kubectl: Kubectl
    drain: Drain

    def taintplane(
        self, *args: str, kubeconfig_env: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """The real command line; the cluster found through $KUBECONFIG or --kubeconfig."""
        env = {"HOME": str(self.home), "PATH": os.environ["PATH"]}
        if kubeconfig_env:
            env["KUBECONFIG"] = str(self.kubeconfig)
        else:
            args = (*args, "--kubeconfig", str(self.kubeconfig))
        return run_taintplane(*args, env=env)

    def ok(self, *args: str, kubeconfig_env: bool = True) -> str:
        done = self.taintplane(*args, kubeconfig_env=kubeconfig_env)
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        return done.stdout


def run_taintplane(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "taintplane", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def up(tmp_path: Path, home: Path, *args: str) -> Running:
    """``taintplane up ARGS --port 0``, read up to its ``export KUBECONFIG=`` line."""
    process = start(tmp_path, "--port", "0", *args)
    assert process.stdout is not None
    first = process.stdout.readline()
    second = process.stdout.readline()
    if not second.startswith("export KUBECONFIG="):
        process.kill()
        _, err = process.communicate(timeout=30)
        pytest.fail(f"taintplane up did not start: {first!r} {second!r} {err}")
    assert first.startswith("taintplane cluster is up in ")
    url = first.rsplit(" ", 1)[1].strip()
    kubeconfig = Path(second.strip().split("=", 1)[1])
    assert kubeconfig == tmp_path / "data" / "kubeconfig"
    return Running(process, url, kubeconfig, home, Kubectl(kubeconfig, home), Drain(process))


def module_cluster(
    tmp_path_factory: pytest.TempPathFactory, name: str, *args: str
) -> Iterator[Running]:
    """A module's ``taintplane up --clock virtual --nodes 3 ARGS``, stopped after it."""
    home = tmp_path_factory.mktemp("home")
    cluster = up(tmp_path_factory.mktemp(name), home, "--clock", "virtual", "--nodes", "3", *args)
    try:
        yield cluster
    finally:
        stop(cluster)


def stop(running: Running) -> None:
    running.process.terminate()
    running.process.wait(timeout=60)
    out, err = running.drain.text()
    assert out.endswith("taintplane stopped\n"), (out, err)


def fails(done: subprocess.CompletedProcess[str], code: int, message: str) -> None:
    """Non-zero exit, nothing on stdout, and MESSAGE as the last line of stderr."""
    assert done.returncode == code, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert done.stderr.splitlines()[-1] == message


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="module")
def virtual(tmp_path_factory: pytest.TempPathFactory, home: Path) -> Iterator[Running]:
    running = up(tmp_path_factory.mktemp("virtual"), home, "--clock", "virtual", "--nodes", "3")
    try:
        yield running
    finally:
        stop(running)


def taints(running: Running, node: str) -> list[dict[str, str]]:
    text = running.kubectl("get", "node", node, "-o", "jsonpath={.spec.taints}")
    return json.loads(text) if text else []


def test_virtual_time_nodes_fail_and_recover(virtual: Running) -> None:
    kubectl = virtual.kubectl
    # The clock stands still until told to move; the nodes were created at its instant.
    now = virtual.ok("clock", "now")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n", now)
    assert virtual.ok("clock", "now", kubeconfig_env=False) == now
    start_time = datetime.strptime(now.strip(), RFC3339)
    assert virtual.ok("clock", "advance", "0s") == now
    assert virtual.ok("clock", "now") == now
    assert kubectl("get", "node", "node-1", "-o", "jsonpath={.metadata.creationTimestamp}") == (
        now.strip()
    )
    assert kubectl("get", "nodes") == (
        "NAME     STATUS   ROLES    AGE   VERSION\n"
        "node-1   Ready    <none>   0s    v1.35.0\n"
        "node-2   Ready    <none>   0s    v1.35.0\n"
        "node-3   Ready    <none>   0s    v1.35.0\n"
    )
    assert [taints(virtual, f"node-{i}") for i in (1, 2, 3)] == [[], [], []]

    # advance prints the new instant, and the cluster has lived it.
    after_90s = (start_time + timedelta(seconds=90)).strftime(RFC3339)
    assert virtual.ok("clock", "advance", "90s") == f"{after_90s}\n"
    assert virtual.ok("clock", "now") == f"{after_90s}\n"
    assert kubectl("get", "nodes", "--no-headers") == (
        "node-1   Ready   <none>   90s   v1.35.0\n"
        "node-2   Ready   <none>   90s   v1.35.0\n"
        "node-3   Ready   <none>   90s   v1.35.0\n"
    )

    # A stopped kubelet: after the grace period the node is Unknown (kubectl: NotReady) and
    # the node lifecycle controller taints it unreachable.
    assert virtual.ok("node", "stop", "node-2") == "node/node-2 stopped\n"
    after_2m = (start_time + timedelta(seconds=210)).strftime(RFC3339)
    assert virtual.ok("clock", "advance", "2m", kubeconfig_env=False) == f"{after_2m}\n"
    assert kubectl("get", "nodes") == (
        "NAME     STATUS     ROLES    AGE     VERSION\n"
        "node-1   Ready      <none>   3m30s   v1.35.0\n"
        "node-2   NotReady   <none>   3m30s   v1.35.0\n"
        "node-3   Ready      <none>   3m30s   v1.35.0\n"
    )
    ready = kubectl(
        "get",
        "node",
        "node-2",
        "-o",
        'jsonpath={.status.conditions[?(@.type=="Ready")].status}'
        ' {.status.conditions[?(@.type=="Ready")].reason}',
    )
    assert ready == "Unknown NodeStatusUnknown"
    unreachable = taints(virtual, "node-2")
    assert sorted((t["key"], t["effect"]) for t in unreachable) == [
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoSchedule"),
    ]
    for taint in unreachable:  # added on the virtual timeline, while node-2 was down
        added = datetime.strptime(taint["timeAdded"], RFC3339)
        assert start_time + timedelta(seconds=90) < added <= start_time + timedelta(seconds=210)
    assert taints(virtual, "node-1") == []

    # Started again: Ready after the next status update, and the taints are gone.
    assert virtual.ok("node", "start", "node-2") == "node/node-2 started\n"
    after_10s = (start_time + timedelta(seconds=220)).strftime(RFC3339)
    assert virtual.ok("clock", "advance", "10s") == f"{after_10s}\n"
    assert kubectl("get", "node", "node-2", "--no-headers") == (
        "node-2   Ready   <none>   3m40s   v1.35.0\n"
    )
    assert taints(virtual, "node-2") == []

    # A reported condition becomes its NoSchedule taint (TaintNodesByCondition).
    assert virtual.ok("node", "condition", "node-1", "MemoryPressure=True") == (
        "node/node-1 condition MemoryPressure=True\n"
    )
    assert virtual.ok("clock", "advance", "0s") == f"{after_10s}\n"
    assert taints(virtual, "node-1") == [
        {
            "effect": "NoSchedule",
            "key": "node.kubernetes.io/memory-pressure",
            "timeAdded": after_10s,
        }
    ]
    pressure = kubectl(
        "get",
        "node",
        "node-1",
        "-o",
        'jsonpath={.status.conditions[?(@.type=="MemoryPressure")].status}',
    )
    assert pressure == "True"
    assert kubectl("get", "node", "node-1", "--no-headers") == (
        "node-1   Ready   <none>   3m40s   v1.35.0\n"
    )
    assert virtual.ok("node", "condition", "node-1", "MemoryPressure=False") == (
        "node/node-1 condition MemoryPressure=False\n"
    )
    virtual.ok("clock", "advance", "10s")
    assert taints(virtual, "node-1") == []


def test_metrics_are_served_in_prometheus_text(virtual: Running) -> None:
    response = httpx.get(f"{virtual.url}/metrics", timeout=30)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    assert "# TYPE node_collector_evictions_total counter" in response.text
    assert "node_collector_zone_size" in response.text


def test_clock_endpoint(virtual: Running) -> None:
    now = virtual.ok("clock", "now").strip()
    assert httpx.get(f"{virtual.url}/taintplane/v1/clock", timeout=30).json() == {
        "now": now,
        "virtual": True,
    }
    response = httpx.get(f"{virtual.url}/taintplane/v1/nope", timeout=30)
    assert (response.status_code, response.json()) == (
        404,
        {"error": "no admin endpoint GET /taintplane/v1/nope"},
    )


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ["clock", "advance", "-5s"],
            2,
            "Error: Invalid value for DURATION: a clock cannot go back: use a positive duration",
        ),
        (
            ["clock", "advance", "-1h30m"],
            2,
            "Error: Invalid value for DURATION: a clock cannot go back: use a positive duration",
        ),
        (
            # The POSIX way to pass a negative value, which used to read "--" as the duration.
            ["clock", "advance", "--", "-5m"],
            2,
            "Error: Invalid value for DURATION: a clock cannot go back: use a positive duration",
        ),
        (
            ["clock", "advance", "5d"],
            2,
            'Error: Invalid value for DURATION: time: unknown unit "d" in duration "5d" '
            "(use e.g. 30s, 5m, 1h30m)",
        ),
        (
            ["clock", "advance", "90"],
            2,
            'Error: Invalid value for DURATION: time: missing unit in duration "90" '
            "(use e.g. 30s, 5m, 1h30m)",
        ),
        (["clock", "advance"], 2, "Error: Missing argument 'DURATION'."),
        (["node", "stop", "nope"], 1, "Error: node 'nope' is not a simulated node"),
        (["node", "start", "nope"], 1, "Error: node 'nope' is not a simulated node"),
        (["node", "stop"], 2, "Error: name at least one node, or pass --zone ZONE"),
        (["node", "start"], 2, "Error: name at least one node, or pass --zone ZONE"),
        (
            ["node", "stop", "node-1", "--zone", "zone-a"],
            2,
            "Error: give node names or --zone, not both",
        ),
        (["node", "stop", "--zone", "nowhere"], 1, "Error: no simulated node is in zone 'nowhere'"),
        (
            ["node", "condition", "node-1", "MemoryPressure"],
            2,
            "Error: Invalid value for TYPE=STATUS: expected TYPE=STATUS, e.g. MemoryPressure=True",
        ),
        (
            ["node", "condition", "node-1", "Hungry=True"],
            1,
            "Error: condition type must be one of Ready, MemoryPressure, DiskPressure, "
            "PIDPressure, NetworkUnavailable",
        ),
        (
            ["node", "condition", "node-1", "Ready=Maybe"],
            1,
            "Error: condition status must be one of True, False, Unknown",
        ),
        (
            ["node", "condition", "nope", "Ready=False"],
            1,
            "Error: node 'nope' is not a simulated node",
        ),
    ],
)
def test_errors_name_the_problem(virtual: Running, args, code, message) -> None:
    before = virtual.ok("clock", "now")
    fails(virtual.taintplane(*args), code, message)
    assert virtual.ok("clock", "now") == before


def test_without_a_kubeconfig_or_a_cluster(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "PATH": os.environ["PATH"]}
    fails(
        run_taintplane("clock", "now", env=env),
        1,
        "Error: no kubeconfig found: pass --kubeconfig, or export KUBECONFIG as "
        "`taintplane up` prints",
    )
    with socket.socket() as closed:  # bound, never listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(
            f"""
apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{port}"}}}}]
users: [{{name: u, user: {{}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
"""
        )
        done = run_taintplane("node", "stop", "node-1", "--kubeconfig", str(kubeconfig), env=env)
    assert done.returncode == 1
    message = done.stderr.strip()
    assert message.startswith(f"Error: cannot reach the cluster at http://127.0.0.1:{port}: ")
    assert message.endswith("; is `taintplane up` running?")


def test_a_real_clock_cannot_be_advanced(tmp_path: Path, home: Path) -> None:
    running = up(tmp_path, home, "--clock", "real", "--nodes", "0")
    try:
        state = httpx.get(f"{running.url}/taintplane/v1/clock", timeout=30).json()
        assert state["virtual"] is False
        now = datetime.strptime(running.ok("clock", "now").strip(), RFC3339)
        assert abs(now - datetime.now(UTC).replace(tzinfo=None)) < timedelta(minutes=1)
        fails(
            running.taintplane("clock", "advance", "1s"),
            1,
            "Error: this cluster runs on the real clock, which cannot be advanced; "
            "start it with `taintplane up --clock virtual`",
        )
        fails(
            running.taintplane("node", "stop", "node-1"),
            1,
            "Error: node 'node-1' is not a simulated node",
        )
        assert running.kubectl("get", "nodes", "-o", "name") == ""
    finally:
        stop(running)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--nodes", "2", "--cluster", "f.yaml"],
            "Error: --nodes and --cluster exclude each other: pick one",
        ),
        (
            ["--cluster", "missing.yaml"],
            "Error: --cluster: cannot read missing.yaml: No such file or directory",
        ),
        (
            ["--cluster", "bad.yaml"],
            "Error: --cluster: bad.yaml: pools[0].count must be a whole number, 0 or more",
        ),
        (
            ["--clock", "sundial"],
            "Error: Invalid value for '--clock': 'sundial' is not one of 'real', 'virtual'.",
        ),
        (
            ["--nodes", "-1"],
            "Error: Invalid value for '--nodes': -1 is not in the range 0<=x<=100000.",
        ),
    ],
)
def test_up_usage_errors(tmp_path: Path, args, message) -> None:
    (tmp_path / "f.yaml").write_text("pools: [{name: a}]\n")
    (tmp_path / "bad.yaml").write_text("pools:\n- name: a\n  count: many\n")
    process = start(tmp_path, "--port", "0", *args)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 2
    assert out == ""
    assert err.splitlines()[-1] == message
    assert not (tmp_path / "data").exists()


POOLS = """
pools:
- name: gpu
  count: 2
  zones: [zone-a, zone-b]
  labels: {accelerator: a100}
  taints: ["dedicated=ml:NoSchedule"]
  capacity: {nvidia.com/gpu: "8"}
- name: cpu
  count: 3
  zones: [zone-a, zone-b]
  region: eu-west
"""


def test_up_with_node_pools_and_zones(tmp_path: Path, home: Path) -> None:
    (tmp_path / "pools.yaml").write_text(POOLS)
    running = up(tmp_path, home, "--cluster", "pools.yaml", "--clock", "virtual")
    try:
        running.ok("clock", "advance", "0s")
        kubectl = running.kubectl
        assert kubectl("get", "nodes", "-L", "topology.kubernetes.io/zone") == (
            "NAME    STATUS   ROLES    AGE   VERSION   ZONE\n"
            "cpu-1   Ready    <none>   0s    v1.35.0   zone-a\n"
            "cpu-2   Ready    <none>   0s    v1.35.0   zone-b\n"
            "cpu-3   Ready    <none>   0s    v1.35.0   zone-a\n"
            "gpu-1   Ready    <none>   0s    v1.35.0   zone-a\n"
            "gpu-2   Ready    <none>   0s    v1.35.0   zone-b\n"
        )
        assert kubectl("get", "nodes", "-l", "accelerator=a100", "-o", "name") == (
            "node/gpu-1\nnode/gpu-2\n"
        )
        assert kubectl(
            "get", "nodes", "-l", "topology.kubernetes.io/region=eu-west", "-o", "name"
        ) == ("node/cpu-1\nnode/cpu-2\nnode/cpu-3\n")
        assert [t["key"] for t in taints(running, "gpu-2")] == ["dedicated"]
        assert taints(running, "cpu-1") == []
        gpus = kubectl("get", "node", "gpu-1", "-o", "jsonpath={.status.capacity.nvidia\\.com/gpu}")
        assert gpus == "8"

        # A zone partition: every node of zone-b stops, then comes back.
        assert running.ok("node", "stop", "--zone", "zone-b") == (
            "node/gpu-2 stopped\nnode/cpu-2 stopped\n"
        )
        running.ok("clock", "advance", "2m")
        statuses = kubectl(
            "get",
            "nodes",
            "-o",
            'jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status} {end}',
        )
        assert statuses == "cpu-1=True cpu-2=Unknown cpu-3=True gpu-1=True gpu-2=Unknown "
        assert running.ok("node", "start", "--zone", "zone-b") == (
            "node/gpu-2 started\nnode/cpu-2 started\n"
        )
        running.ok("clock", "advance", "10s")
        assert kubectl(
            "get",
            "nodes",
            "--no-headers",
            "-o",
            'custom-columns=N:.metadata.name,S:.status.conditions[?(@.type=="Ready")].status',
        ) == ("cpu-1   True\ncpu-2   True\ncpu-3   True\ngpu-1   True\ngpu-2   True\n")
    finally:
        stop(running)
