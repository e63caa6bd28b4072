"""``taintplane up`` as a user runs it: a real process, real kubectl, Ctrl-C to stop."""

import os
import signal
import socket
import subprocess
import sys

import pytest


def start(tmp_path, *args):
    process = subprocess.Popen(
        [sys.executable, "-m", "taintplane", "up", "--data-dir", str(tmp_path / "data"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    assert process.stdout is not None
    return process


def test_up_prints_start_up_time_and_kubeconfig_then_stops_on_ctrl_c(tmp_path):
    process = start(tmp_path, "--port", "0")
    try:
        first = process.stdout.readline()
        second = process.stdout.readline()
        assert first.startswith("taintplane cluster is up in ")
        assert " s, serving http://127.0.0.1:" in first
        kubeconfig = tmp_path / "data" / "kubeconfig"
        assert second == f"export KUBECONFIG={kubeconfig}\n"
        url = first.split()[-1]
        assert process.stdout.readline() == f"Dashboard: {url}/dashboard/\n"
        env = {"HOME": str(tmp_path), "KUBECONFIG": str(kubeconfig), "PATH": os.environ["PATH"]}
        done = subprocess.run(
            ["kubectl", "get", "namespaces", "-o", "name"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        assert done.stdout == (
            "namespace/default\nnamespace/kube-node-lease\n"
            "namespace/kube-public\nnamespace/kube-system\n"
        )
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert out.endswith("taintplane stopped\n")


def test_state_survives_a_restart_on_the_same_data_dir(tmp_path):
    for round_ in range(2):
        process = start(tmp_path, "--port", "0")
        try:
            url = process.stdout.readline().rsplit(" ", 1)[1].strip()
            process.stdout.readline()
            import httpx

            if round_ == 0:
                httpx.post(
                    f"{url}/api/v1/nodes", json={"metadata": {"name": "kept"}}
                ).raise_for_status()
            else:
                assert httpx.get(f"{url}/api/v1/nodes/kept").status_code == 200
        finally:
            process.send_signal(signal.SIGINT)
            process.communicate(timeout=30)


def test_a_busy_port_is_a_clear_error(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        process = start(tmp_path, "--port", str(port))
        _, err = process.communicate(timeout=30)
    assert process.returncode == 1
    assert err == (
        f"Error: port {port} on 127.0.0.1 is in use (another taintplane?): stop it or pass "
        "--port with a free port (or 0 for any)\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--store", "mysql://x"],
            "Error: --store: store 'mysql://x' is not understood: use sqlite:PATH (e.g. sqlite:./state.db) or etcd://HOST:PORT[,HOST:PORT…]",
        ),
        (
            ["--feature-gates", "Nope=true"],
            "Error: --feature-gates: unrecognized feature gate: Nope",
        ),
    ],
)
def test_bad_options_are_usage_errors(tmp_path, args, message):
    process = start(tmp_path, "--port", "0", *args)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 2
    assert err.strip().splitlines()[-1] == message
