"""taintplane on etcd as users run it: `up --store etcd://…` answering kubectl, and two
`serve` processes on one etcd serving one cluster."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.store.etcd_server import EtcdServer

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web"},
    "spec": {"containers": [{"name": "web", "image": "nginx"}]},
}


def taintplane(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "taintplane", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )


def started(process: subprocess.Popen[str]) -> tuple[str, Path]:
    """The URL and kubeconfig a started `up`/`serve` prints."""
    assert process.stdout is not None
    first = process.stdout.readline()
    assert " is up in " in first, first + (process.stderr.read() if process.stderr else "")
    kubeconfig = process.stdout.readline().removeprefix("export KUBECONFIG=").strip()
    return first.rsplit(" ", 1)[1].strip(), Path(kubeconfig)


def stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    return err


def kubectl(kubeconfig: Path, home: Path, *args: str) -> str:
    env = {"HOME": str(home), "KUBECONFIG": str(kubeconfig), "PATH": os.environ["PATH"]}
    done = subprocess.run(
        ["kubectl", *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_up_on_etcd_answers_kubectl(tmp_path, etcd_server: EtcdServer):
    process = taintplane(
        tmp_path, "up", "--store", etcd_server.url(), "--nodes", "2", "--port", "0",
        "--data-dir", str(tmp_path / "data"),
    )  # fmt: skip
    try:
        _, kubeconfig = started(process)
        names = kubectl(kubeconfig, tmp_path, "get", "nodes", "-o", "name")
        assert names == "node/node-1\nnode/node-2\n"
    finally:
        stop(process)


@pytest.fixture
def two_servers(tmp_path, etcd_server: EtcdServer) -> Iterator[list[tuple[str, Path]]]:
    url = etcd_server.url()
    processes = [
        taintplane(tmp_path, "serve", "--store", url, "--port", "0", "--data-dir", f"d{i}")
        for i in (1, 2)
    ]
    try:
        yield [started(p) for p in processes]
    finally:
        for process in processes:
            stop(process)


def test_two_api_servers_on_one_etcd_serve_one_cluster(tmp_path, two_servers):
    (url_a, _), (url_b, kubeconfig_b) = two_servers
    pods = "/api/v1/namespaces/default/pods"
    with httpx.Client(timeout=30) as http:
        listed = http.get(url_b + pods).raise_for_status().json()
        # Watch through B from its list, then create through A.
        params = {"watch": "1", "resourceVersion": listed["metadata"]["resourceVersion"]}
        with http.stream("GET", url_b + pods, params=params) as watch:
            created = http.post(url_a + pods, json=POD).raise_for_status().json()
            event = json.loads(next(watch.iter_lines()))
    assert event["type"] == "ADDED"
    assert event["object"]["metadata"]["uid"] == created["metadata"]["uid"]
    assert event["object"]["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    names = kubectl(kubeconfig_b, tmp_path, "get", "pods", "-o", "name")
    assert names == "pod/web\n"


def test_an_unreachable_etcd_stops_start_up_with_a_clear_error(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = taintplane(tmp_path, "up", "--store", f"etcd://127.0.0.1:{port}", "--port", "0")
    _, err = process.communicate(timeout=60)
    assert process.returncode != 0
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"Error: --store: cannot reach etcd at 127.0.0.1:{port} ("), err
    assert last.endswith("start etcd there or pass the client URL of a running member")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("etcd://localhost", "'etcd://localhost': endpoint 'localhost' is not HOST:PORT"),
        ("etcd://h:1 --sync full", "--sync is for the SQLite store"),
    ],
)
def test_malformed_etcd_stores_are_usage_errors(tmp_path, spec, message):
    store, *more = spec.split(" ")
    process = taintplane(tmp_path, "up", "--port", "0", "--store", store, *more)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2
    assert message in err.strip().splitlines()[-1]
