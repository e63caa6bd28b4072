"""What ``taintplane up`` and ``serve`` keep in ``--data-dir`` besides the store: who runs on
it (a lock, so a second cluster cannot share the store, the kubeconfig and the node names of a
running one) and the instant a virtual clock had reached (so a restart continues from there)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from datetime import UTC, datetime
from pathlib import Path

from taintplane.clock import VirtualClock

__all__ = ["DataDirInUseError", "DataDirLock", "PersistentVirtualClock", "virtual_clock"]

LOCK_FILE = "taintplane.lock"
CLOCK_FILE = "clock"


class DataDirInUseError(Exception):
    pass


class DataDirLock:
    """An exclusive ``flock`` on ``DIR/taintplane.lock``, held while the process runs: the
    kernel releases it when the process ends, however it ends, so a crash leaves no stale lock.
    The file says who holds it (pid, then the URL once the port is bound)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as error:
            holder = os.pread(fd, 4096, 0).decode(errors="replace").strip()
            os.close(fd)
            raise DataDirInUseError(
                f"--data-dir {self.path.parent} is in use by another taintplane "
                f"({holder or 'starting'}): "
                "stop it first, or pass another --data-dir"
            ) from error
        self._fd = fd
        self.describe(f"pid {os.getpid()}")

    def describe(self, holder: str) -> None:
        """Record who holds the lock, for the message a second start prints."""
        assert self._fd is not None
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, holder.encode() + b"\n", 0)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def saved_instant(data_dir: Path) -> datetime | None:
    """The instant a cluster on this data dir last reached, if one was recorded."""
    with contextlib.suppress(OSError, ValueError):
        text = (data_dir / CLOCK_FILE).read_text().strip()
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    return None


def save_instant(data_dir: Path, instant: datetime) -> None:
    """Record ``instant`` (never moving the record back), written whole or not at all."""
    previous = saved_instant(data_dir)
    if previous is not None and previous > instant:
        return
    path = data_dir / CLOCK_FILE
    temporary = path.with_name(CLOCK_FILE + ".tmp")
    temporary.write_text(instant.astimezone(UTC).isoformat().replace("+00:00", "Z") + "\n")
    temporary.replace(path)


class PersistentVirtualClock(VirtualClock):
    """A virtual clock that records each instant it is advanced to in the data dir, so that
    objects stamped at virtual times are not in the future of the next start (AGE <invalid>)."""

    def __init__(self, start: datetime, data_dir: Path) -> None:
        super().__init__(start)
        self.data_dir = data_dir

    async def advance(self, seconds: float) -> None:
        try:
            await super().advance(seconds)
        finally:
            save_instant(self.data_dir, self.now())


def virtual_clock(data_dir: Path, wall: datetime) -> PersistentVirtualClock:
    """Where a virtual clock starts: where the last run on this data dir advanced it to, or
    the wall-clock second if that is later (or nothing was recorded). Either way no stored
    object's timestamps lie in its future."""
    start = wall.replace(microsecond=0)
    saved = saved_instant(data_dir)
    return PersistentVirtualClock(max(start, saved) if saved else start, data_dir)
