"""``clock advance`` with its progress: the server streams lines of JSON while the clock
moves (``taintplane.sim.admin``), this shows them as a bar and ends with the totals line.

A server that does not stream (an older taintplane) answers with one JSON object, as
without progress: then only the new time is known, and no totals are printed.
"""

from __future__ import annotations

from typing import Any

import click
import httpx
import orjson

from taintplane.cli.admin import refused, talking_to
from taintplane.cli.kubeconfig import Target, load_target
from taintplane.cli.progress import ProgressDisplay, progress_console
from taintplane.sim.progress import WorkCount

__all__ = ["advance_showing_progress"]


def advance_showing_progress(
    kubeconfig: str | None, seconds: float, flag: bool | None
) -> dict[str, Any]:
    """POST ``clock/advance`` asking for progress; the clock's state at the end."""
    target = load_target(kubeconfig)
    headers = {"Authorization": f"Bearer {target.token}"} if target.token else {}
    url = f"{target.server.rstrip('/')}/taintplane/v1/clock/advance"
    display = ProgressDisplay("advanced", "advancing", seconds, console=progress_console(flag))
    final: dict[str, Any] | None = None
    try:
        with (
            talking_to(target),
            httpx.stream(
                "POST",
                url,
                json={"seconds": seconds, "progress": True},
                headers=headers,
                verify=target.verify,
                timeout=3600,
            ) as response,
        ):
            if response.status_code >= 400 or "ndjson" not in response.headers.get(
                "content-type", ""
            ):
                response.read()
                final = _whole(target, response)
            else:
                for line in response.iter_lines():
                    if not line.strip():
                        continue
                    data = orjson.loads(line)
                    if "progress" in data:
                        display.update(WorkCount.from_json(data["progress"]))
                    else:
                        final = data
    except BaseException:
        display.abandon()
        raise
    if final is None:
        display.abandon()
        raise click.ClickException(
            f"{target.server} ended the advance without saying where the clock is"
        )
    if "totals" in final:
        display.update(WorkCount.from_json(final["totals"]))
        display.finish()
    else:
        display.abandon()
    return final


def _whole(target: Target, response: httpx.Response) -> dict[str, Any]:
    """A one-object answer: a refusal, or an older server's state of the clock."""
    try:
        data: dict[str, Any] = response.json()
    except ValueError as error:
        raise click.ClickException(
            f"{target.server} answered {response.status_code} without JSON: "
            "is it a taintplane cluster?"
        ) from error
    if response.status_code >= 400:
        if "error" in data:
            raise click.ClickException(str(data["error"]))
        raise refused(target, {"code": response.status_code, **data})
    return data
