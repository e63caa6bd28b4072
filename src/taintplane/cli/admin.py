"""Calling a running cluster's admin endpoints (see ``taintplane.sim.admin``)."""

from __future__ import annotations

from typing import Any

import click
import httpx

from taintplane.cli.kubeconfig import load_target

__all__ = ["admin_call", "kubeconfig_option"]

kubeconfig_option = click.option(
    "--kubeconfig", metavar="PATH", help="Kubeconfig of the cluster (default: $KUBECONFIG)."
)


def admin_call(
    kubeconfig: str | None, method: str, path: str, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    target = load_target(kubeconfig)
    headers = {"Authorization": f"Bearer {target.token}"} if target.token else {}
    url = f"{target.server.rstrip('/')}/taintplane/v1/{path}"
    try:
        # Advancing a virtual clock by hours runs everything due meanwhile: allow time.
        response = httpx.request(
            method, url, json=body, headers=headers, verify=target.verify, timeout=3600
        )
    except httpx.HTTPError as error:
        raise click.ClickException(
            f"cannot reach the cluster at {target.server}: {error}; is `taintplane up` running?"
        ) from error
    try:
        data: dict[str, Any] = response.json()
    except ValueError as error:
        raise click.ClickException(
            f"{target.server} answered {response.status_code} without JSON: "
            "is it a taintplane cluster?"
        ) from error
    if response.status_code >= 400:
        raise click.ClickException(str(data.get("error") or data))
    return data
