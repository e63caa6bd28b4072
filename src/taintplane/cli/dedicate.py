"""``taintplane dedicate nodes NAME… --to-namespace NS [--evict]``: the dedicated-nodes
recipe in one step.

1. Each node gets the taint ``dedicated=NS:NoSchedule`` (``NoExecute`` with ``--evict``, which
   also removes pods already there that do not tolerate it) in place of any other
   ``dedicated`` taint, and the label ``node-restriction.kubernetes.io/dedicated=NS``, which
   NodeRestriction refuses to nodes: a node cannot label itself into the namespace's pods'
   selection (the label ``dedicated=NS`` of earlier dedications it could; that label is
   removed).
2. The namespace (created if missing) gets the annotations the admission plugins read:
   ``scheduler.alpha.kubernetes.io/defaultTolerations`` (its pods tolerate the taint),
   ``scheduler.alpha.kubernetes.io/tolerationsWhitelist`` (they may tolerate nothing else but
   the node-condition taints admission adds: not-ready and unreachable from
   DefaultTolerationSeconds, memory-pressure from PodTolerationRestriction) and
   ``scheduler.alpha.kubernetes.io/node-selector``
   ``node-restriction.kubernetes.io/dedicated=NS`` (they land only there).

Other namespaces are kept off by the taint; that they cannot simply tolerate it is the
cluster's PodTolerationRestriction whitelist (``--admission-config``): see
``taintplane policy who-can-land NODE``.

As ``kubectl taint`` does, every node is read (and the namespace name checked) before anything
is written, so a misspelt name changes nothing; so is every node dedicated to the namespace
the old way (label ``dedicated=NS``): leaving one out would cut it off from the namespace's
new node selector, so the command refuses and names the command that moves them all. A write
failing after others succeeded is reported with what was changed and the kubectl commands
that undo it.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import click

from taintplane.admission.dedication import LABEL, OLD_LABEL, dedicate_command, old_dedication
from taintplane.api.dra_validation import is_dns1123_label
from taintplane.cli.admin import admin_call, kubeconfig_option, talking_to
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
        NODE_SELECTOR: f"{LABEL}={namespace}",
    }


@dataclass
class _Undo:
    """What the command changed so far, as the kubectl commands that put it back."""

    commands: list[str] = field(default_factory=list)
    evicting: bool = False

    def node(self, name: str, old: dict[str, Any]) -> None:
        taints = [t for t in (old.get("spec") or {}).get("taints") or [] if t.get("key") == KEY]
        self.commands.append(f"kubectl taint nodes {name} {KEY}-")
        for taint in taints:
            value = f"={taint['value']}" if taint.get("value") else ""
            self.commands.append(f"kubectl taint nodes {name} {KEY}{value}:{taint['effect']}")
        labels = (old.get("metadata") or {}).get("labels") or {}
        self.commands.append(
            f"kubectl label nodes {name} {LABEL}={labels[LABEL]} --overwrite"
            if LABEL in labels
            else f"kubectl label nodes {name} {LABEL}-"
        )
        if OLD_LABEL in labels:  # removed as the old dedication's
            self.commands.append(
                f"kubectl label nodes {name} {OLD_LABEL}={labels[OLD_LABEL]} --overwrite"
            )

    def text(self) -> str:
        lost = " (pods the NoExecute taint evicted are gone)" if self.evicting else ""
        return (
            "; the changes printed above were kept"
            + lost
            + ", undo them with: "
            + " && ".join(self.commands)
        )


async def _dedicate_node(
    client: Client, node: dict[str, Any], namespace: str, effect: str
) -> dict[str, Any]:
    """Taints and labels ``node`` (as read, re-read on conflicts); returns it as it was."""
    name = node["metadata"]["name"]
    for _ in range(5):
        taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") != KEY]
        taints.append({"key": KEY, "value": namespace, "effect": effect})
        labels: dict[str, str | None] = {LABEL: namespace}
        if OLD_LABEL in ((node.get("metadata") or {}).get("labels") or {}):
            labels[OLD_LABEL] = None  # the old dedication's label, which nodes may set
        patch = {
            "metadata": {
                "labels": labels,
                "resourceVersion": node["metadata"]["resourceVersion"],
            },
            "spec": {"taints": taints},
        }
        try:
            await client.patch(NODES, name, patch)
        except ApiError as error:
            if error.code == 409:
                node = await client.get(NODES, name)
                continue
            raise
        return node
    raise click.ClickException(f"node/{name} kept changing under us; try again")


async def _dedicate_namespace(client: Client, namespace: str, effect: str, undo: _Undo) -> None:
    annotations = namespace_annotations(namespace, effect)
    try:
        await client.get(NAMESPACES, namespace)
    except ApiError as error:
        if error.code != 404:
            raise
        await client.create(NAMESPACES, {"metadata": {"name": namespace}})
        undo.commands.append(f"kubectl delete namespace {namespace}")
        click.echo(f"namespace/{namespace} created")
    await client.patch(NAMESPACES, namespace, {"metadata": {"annotations": annotations}})
    click.echo(
        f"namespace/{namespace} annotated: default toleration {KEY}={namespace}:{effect}, "
        f"tolerations whitelist, node selector {LABEL}={namespace}"
    )


async def _check_old_dedications(
    client: Client, nodes: list[dict[str, Any]], namespace: str, evict: bool
) -> None:
    """Refuse, before any write, to leave behind a node dedicated to the namespace the old
    way: the namespace's pods are about to select the new label, which it does not have."""
    named = {node["metadata"]["name"] for node in nodes}
    try:
        listed, _ = await client.list(NODES, label_selector=f"{OLD_LABEL}={namespace}")
    except ApiError as error:
        if error.code != 403:
            raise
        return  # a user who may only get and patch the named nodes cannot look further

    left = sorted(
        node["metadata"]["name"]
        for node in listed
        if node["metadata"]["name"] not in named
        and (old_dedication(node) or ("", False))[0] == namespace
    )
    if not left:
        return
    nodes_text = ", ".join(left)
    is_are, them = ("is", "it") if len(left) == 1 else ("are", "them")
    everything = [*(node["metadata"]["name"] for node in nodes), *left]
    raise click.ClickException(
        f"{nodes_text} {is_are} dedicated to {namespace} by the label {OLD_LABEL}={namespace}, "
        f"which a node may set on itself. {namespace}'s pods will select {LABEL}={namespace} "
        f"instead, which NodeRestriction refuses to nodes, and would no longer land on "
        f"{nodes_text}; move {them} too, in the same command: "
        f"{dedicate_command(everything, namespace, evict)}"
    )


