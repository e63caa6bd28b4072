"""``taintplane device health DRIVER/POOL/DEVICE STATE``: the health of a simulated DRA device.

The simulated driver publishes the state as a taint in its ResourceSlice (see
``taintplane.agents.dra_driver``): ``degraded`` as ``<driver>/degraded=overheating:None``,
``failed`` as ``<driver>/failed=unresponsive:NoExecute``; ``healthy`` removes the taint.
"""

from __future__ import annotations

import click

from taintplane.cli.admin import admin_call, kubeconfig_option

__all__ = ["device_group"]

STATES = ("healthy", "degraded", "failed")
EFFECTS = ("None", "NoSchedule", "NoExecute")


@click.group("device")
def device_group() -> None:
    """Change simulated DRA devices.

    \b
    Example:
      taintplane device health gpu.example.com/node-1/gpu-0 degraded
    """


@device_group.command("health")
@click.argument("device", metavar="DRIVER/POOL/DEVICE")
@click.argument("state", type=click.Choice(STATES))
@click.option(
    "--effect",
    type=click.Choice(EFFECTS),
    help="Effect of the published taint (default: None for degraded, NoExecute for failed).",
)
@kubeconfig_option
def health_command(device: str, state: str, effect: str | None, kubeconfig: str | None) -> None:
    """Set a device's health; its driver publishes it as a taint in the ResourceSlice.

    \b
    Examples:
      taintplane device health gpu.example.com/node-1/gpu-0 degraded
      taintplane device health gpu.example.com/node-1/gpu-0 healthy
    """
    parts = device.split("/")
    if len(parts) != 3 or not all(parts):
        raise click.BadParameter(
            "expected DRIVER/POOL/DEVICE, e.g. gpu.example.com/node-1/gpu-3",
            param_hint="DRIVER/POOL/DEVICE",
        )
    body: dict[str, str] = {"health": state}
    if effect is not None:
        body["effect"] = effect
    done = admin_call(kubeconfig, "POST", f"devices/{device}/health", body)
    taints = ", ".join(_taint(t) for t in done.get("taints") or []) or "no taints"
    click.echo(f"device/{done['device']} {state} (resourceslice/{done['slice']}: {taints})")


def _taint(taint: dict[str, str]) -> str:
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint['key']}{value}:{taint['effect']}"
