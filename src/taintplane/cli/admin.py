"""Calling a running cluster (its Kubernetes API and ``taintplane.sim.admin``'s endpoints), and
the one wording of its failures every command uses: the cluster unreachable, the token
refused (401), the user not allowed (403), any other refusal with the server's message."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import click
import httpx

from taintplane.cli.kubeconfig import Target, load_target
from taintplane.client import ApiError

__all__ = ["admin_call", "kubeconfig_option", "refused", "talking_to", "unreachable"]

kubeconfig_option = click.option(
    "--kubeconfig", metavar="PATH", help="Kubeconfig of the cluster (default: $KUBECONFIG)."
)


def unreachable(target: Target, error: Exception) -> click.ClickException:
    return click.ClickException(
        f"cannot reach the cluster at {target.server}: {error}; is `taintplane up` running?"
    )


def refused(target: Target, status: Mapping[str, Any]) -> click.ClickException:
    """A refusal: a ``metav1.Status``, or an admin endpoint's ``{"error": …}``."""
    message = str(
        status.get("message")
        or status.get("error")
        or f"the server answered {status.get('code')} {status.get('reason') or ''}".rstrip()
    )
    if status.get("code") == 401:
        # kubectl's words ("error: You must be logged in to the server (Unauthorized)"), and
        # which token it was: the server knows no user it belongs to.
        return click.ClickException(
            f"You must be logged in to the server (Unauthorized): {target.server} refused the "
            f'token of user "{target.user}" in {target.path}; use the kubeconfig '
            "`taintplane up` printed, or a token from the cluster's --auth file"
        )
    if status.get("code") == 403:
        # The message names the user and the verb and resource or path it lacks.
        return click.ClickException(
            f"{message} (Forbidden, from {target.server}): grant it with a RoleBinding or "
            "ClusterRoleBinding, or use a kubeconfig whose user may (the one `taintplane up "
            "--auth` writes is cluster-admin)"
        )
    return click.ClickException(f"{message} (from {target.server})")


@contextmanager
def talking_to(target: Target) -> Iterator[None]:
    """Turns what calling the cluster at ``target`` raises into those messages."""
    try:
        yield
    except ApiError as error:
        raise refused(target, error.status) from error
    except (OSError, httpx.TransportError) as error:
        raise unreachable(target, error) from error


def admin_call(
    kubeconfig: str | None, method: str, path: str, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    target = load_target(kubeconfig)
    headers = {"Authorization": f"Bearer {target.token}"} if target.token else {}
    url = f"{target.server.rstrip('/')}/taintplane/v1/{path}"
    with talking_to(target):
        # Advancing a virtual clock by hours runs everything due meanwhile: allow time.
        response = httpx.request(
            method, url, json=body, headers=headers, verify=target.verify, timeout=3600
        )
    try:
        data: dict[str, Any] = response.json()
    except ValueError as error:
        raise click.ClickException(
            f"{target.server} answered {response.status_code} without JSON: "
            "is it a taintplane cluster?"
        ) from error
    if response.status_code >= 400:
        if "error" in data:  # the admin endpoint's own refusal: its message says it all
            raise click.ClickException(str(data["error"]))
        raise refused(target, {"code": response.status_code, **data})
    return data
