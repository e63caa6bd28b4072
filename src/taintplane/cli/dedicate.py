"""``taintplane dedicate nodes NAME… --to-namespace NS [--evict]``: seed 000's dedicated-nodes
recipe in one step.

1. Each node gets the taint ``dedicated=NS:NoSchedule`` (``NoExecute`` with ``--evict``, which
   also removes pods already there that do not tolerate it) in place of any other
   ``dedicated`` taint, and the label ``dedicated=NS``.
2. The namespace (created if missing) gets the annotations the admission plugins read:
   ``scheduler.alpha.kubernetes.io/defaultTolerations`` (its pods tolerate the taint),
   ``scheduler.alpha.kubernetes.io/tolerationsWhitelist`` (they may tolerate nothing else but
   the node-condition taints admission adds: not-ready and unreachable from
   DefaultTolerationSeconds, memory-pressure from PodTolerationRestriction) and
   ``scheduler.alpha.kubernetes.io/node-selector`` ``dedicated=NS`` (they land only there).

Other namespaces are kept off by the taint; that they cannot simply tolerate it is the
cluster's PodTolerationRestriction whitelist (``--admission-config``): see
``taintplane policy who-can-land NODE``.
"""

from __future__ import annotations

import asyncio
import json

import click

from taintplane.cli.admin import admin_call, kubeconfig_option
from taintplane.cli.kubeconfig import load_target
from taintplane.client import ApiError, Client, HTTPTransport, resource

__all__ = ["dedicate_group", "namespace_annotations"]

NODES = resource("", "v1", "nodes")
NAMESPACES = resource("", "v1", "namespaces")
KEY = "dedicated"
DEFAULT_TOLERATIONS = "scheduler.alpha.kubernetes.io/defaultTolerations"
WHITELIST = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"
NODE_SELECTOR = "scheduler.alpha.kubernetes.io/node-selector"


def namespace_annotations(namespace: str, effect: str) -> dict[str, str]:
    toleration = {"key": KEY, "operator": "Equal", "value": namespace, "effect": effect}
    allowed = [
        toleration,
        # What DefaultTolerationSeconds and PodTolerationRestriction itself add to pods.
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    ]
    return {
        DEFAULT_TOLERATIONS: json.dumps([toleration], separators=(",", ":")),
        WHITELIST: json.dumps(allowed, separators=(",", ":")),
        NODE_SELECTOR: f"{KEY}={namespace}",
    }


async def _dedicate_node(client: Client, name: str, namespace: str, effect: str) -> list[str]:
    for _ in range(5):
        node = await client.get(NODES, name)
        taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") != KEY]
        taints.append({"key": KEY, "value": namespace, "effect": effect})
        patch = {
            "metadata": {
                "labels": {KEY: namespace},
                "resourceVersion": node["metadata"]["resourceVersion"],
            },
            "spec": {"taints": taints},
        }
        try:
            await client.patch(NODES, name, patch)
        except ApiError as error:
            if error.code == 409:
                continue
            raise
        return [
            f"node/{name} tainted {KEY}={namespace}:{effect}",
            f"node/{name} labeled {KEY}={namespace}",
        ]
    raise click.ClickException(f"node/{name} kept changing under us; try again")


async def _dedicate_namespace(client: Client, namespace: str, effect: str) -> list[str]:
    annotations = namespace_annotations(namespace, effect)
    lines = []
    try:
        await client.get(NAMESPACES, namespace)
    except ApiError as error:
        if error.code != 404:
            raise
        await client.create(NAMESPACES, {"metadata": {"name": namespace}})
        lines.append(f"namespace/{namespace} created")
    await client.patch(NAMESPACES, namespace, {"metadata": {"annotations": annotations}})
    lines.append(
        f"namespace/{namespace} annotated: default toleration {KEY}={namespace}:{effect}, "
        f"tolerations whitelist, node selector {KEY}={namespace}"
    )
    return lines


@click.group("dedicate")
def dedicate_group() -> None:
    """Dedicate nodes to a namespace (seed 000's recipe)."""


@dedicate_group.command("nodes")
@click.argument("names", nargs=-1, required=True)
@click.option("--to-namespace", "namespace", required=True, help="The namespace they serve.")
@click.option(
    "--evict",
    is_flag=True,
    help="Taint NoExecute instead of NoSchedule: pods already there that do not tolerate it "
    "are evicted (after their tolerationSeconds).",
)
@kubeconfig_option
def dedicate_nodes_command(
    names: tuple[str, ...], namespace: str, evict: bool, kubeconfig: str | None
) -> None:
    """Taint and label NAMES for NAMESPACE, and make its pods tolerate and select them."""
    target = load_target(kubeconfig)
    effect = "NoExecute" if evict else "NoSchedule"

    async def run() -> list[str]:
        transport = HTTPTransport(target.server, token=target.token, verify=target.verify)
        client = Client(transport, field_manager="taintplane-dedicate")
        try:
            lines = []
            for name in names:
                lines += await _dedicate_node(client, name, namespace, effect)
            return lines + await _dedicate_namespace(client, namespace, effect)
        finally:
            await transport.close()

    try:
        lines = asyncio.run(run())
    except ApiError as error:
        raise click.ClickException(f"{error} (from {target.server})") from error
    for line in lines:
        click.echo(line)
    _warn_if_open(kubeconfig, names[0], namespace)


def _warn_if_open(kubeconfig: str | None, node: str, namespace: str) -> None:
    """The taint alone keeps nobody out who may add the toleration: say which namespaces still
    can, as ``taintplane policy who-can-land`` sees it."""
    try:
        report = admin_call(kubeconfig, "GET", f"policy/who-can-land/{node}")
    except click.ClickException:
        return  # not a taintplane server with the policy endpoint: nothing to add
    others = sorted(
        row["namespace"]
        for row in report.get("namespaces", [])
        if row["namespace"] != namespace and (row["scheduled"] or row["direct"])
    )
    if others:
        click.echo(
            f"warning: pods of {', '.join(others)} can still land on {node} (they may add the "
            "toleration, or set spec.nodeName past a NoSchedule taint); enable "
            "PodTolerationRestriction with a cluster whitelist and use --evict — see "
            f"`taintplane policy who-can-land {node}`",
            err=True,
        )
