"""``taintplane taint devices``: ``kubectl taint`` for DRA devices, through DeviceTaintRules.

KEP-5055 leaves this command out ("admins … need to decide how to identify the device,
manually create a DeviceTaintRule with a unique name, then remember to remove that
DeviceTaintRule again"); this does those steps::

    taintplane taint devices gpu.example.com/node-1/gpu-3 overheating=true:NoExecute
    taintplane taint devices gpu.example.com/node-1 overheating-          # remove
    taintplane taint devices --rule my-rule overheating=true:NoSchedule  # edit a rule
    taintplane taint devices gpu.example.com overheating:NoExecute --dry-run

A selection is ``DRIVER``, ``DRIVER/POOL`` or ``DRIVER/POOL/DEVICE``; each taint is one
DeviceTaintRule named ``taintplane-<driver>-<pool>-<device>-<key>`` (sanitised), so running
the command again finds it. ``KEY-`` (or ``KEY:EFFECT-``) deletes the rules for that
selection and key. ``--dry-run`` creates the rule with effect ``None``, waits for the device
taint eviction controller's report of what NoExecute would do, prints it and asks whether to
apply the requested effect (``--yes`` applies without asking; without a terminal to ask on,
it deletes the rule again and fails).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import sys
from dataclasses import dataclass
from typing import Any

import click

from taintplane.api import names
from taintplane.api.device_taints import DeviceTaint, DeviceTaintSelector
from taintplane.cli.admin import kubeconfig_option, talking_to
from taintplane.cli.kubeconfig import load_target
from taintplane.client import ApiError, Client, HTTPTransport, resource

__all__ = ["Selection", "parse_device_taint", "rule_name", "taint_group"]

RULES = resource("resource.k8s.io", "v1alpha3", "devicetaintrules")
SLICES = resource("resource.k8s.io", "v1", "resourceslices")
KIND = "devicetaintrule.resource.k8s.io"
EFFECTS = ("None", "NoSchedule", "NoExecute")
_WORDING = names.Wording.KUBECTL_1_32
#: How long ``--dry-run`` waits for the controller's report (wall clock, seconds).
REPORT_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class Selection:
    driver: str
    pool: str | None = None
    device: str | None = None

    @classmethod
    def parse(cls, text: str) -> Selection:
        parts = text.split("/")
        if len(parts) > 3 or not all(parts):
            raise click.UsageError(
                f'invalid device selection "{text}": expected DRIVER, DRIVER/POOL or '
                "DRIVER/POOL/DEVICE"
            )
        return cls(parts[0], *parts[1:])

    @property
    def kind(self) -> str:
        return "device" if self.device else "pool" if self.pool else "driver"

    def __str__(self) -> str:
        return "/".join(p for p in (self.driver, self.pool, self.device) if p)

    def selector(self) -> dict[str, str]:
        fields = (("driver", self.driver), ("pool", self.pool), ("device", self.device))
        return {k: v for k, v in fields if v}


def rule_name(selection: Selection, key: str) -> str:
    """``taintplane-<driver>-<pool>-<device>-<key>`` as a valid object name."""
    raw = "-".join(["taintplane", *str(selection).split("/"), key])
    name = re.sub(r"[^a-z0-9.]+", "-", raw.lower())
    name = re.sub(r"-*\.[-.]*", ".", name).strip("-.")
    if len(name) > 253:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:10]
        name = name[:242].rstrip("-.") + "-" + digest
    return name


def parse_device_taint(spec: str) -> tuple[DeviceTaint, bool]:
    """``KEY[=VALUE]:EFFECT`` to add, ``KEY-`` or ``KEY[=VALUE]:EFFECT-`` to remove."""
    remove = spec.endswith("-")
    body = spec[:-1] if remove else spec
    head, _, effect = body.partition(":")
    if not remove and not effect:
        raise click.UsageError(f"invalid taint spec: {spec}, an effect is required")
    if effect and effect not in EFFECTS:
        raise click.UsageError(
            f"invalid taint effect: {effect}, unsupported taint effect "
            f"(device taints: {', '.join(EFFECTS)})"
        )
    key, _, value = head.partition("=")
    problems = names.is_qualified_name(key, _WORDING)
    if value:
        problems += names.is_valid_label_value(value, _WORDING)
    if problems or head.count("=") > 1 or body.count(":") > 1:
        detail = f", {'; '.join(problems)}" if problems else ""
        raise click.UsageError(f"invalid taint spec: {spec}{detail}")
    return DeviceTaint(key=key, effect=effect, value=value), remove


def _interactive() -> bool:
    return sys.stdin.isatty()


class _Tainter:
    def __init__(self, client: Client, *, overwrite: bool, dry_run: bool, yes: bool) -> None:
        self.client = client
        self.overwrite = overwrite
        self.dry_run = dry_run
        self.yes = yes
        self.checked: set[Selection] = set()

    async def warn_if_unpublished(self, selection: Selection) -> None:
        """A rule selecting no device is valid — it taints matching devices once a driver
        publishes them — but is more often a misspelt name: say so, once per selection."""
        if selection in self.checked:
            return
        self.checked.add(selection)
        selector = DeviceTaintSelector(selection.driver, selection.pool, selection.device)
        try:
            slices, _ = await self.client.list(SLICES)
        except ApiError:
            return  # a user who may not list ResourceSlices: the rule stands, unchecked
        for published in slices:
            spec = published.get("spec") or {}
            driver, pool = (
                str(spec.get("driver", "")),
                str((spec.get("pool") or {}).get("name", "")),
            )
            for device in spec.get("devices") or []:
                if selector.matches(driver, pool, str(device.get("name", ""))):
                    return
        searched = ", ".join(f'{k} "{v}"' for k, v in selection.selector().items())
        click.echo(
            f"warning: no device published in a ResourceSlice matches {searched} now; the "
            "rule applies to matching devices published later (`kubectl get resourceslices` "
            "lists the published ones)",
            err=True,
        )

    async def _get(self, name: str) -> dict[str, Any] | None:
        try:
            return await self.client.get(RULES, name)
        except ApiError as error:
            if error.code == 404:
                return None
            raise

    async def add(self, selection: Selection | None, rule: str | None, taint: DeviceTaint) -> None:
        if rule is not None:
            name = rule
        else:
            assert selection is not None
            name = rule_name(selection, taint.key)
        existing = await self._get(name)
        target = f"{selection.kind} {selection}" if selection else f"{KIND}/{name}"
        if existing is None and selection is None:
            raise click.ClickException(f'{KIND} "{name}" not found')
        if existing is not None:
            old = DeviceTaint.from_dict((existing.get("spec") or {}).get("taint") or {})
            if (old.key, old.value, old.effect) == (taint.key, taint.value, taint.effect):
                raise click.ClickException(f"{target} already has taint {taint} in {KIND}/{name}")
            if selection is not None and not self.overwrite:
                raise click.ClickException(
                    f"{target} already has {old.key} taint(s) with same effect(s) and "
                    "--overwrite is false"
                    if old.effect == taint.effect
                    else f"{target} already has taint {old} in {KIND}/{name}: "
                    "use --overwrite to replace it"
                )
            if self.dry_run:
                raise click.ClickException(f"--dry-run creates a new rule; {KIND}/{name} exists")
            await self._set_taint(name, taint)
            if selection is not None:
                click.echo(f"{KIND}/{name} configured")
            click.echo(f"{target} modified")
            if selection is not None:
                await self.warn_if_unpublished(selection)
            return
        assert selection is not None
        effect = "None" if self.dry_run else taint.effect
        body = {
            "apiVersion": "resource.k8s.io/v1alpha3",
            "kind": "DeviceTaintRule",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "taintplane"}},
            "spec": {
                "deviceSelector": selection.selector(),
                "taint": DeviceTaint(taint.key, effect, taint.value).to_dict(),
            },
        }
        created = await self.client.create(RULES, body)
        if not self.dry_run:
            click.echo(f"{KIND}/{name} created")
            click.echo(f"{target} tainted")
            await self.warn_if_unpublished(selection)
            return
        await self.warn_if_unpublished(selection)
        click.echo(f"{KIND}/{name} created with effect None (dry run)")
        click.echo(await self._report(created))
        if taint.effect == "None":
            click.echo(f"{target} tainted")
            return
        if not self.yes:
            if not _interactive():
                await self.client.delete(RULES, name)
                click.echo(f"{KIND}/{name} deleted")
                raise click.ClickException(
                    f"not a terminal, cannot ask whether to apply {taint.effect}: "
                    "run with --yes to apply it without asking"
                )
            if not click.confirm(f"Apply {taint} to {selection}?", default=False):
                await self.client.delete(RULES, name)
                click.echo(f"{KIND}/{name} deleted")
                return
        await self._set_taint(name, taint)
        click.echo(f"{KIND}/{name} configured: effect {taint.effect}")
        click.echo(f"{target} tainted")

    async def _set_taint(self, name: str, taint: DeviceTaint) -> None:
        # Only key, value and effect: the server stamps timeAdded when the effect changes.
        patch = {"spec": {"taint": {"key": taint.key, "value": taint.value or None,
                                    "effect": taint.effect}}}  # fmt: skip
        await self.client.patch(RULES, name, patch)

    async def _report(self, rule: dict[str, Any]) -> str:
        """The controller's EvictionInProgress message for this generation of the rule."""
        generation = rule["metadata"].get("generation")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + REPORT_TIMEOUT
        while loop.time() < deadline:
            current = await self.client.get(RULES, rule["metadata"]["name"])
            for condition in (current.get("status") or {}).get("conditions") or []:
                if (
                    condition.get("type") == "EvictionInProgress"
                    and condition.get("observedGeneration") == generation
                ):
                    return str(condition.get("message", ""))
            await asyncio.sleep(0.1)  # polling the server, not timing any logic
        raise click.ClickException(
            f"no report in {KIND}/{rule['metadata']['name']} status after "
            f"{REPORT_TIMEOUT:.0f} s: is the device-taint-eviction-controller running?"
        )

    async def remove(
        self, selection: Selection | None, rule: str | None, taint: DeviceTaint
    ) -> None:
        items, _ = await self.client.list(RULES)
        found = []
        for item in items:
            spec = item.get("spec") or {}
            old = DeviceTaint.from_dict(spec.get("taint") or {})
            if old.key != taint.key or (taint.effect and old.effect != taint.effect):
                continue
            by_name = rule is not None and item["metadata"]["name"] == rule
            if by_name or (selection and spec.get("deviceSelector") == selection.selector()):
                found.append(item)
        if not found:
            spec = f"{taint.key}:{taint.effect}" if taint.effect else taint.key
            raise click.ClickException(f'taint "{spec}" not found')
        for item in found:
            await self.client.delete(RULES, item["metadata"]["name"])
            click.echo(f"{KIND}/{item['metadata']['name']} deleted")
        click.echo(
            f"{selection.kind} {selection} untainted" if selection else f"{KIND}/{rule} untainted"
        )


