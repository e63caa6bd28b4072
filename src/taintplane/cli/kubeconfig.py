"""Reading a kubeconfig (the parts taintplane's own commands need) to reach a server.

A kubeconfig that cannot be used is refused as client-go's ``clientcmd`` words it (``error
loading config file``, ``invalid configuration: …``), naming the file and what to do.
"""

from __future__ import annotations

import base64
import os
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import yaml

__all__ = ["Target", "load_target"]

_WHAT_TO_DO = "fix it, or pass --kubeconfig the file `taintplane up` printed"


@dataclass(frozen=True)
class Target:
    server: str
    namespace: str
    token: str | None
    #: False with insecure-skip-tls-verify; a context trusting the kubeconfig's CA if it has one.
    verify: bool | ssl.SSLContext
    #: The kubeconfig file and the context's user, to name them when the server refuses us.
    path: str = ""
    user: str = ""


def load_target(path: str | None, context: str | None = None) -> Target:
    """The server, default namespace and credentials of the kubeconfig's (current) context."""
    candidates = [path] if path else os.environ.get("KUBECONFIG", "").split(os.pathsep)
    candidates = [c for c in candidates if c] or [str(Path.home() / ".kube" / "config")]
    found = next((c for c in candidates if Path(c).is_file()), None)
    if found is None:
        raise click.ClickException(
            "no kubeconfig found: pass --kubeconfig, or export KUBECONFIG as `taintplane up` prints"
        )
    config = _read(found)
    if not any(config.get(k) for k in ("clusters", "contexts", "users", "current-context")):
        raise _invalid(found, ["no configuration has been provided"])
    name = context or config.get("current-context")
    if not name:
        raise _invalid(found, ["no context chosen (current-context is not set)"])
    contexts = _named(config, "contexts", "context")
    clusters = _named(config, "clusters", "cluster")
    users = _named(config, "users", "user")
    if name not in contexts:
        raise _invalid(found, [f"context was not found for specified context: {name}"])
    chosen = contexts[name]
    problems = []
    for kind, known in (("user", users), ("cluster", clusters)):
        wanted = chosen.get(kind)
        if not wanted:
            problems.append(f"{kind} was not specified for context {_quote(name)}")
        elif wanted not in known:
            problems.append(f"{kind} {_quote(wanted)} was not found for context {_quote(name)}")
    cluster = clusters.get(str(chosen.get("cluster")), {})
    if chosen.get("cluster") in clusters and not cluster.get("server"):
        problems.append(f"no server found for cluster {_quote(chosen['cluster'])}")
    if problems:
        raise _invalid(found, problems)
    user = users[chosen["user"]]
    try:
        verify = _verify(cluster)
    except (ValueError, OSError) as error:  # bad base64 or PEM, an unreadable CA file
        raise _invalid(
            found,
            [f"unreadable certificate authority for cluster {_quote(chosen['cluster'])}: {error}"],
        ) from error
    return Target(
        server=str(cluster["server"]),
        namespace=str(chosen.get("namespace") or "default"),
        token=user.get("token"),
        verify=verify,
        path=found,
        user=str(chosen["user"]),
    )


def _read(path: str) -> dict[str, Any]:
    try:
        config = yaml.safe_load(Path(path).read_text())
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise _unloadable(path, f"yaml: {where}{error.problem or error}") from error
    except (yaml.YAMLError, OSError, UnicodeDecodeError) as error:
        raise _unloadable(path, str(error)) from error
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise _unloadable(path, f"a kubeconfig is a mapping, not a {type(config).__name__}")
    return config


def _named(config: dict[str, Any], section: str, field: str) -> dict[str, dict[str, Any]]:
    """``clusters``, ``contexts`` or ``users``: name -> entry, skipping malformed items."""
    items = config.get(section)
    entries = items if isinstance(items, list) else []
    named: dict[str, dict[str, Any]] = {}
    for item in entries:
        if isinstance(item, dict) and item.get("name"):
            entry = item.get(field)
            named[str(item["name"])] = entry if isinstance(entry, dict) else {}
    return named


def _quote(value: Any) -> str:
    """Go's %q for the names in clientcmd's messages."""
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _unloadable(path: str, problem: str) -> click.ClickException:
    return click.ClickException(
        f"error loading config file {_quote(path)}: {problem}; {_WHAT_TO_DO}"
    )


def _invalid(path: str, problems: list[str]) -> click.ClickException:
    # clientcmd's aggregate: one problem as is, several in brackets.
    listed = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
    return click.ClickException(
        f"invalid configuration: {listed} in kubeconfig {_quote(path)}; {_WHAT_TO_DO}"
    )


def _verify(cluster: dict[str, Any]) -> bool | ssl.SSLContext:
    if cluster.get("insecure-skip-tls-verify", False):
        return False
    if cluster.get("certificate-authority-data"):
        ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
        return ssl.create_default_context(cadata=ca)
    if cluster.get("certificate-authority"):
        return ssl.create_default_context(cafile=str(cluster["certificate-authority"]))
    return True
