"""The context ``taintplane-NAME`` in the user's kubeconfig, merged and removed as kind does.

Which file: ``--kubeconfig`` if given; else with ``$KUBECONFIG`` a list, the first file of it
that exists (the last if none does), as kubectl creates new stanzas; else ``~/.kube/config``.
Writers lock ``FILE.lock`` (created exclusively, as client-go's clientcmd and kind do), so a
concurrent ``kubectl config`` or a second ``taintplane up`` cannot lose an update. Every other
entry is kept: the file is read with ``yaml.safe_load`` and only our three entries (cluster,
user, context) and ``current-context`` change.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import yaml

__all__ = ["merge_context", "merge_path", "remove_context", "search_paths"]

_LOCK_ATTEMPTS = 50  # 5 s: kubectl holds the lock only while it writes


def search_paths(explicit: str | Path | None) -> list[Path]:
    if explicit:
        return [Path(explicit)]
    listed = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    unique = list(dict.fromkeys(listed))
    if unique:
        return [Path(p) for p in unique]
    return [Path.home() / ".kube" / "config"]


def merge_path(explicit: str | Path | None) -> Path:
    """The file kubectl would create a new context in."""
    paths = search_paths(explicit)
    if len(paths) == 1:
        return paths[0]
    return next((p for p in paths if p.is_file()), paths[-1])


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_name(path.name + ".lock")
    for _ in range(_LOCK_ATTEMPTS):
        try:
            os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            break
        except FileExistsError:
            time.sleep(0.1)
    else:
        raise click.ClickException(
            f"cannot lock {path}: {lock} exists (another program is writing the kubeconfig, or "
            "one stopped while writing it): remove it if no kubectl is running, then retry"
        )
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise click.ClickException(f"cannot read kubeconfig {path}: {error.strerror}") from error
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise click.ClickException(
            f"error loading config file {path}: {error}; fix it, or pass --kubeconfig another file"
        ) from error
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise click.ClickException(
            f"error loading config file {path}: a kubeconfig is a mapping; fix it, or pass "
            "--kubeconfig another file"
        )
    return config


def _write(path: Path, config: dict[str, Any]) -> None:
    """Whole or not at all, keeping the file's mode (0600 for a new one: it holds tokens)."""
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600
    temporary = path.with_name(path.name + ".taintplane.tmp")
    fd = os.open(temporary, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, mode)
    with os.fdopen(fd, "w") as file:
        yaml.safe_dump(config, file, sort_keys=False, default_flow_style=False)
    temporary.chmod(mode)
    temporary.replace(path)


def _entry(config: dict[str, Any], section: str) -> list[Any]:
    items = config.get(section)
    if not isinstance(items, list):
        items = []
        config[section] = items
    return items


def _put(items: list[Any], name: str, field: str, value: dict[str, Any]) -> None:
    """Replace the entry named ``name`` where it is, or append it."""
    entry = {"name": name, field: value}
    for index, item in enumerate(items):
        if isinstance(item, dict) and item.get("name") == name:
            items[index] = entry
            return
    items.append(entry)


def merge_context(target: Path, context: str, source: Path) -> None:
    """Copy the only cluster and user of ``source`` (the data dir's kubeconfig) into
    ``target`` as ``context``'s cluster, user and context, and make it the current one."""
    own = _read(source)
    cluster = (own.get("clusters") or [{}])[0].get("cluster") or {}
    user = (own.get("users") or [{}])[0].get("user") or {}
    with _locked(target):
        config = _read(target)
        config.setdefault("apiVersion", "v1")
        config.setdefault("kind", "Config")
        config.setdefault("preferences", {})
        _put(_entry(config, "clusters"), context, "cluster", cluster)
        _put(_entry(config, "users"), context, "user", user)
        _put(
            _entry(config, "contexts"),
            context,
            "context",
            {"cluster": context, "user": context},
        )
        config["current-context"] = context
        _write(target, config)


def remove_context(target: Path, context: str) -> bool:
    """Drop ``context``'s entries from ``target``; current-context is emptied if it was ours.
    Returns whether anything changed."""
    if not target.is_file():
        return False
    with _locked(target):
        config = _read(target)
        changed = False
        for section in ("clusters", "users", "contexts"):
            items = config.get(section)
            if not isinstance(items, list):
                continue
            kept = [i for i in items if not (isinstance(i, dict) and i.get("name") == context)]
            if len(kept) != len(items):
                config[section] = kept
                changed = True
        if config.get("current-context") == context:
            config["current-context"] = ""
            changed = True
        if changed:
            _write(target, config)
        return changed