@click.group("taint")
def taint_group() -> None:
    """Taint things kubectl taint does not reach: DRA devices.

    \b
    Example:
      taintplane taint devices gpu.example.com/node-1/gpu-0 overheating:NoSchedule
    """


@taint_group.command("devices")
@click.argument("args", nargs=-1, required=True)
@click.option("--rule", "rule", metavar="NAME", help="Edit this DeviceTaintRule instead.")
@click.option("--overwrite", is_flag=True, help="Replace a taint with the same key.")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Create the rule with effect None first, show what NoExecute would evict, then ask.",
)
@click.option("--yes", "-y", is_flag=True, help="With --dry-run: apply without asking.")
@kubeconfig_option
def taint_devices_command(
    args: tuple[str, ...],
    rule: str | None,
    overwrite: bool,
    dry_run: bool,
    yes: bool,
    kubeconfig: str | None,
) -> None:
    """Taint DRIVER[/POOL[/DEVICE]] (or the rule NAME) with KEY[=VALUE]:EFFECT; KEY- removes.

    \b
    Examples:
      taintplane taint devices gpu.example.com/node-1/gpu-0 overheating=true:NoSchedule
      taintplane taint devices gpu.example.com/node-1 maintenance:NoExecute
      taintplane taint devices gpu.example.com/node-1/gpu-0 overheating-
    """
    specs = [a for a in args if "=" in a or ":" in a or a.endswith("-")]
    selections = [a for a in args if a not in specs]
    if rule is not None and selections:
        raise click.UsageError("give a device selection or --rule NAME, not both")
    if rule is None and len(selections) != 1:
        raise click.UsageError("give one DRIVER[/POOL[/DEVICE]] selection (or --rule NAME)")
    if not specs:
        raise click.UsageError("at least one taint update is required")
    selection = Selection.parse(selections[0]) if selections else None
    changes = [parse_device_taint(spec) for spec in specs]
    target = load_target(kubeconfig)

    async def run() -> None:
        transport = HTTPTransport(target.server, token=target.token, verify=target.verify)
        tainter = _Tainter(
            Client(transport, field_manager="taintplane-taint"),
            overwrite=overwrite,
            dry_run=dry_run,
            yes=yes,
        )
        try:
            for taint, remove in changes:
                if remove:
                    await tainter.remove(selection, rule, taint)
                else:
                    await tainter.add(selection, rule, taint)
        finally:
            await transport.close()

    with talking_to(target):
        asyncio.run(run())