def _check_namespace_name(namespace: str) -> None:
    """The API server's refusal of the name, before any node is touched."""
    problems = is_dns1123_label(namespace)
    if problems:
        errors = [f'metadata.name: Invalid value: "{namespace}": {p}' for p in problems]
        listed = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        raise click.ClickException(f'The Namespace "{namespace}" is invalid: {listed}')


@click.group("dedicate")
def dedicate_group() -> None:
    """Dedicate nodes to a namespace: only its pods may land there, and they land nowhere else.

    \b
    Example:
      taintplane dedicate nodes foo bar baz --to-namespace banana
    """


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
    """Taint and label NAMES for NAMESPACE, and make its pods tolerate and select them.

    \b
    Examples:
      taintplane dedicate nodes foo bar baz --to-namespace banana
      taintplane dedicate nodes gpu-1 --to-namespace ml --evict
    """
    _check_namespace_name(namespace)
    target = load_target(kubeconfig)
    effect = "NoExecute" if evict else "NoSchedule"
    undo = _Undo(evicting=evict)

    async def run() -> None:
        transport = HTTPTransport(target.server, token=target.token, verify=target.verify)
        client = Client(transport, field_manager="taintplane-dedicate")
        try:
            nodes = [await client.get(NODES, name) for name in dict.fromkeys(names)]
            await _check_old_dedications(client, nodes, namespace, evict)
            for node in nodes:
                name = node["metadata"]["name"]
                old = await _dedicate_node(client, node, namespace, effect)
                undo.node(name, old)
                click.echo(f"node/{name} tainted {KEY}={namespace}:{effect}")
                click.echo(f"node/{name} labeled {LABEL}={namespace}")
                if OLD_LABEL in ((old.get("metadata") or {}).get("labels") or {}):
                    click.echo(
                        f"node/{name} unlabeled {OLD_LABEL} (the old dedication's label, which "
                        "a node may set on itself)"
                    )
            await _dedicate_namespace(client, namespace, effect, undo)
        finally:
            await transport.close()

    try:
        with talking_to(target):
            asyncio.run(run())
    except click.ClickException as error:
        if not undo.commands:
            raise
        raise click.ClickException(error.message + undo.text()) from error
    _warn_if_open(kubeconfig, names[0], namespace, evict)


def _warn_if_open(kubeconfig: str | None, node: str, namespace: str, evict: bool) -> None:
    """The taint alone keeps nobody out who may add the toleration: say which namespaces still
    can, as ``taintplane policy who-can-land`` sees it, and only the advice that applies."""
    try:
        report = admin_call(kubeconfig, "GET", f"policy/who-can-land/{node}")
    except click.ClickException:
        return  # not a taintplane server with the policy endpoint: nothing to add
    others = [
        row
        for row in report.get("namespaces", [])
        if row["namespace"] != namespace and (row["scheduled"] or row["direct"])
    ]
    if not others:
        return
    tolerating = [row for row in others if row["scheduled"]]
    # Only a NoSchedule taint lets spec.nodeName through (the kubelet refuses NoExecute only).
    bypassing = [] if evict else [row for row in others if row["direct"]]
    ways, fixes = [], []
    if tolerating:
        ways.append("add the toleration")
        for scope, fix in (
            (
                "(any toleration allowed)",
                "enable PodTolerationRestriction with a cluster whitelist",
            ),
            ("(cluster whitelist)", "narrow the cluster whitelist"),
            ("(namespace whitelist)", "narrow their namespaces' tolerationsWhitelist"),
        ):
            if any(scope in row["why"] for row in tolerating):
                fixes.append(fix)
    if bypassing:
        ways.append("set spec.nodeName past a NoSchedule taint")
        fixes.append("use --evict")
    names = ", ".join(sorted(row["namespace"] for row in others))
    click.echo(
        f"warning: pods of {names} can still land on {node} (they may {', or '.join(ways)}); "
        f"{' and '.join(fixes)} — see `taintplane policy who-can-land {node}`",
        err=True,
    )
