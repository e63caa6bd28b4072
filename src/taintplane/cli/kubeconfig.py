"""Reading a kubeconfig (the parts taintplane's own commands need) to reach a server."""

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


@dataclass(frozen=True)
class Target:
    server: str
    namespace: str
    token: str | None
    #: False with insecure-skip-tls-verify; a context trusting the kubeconfig's CA if it has one.
    verify: bool | ssl.SSLContext


def load_target(path: str | None, context: str | None = None) -> Target:
    """The server, default namespace and credentials of the kubeconfig's (current) context."""
    candidates = [path] if path else os.environ.get("KUBECONFIG", "").split(os.pathsep)
    candidates = [c for c in candidates if c] or [str(Path.home() / ".kube" / "config")]
    for candidate in candidates:
        if Path(candidate).is_file():
            config: dict[str, Any] = yaml.safe_load(Path(candidate).read_text()) or {}
            break
    else:
        raise click.ClickException(
            "no kubeconfig found: pass --kubeconfig, or export KUBECONFIG as `taintplane up` prints"
        )
    name = context or config.get("current-context")
    contexts = {c["name"]: c.get("context", {}) for c in config.get("contexts") or []}
    if name not in contexts:
        raise click.ClickException(f"context {name!r} is not in the kubeconfig")
    chosen = contexts[name]
    clusters = {c["name"]: c.get("cluster", {}) for c in config.get("clusters") or []}
    users = {u["name"]: u.get("user", {}) for u in config.get("users") or []}
    cluster = clusters.get(chosen.get("cluster"), {})
    user = users.get(chosen.get("user"), {}) or {}
    if "server" not in cluster:
        raise click.ClickException(f"the kubeconfig's cluster for context {name!r} has no server")
    return Target(
        server=str(cluster["server"]),
        namespace=str(chosen.get("namespace") or "default"),
        token=user.get("token"),
        verify=_verify(cluster),
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
