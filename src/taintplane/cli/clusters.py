"""Named clusters, as kind and kwokctl keep them: each name has a record in the clusters home
(``$TAINTPLANE_HOME/clusters/NAME/cluster.json``, ``~/.taintplane`` by default) saying where
its data dir is and which kubeconfig file holds its context, so ``get clusters``, ``stop`` and
``delete`` find it from any directory.

Whether a cluster runs is read from its data dir's lock (``DataDirLock``): the kernel drops it
when the process ends, however it ends, so the answer is never stale.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import click

from taintplane.cli.data_dir import LOCK_FILE

__all__ = [
    "DEFAULT_NAME",
    "ClusterRecord",
    "NameType",
    "clusters_home",
    "default_data_dir",
    "holder",
    "list_records",
    "load_record",
    "remove_record",
    "save_record",
    "simulated_nodes",
    "write_simulated_nodes",
]

#: The cluster ``up`` makes without ``--name`` (kind's is "kind"); its context is
#: ``taintplane-taintplane``, as kind's is ``kind-kind``.
DEFAULT_NAME = "taintplane"
#: The default cluster's data dir, relative to where ``up`` runs (as before names existed).
DEFAULT_DATA_DIR = Path(".taintplane")
RECORD_FILE = "cluster.json"
#: The simulated nodes the last start on a data dir registered (so the next start with fewer
#: can remove the others instead of leaving them to go NotReady).
NODES_FILE = "simulated-nodes.json"
# A DNS label, as kind requires of its cluster names: it becomes part of a context name.
_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


class NameType(click.ParamType):  # type: ignore[type-arg]
    name = "NAME"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> str:
        text = str(value)
        if len(text) > 50 or not _NAME.fullmatch(text):
            self.fail(
                f"{text!r} is not a valid cluster name: use at most 50 lowercase letters, digits "
                "and '-', starting and ending with a letter or digit (e.g. dev, team-a)",
                param,
                ctx,
            )
        return text


def clusters_home() -> Path:
    return Path(os.environ.get("TAINTPLANE_HOME") or Path.home() / ".taintplane") / "clusters"


@dataclass(frozen=True)
class ClusterRecord:
    name: str
    data_dir: Path
    #: The kubeconfig file the context ``taintplane-NAME`` was merged into.
    kubeconfig: Path | None = None

    @property
    def context(self) -> str:
        return f"taintplane-{self.name}"


def _record_path(name: str) -> Path:
    return clusters_home() / name / RECORD_FILE


def load_record(name: str) -> ClusterRecord | None:
    try:
        data = json.loads(_record_path(name).read_text())
        kubeconfig = data.get("kubeconfig")
        return ClusterRecord(name, Path(data["dataDir"]), Path(kubeconfig) if kubeconfig else None)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save_record(record: ClusterRecord) -> None:
    path = _record_path(record.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "name": record.name,
        "dataDir": str(record.data_dir.resolve()),
        "kubeconfig": str(record.kubeconfig) if record.kubeconfig else None,
    }
    temporary = path.with_name(RECORD_FILE + ".tmp")
    temporary.write_text(json.dumps(data, indent=2) + "\n")
    temporary.replace(path)


def remove_record(name: str) -> None:
    """Forget the name; its directory in the home goes too when nothing else is in it (a named
    cluster's data dir is that directory, and is removed by ``delete`` itself)."""
    path = _record_path(name)
    path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        path.parent.rmdir()


def list_records() -> list[ClusterRecord]:
    home = clusters_home()
    if not home.is_dir():
        return []
    records = (load_record(entry.name) for entry in sorted(home.iterdir()) if entry.is_dir())
    return [record for record in records if record is not None]


def default_data_dir(name: str) -> Path:
    """Where a cluster's state lives without ``--data-dir``: where it lived last time, else
    ``./.taintplane`` for the default cluster and the clusters home for a named one."""
    record = load_record(name)
    if record is not None and record.data_dir.is_dir():
        return record.data_dir
    if name == DEFAULT_NAME:
        return DEFAULT_DATA_DIR
    return clusters_home() / name


def holder(data_dir: Path) -> str | None:
    """What the lock of a running cluster on ``data_dir`` says ("pid N, serving URL"), or
    None if nothing runs there. Probes with a shared lock so a start is never refused for it."""
    path = data_dir / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return os.pread(fd, 4096, 0).decode(errors="replace").strip() or "starting"
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def holder_pid(text: str) -> int | None:
    match = re.match(r"pid (\d+)", text)
    return int(match.group(1)) if match else None


def holder_url(text: str) -> str | None:
    match = re.search(r"serving (\S+)", text)
    return match.group(1) if match else None


def simulated_nodes(data_dir: Path) -> list[str] | None:
    """The simulated nodes the last start registered, None if it did not say (an older
    data dir, or none yet)."""
    try:
        names = json.loads((data_dir / NODES_FILE).read_text())
    except (OSError, ValueError):
        return None
    return [str(name) for name in names] if isinstance(names, list) else None


def write_simulated_nodes(data_dir: Path, names: list[str]) -> None:
    path = data_dir / NODES_FILE
    temporary = path.with_name(NODES_FILE + ".tmp")
    temporary.write_text(json.dumps(names) + "\n")
    temporary.replace(path)


#: What taintplane writes in a data dir: ``delete`` removes only these, so a --data-dir that
#: also holds the user's files (``--data-dir .``) keeps them.
OWN_ENTRIES = (
    "state.db",
    "state.db-wal",
    "state.db-shm",
    "kubeconfig",
    LOCK_FILE,
    "clock",
    "clock.tmp",
    "pki",
    "taintplane.log",
    NODES_FILE,
    NODES_FILE + ".tmp",
    RECORD_FILE,
    RECORD_FILE + ".tmp",
)


def remove_data_dir(data_dir: Path) -> list[str]:
    """Remove what taintplane keeps in ``data_dir``, then the directory if it is empty.
    Returns the names of entries it left (not taintplane's)."""
    for entry in OWN_ENTRIES:
        path = data_dir / entry
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    try:
        left = sorted(p.name for p in data_dir.iterdir())
    except OSError:
        return []
    if not left:
        with contextlib.suppress(OSError):
            data_dir.rmdir()
    return left
