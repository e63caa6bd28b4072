"""Start-up: `taintplane up --nodes N` until `kubectl get nodes` answers with every node.

    .venv/bin/python benchmarks/startup.py --nodes 100 [--runs 5]

Wall time from launching the process until the real kubectl has listed N Ready nodes (the
process's own start-up figure, which `up` prints, is reported too). Python's interpreter
start and imports are included, as a user meets them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def one_run(nodes: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as data:
        started = time.perf_counter()
        process = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("taintplane")),
                "up",
                "--nodes",
                str(nodes),
                "--port",
                "0",
                "--data-dir",
                data,
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            reported = 0.0
            kubeconfig = ""
            for line in process.stdout:
                if " is up in " in line:
                    reported = float(line.split(" is up in ")[1].split()[0])
                if line.startswith("export KUBECONFIG="):
                    kubeconfig = line.strip().split("=", 1)[1]
                    break
            env = {**os.environ, "KUBECONFIG": kubeconfig, "HOME": data}
            listed = subprocess.run(
                ["kubectl", "get", "nodes", "--no-headers"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.splitlines()
            elapsed = time.perf_counter() - started
            ready = [line for line in listed if line.split()[1] == "Ready"]
            assert len(ready) == nodes, f"{len(ready)} of {nodes} nodes Ready"
            return elapsed, reported
        finally:
            process.terminate()
            process.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    runs = [one_run(args.nodes) for _ in range(args.runs)]
    walls = [wall for wall, _ in runs]
    print(
        json.dumps(
            {
                "nodes": args.nodes,
                "runs": args.runs,
                "until_kubectl_lists_all_ready_s": {
                    "median": round(statistics.median(walls), 2),
                    "max": round(max(walls), 2),
                },
                "up_reported_s_median": round(statistics.median(r for _, r in runs), 2),
            }
        )
    )


if __name__ == "__main__":
    main()
