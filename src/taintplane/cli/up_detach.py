"""``taintplane up --detach``: start the cluster as a background process and return once it
answers ``/readyz``, as ``kind create cluster`` returns once its control plane is ready.

The background process is the same ``taintplane up`` without ``--detach``, in a session of
its own (Ctrl-C in the terminal does not reach it), its output appended to the log file. It
hands the lines ``up`` prints (the start-up time, the KUBECONFIG line, the context) back
through a pipe given as ``--ready-fd``, and closes it once it serves; a process that fails to
start closes it unsaid, and its error is in the log, which is shown.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import click

__all__ = ["READY_FD_KEY", "announce_ready", "detach"]

#: Where ``up`` keeps the pipe's descriptor (click context meta) until it serves.
READY_FD_KEY = "taintplane.ready_fd"
#: Raw arguments of ``up``, kept to start the background process with the same ones.
RAW_ARGS_KEY = "taintplane.raw_args"
START_TIMEOUT = 600.0  # seconds: 100 000 simulated nodes take minutes


def announce_ready(lines: list[str]) -> None:
    """In the background process: hand ``up``'s lines to the waiting ``up --detach``."""
    ctx = click.get_current_context(silent=True)
    fd = ctx.meta.pop(READY_FD_KEY, None) if ctx is not None else None
    if fd is None:
        return
    try:
        os.write(fd, ("\n".join(lines) + "\n").encode())
    except OSError:  # the waiting command was interrupted: nothing to tell
        pass
    finally:
        os.close(fd)


def detach(ctx: click.Context, name: str, data_dir: Path, log_file: Path | None) -> None:
    """Start ``up`` in the background with this invocation's arguments; print what it prints
    once it answers /readyz, and how to reach its log and stop it."""
    data_dir.mkdir(parents=True, exist_ok=True)
    log_path = (log_file or data_dir / "taintplane.log").resolve()
    args = [a for a in ctx.meta.get(RAW_ARGS_KEY, []) if a not in ("-d", "--detach")]
    read_end, write_end = os.pipe()
    with log_path.open("ab") as log:
        offset = log.tell()
        command = [sys.executable, "-m", "taintplane", "up", *args]
        command += ["--name", name, "--data-dir", str(data_dir.resolve())]
        command += ["--ready-fd", str(write_end)]
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            pass_fds=(write_end,),
            start_new_session=True,
        )
    os.close(write_end)
    started = time.monotonic()
    told = _read_all(read_end, started + START_TIMEOUT)
    if told is None:
        raise click.ClickException(
            f"cluster {name!r} did not start within {START_TIMEOUT:.0f} s; it is still "
            f"starting (pid {process.pid}): see {log_path}, or `taintplane stop {name}`"
        )
    lines = told.splitlines()
    url = lines[0].rsplit(" ", 1)[-1] if lines else ""
    if not lines or not _ready(url, process, started + START_TIMEOUT):
        code = process.wait()
        _show_failure(log_path, offset)
        ctx.exit(code or 1)
    for line in lines:
        click.echo(line)
    hint = "" if name == "taintplane" else f" {name}"
    click.echo(f"Running in the background (pid {process.pid}); logs in {log_path}")
    click.echo(f"Stop it with `taintplane stop{hint}`, remove it with `taintplane delete{hint}`")


def _read_all(fd: int, deadline: float) -> str | None:
    """Everything written to the pipe until it is closed, or None at the deadline."""
    chunks: list[bytes] = []
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            readable, _, _ = select.select([fd], [], [], remaining)
            if not readable:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return b"".join(chunks).decode(errors="replace")
            chunks.append(chunk)
    finally:
        os.close(fd)


def _ready(url: str, process: subprocess.Popen[bytes], deadline: float) -> bool:
    """Poll /readyz (public, as kube-apiserver's; the CA is the cluster's own, so it is not
    verified on this loopback probe) until it answers 200 or the process ends."""
    import httpx  # here: the foreground `up` never needs it

    if not url.startswith("http"):
        return False
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            if httpx.get(f"{url}/readyz", verify=False, timeout=5).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.02)
    return False


def _show_failure(log_path: Path, offset: int) -> None:
    try:
        with log_path.open("rb") as log:
            log.seek(offset)
            text = log.read().decode(errors="replace")
    except OSError:
        text = ""
    click.echo(text.rstrip("\n") or f"taintplane up failed: see {log_path}", err=True)
