"""What ``taintplane up`` logs for an expected, retried failure: a ReplicaSet whose pods
admission refuses is one line per retry, in client-go's words, in the --log-file."""

from __future__ import annotations

import os
import re
import subprocess
import sys

RS = """
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      runtimeClassName: nope
      containers: [{name: c, image: nginx}]
"""
LINE = re.compile(
    r'E\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ workqueue\.py:\d+\] replicaset: error syncing "default/web": '
    r'pods "web-" is forbidden: pod rejected: RuntimeClass "nope" not found, requeuing'
)


def run(*args: str, env: dict[str, str], stdin: str | None = None) -> str:
    done = subprocess.run(
        list(args), input=stdin, capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def test_a_refused_replicaset_logs_one_line_per_retry_without_traceback(tmp_path):
    log = tmp_path / "up.log"
    data = tmp_path / "data"
    env = {**os.environ, "KUBECONFIG": str(data / "kubeconfig")}
    taintplane = (sys.executable, "-m", "taintplane")
    out = run(
        *taintplane,
        *("up", "-d", "--name", "logs", "--data-dir", str(data), "--clock", "virtual"),
        *("--log-file", str(log), "--nodes", "1"),
        env=env,
    )
    assert f"logs in {log}\n" in out
    try:
        run("kubectl", "apply", "-f", "-", stdin=RS, env=env)
        # Retries back off from 5 ms, doubling: a few of them within 2 s of the cluster's time.
        run(*taintplane, "clock", "advance", "2s", env=env)
    finally:
        run(*taintplane, "stop", "logs", env=env)
    text = log.read_text()
    assert "Traceback" not in text
    errors = [line for line in text.splitlines() if line.startswith("E")]
    assert len(errors) >= 3
    assert all(LINE.fullmatch(line) for line in errors), errors
