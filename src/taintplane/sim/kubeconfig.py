"""The kubeconfig ``taintplane up`` writes, usable as is by kubectl and the Python clients."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

__all__ = ["write_kubeconfig"]


def write_kubeconfig(
    path: Path,
    server: str,
    *,
    name: str = "taintplane",
    ca_pem: bytes | None = None,
    token: str | None = None,
) -> Path:
    """``ca_pem`` and ``token`` (with ``--auth``) become certificate-authority-data and the
    user's token; the file is then readable by its owner only."""
    cluster: dict[str, str] = {"server": server}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": {"token": token} if token else {}}],
        "contexts": [
            {"name": name, "context": {"cluster": name, "user": name, "namespace": "default"}}
        ],
        "current-context": name,
        "preferences": {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    if token:
        path.chmod(0o600)
    return path
