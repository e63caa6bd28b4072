"""The Pending section stays readable on a large cluster: pods of one controller explained once,
nodes with the same outcome on one row, long lists cut with the command that shows the rest."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

from taintplane.client import Client
from taintplane.web.pending import MAX_GROUPS, MAX_LISTED, pending_section


def pod(name: str, owner: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "shop", "uid": name}
    if owner:
        meta["ownerReferences"] = [{"kind": "ReplicaSet", "name": owner, "controller": True}]
    message = "0/3 nodes are available: 3 node(s) had untolerated taint(s)."
    condition = {"type": "PodScheduled", "status": "False", "message": message}
    return {"metadata": meta, "spec": {}, "status": {"phase": "Pending", "conditions": [condition]}}


def rejected(node: str, taint: str) -> dict[str, Any]:
    return {
        "node": node,
        "verdict": "rejected",
        "failures": [
            {
                "plugin": "TaintToleration",
                "reason": "node(s) had untolerated taint(s)",
                "detail": f"untolerated {taint}",
            }
        ],
        "tolerations": [{"key": taint.split(":")[0], "operator": "Exists"}],
        "deviceTolerations": [],
        "stillRejectedBy": [],
    }


class Explainer:
    def __init__(self, nodes: list[dict[str, Any]]) -> None:
        self.nodes = nodes
        self.asked: list[str] = []

    async def __call__(
        self,
        client: Client,
        pods: Sequence[dict[str, Any]],
        *,
        nodes: Sequence[dict[str, Any]] | None = None,
        cluster_pods: Sequence[dict[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        self.asked += [p["metadata"]["name"] for p in pods]
        return [{"pod": f"shop/{p['metadata']['name']}", "nodes": self.nodes} for p in pods]


def render(pending: list[dict[str, Any]], explainer: Explainer) -> str:
    return asyncio.run(
        pending_section(None, pending, explainer, lambda name: name, ([], pending))  # type: ignore[arg-type]
    )


def test_one_controller_is_explained_once_and_alike_nodes_share_a_row() -> None:
    nodes = [rejected(f"gpu-{i}", "gpu:NoSchedule") for i in range(7)]
    nodes.append(rejected("spot-1", "spot:NoExecute"))
    explainer = Explainer(nodes)
    page = render([pod(f"web-{i}", owner="web-5d8") for i in range(3)] + [pod("solo")], explainer)
    assert explainer.asked == ["solo", "web-0"]
    assert "shop/web-0 (and 2 more of ReplicaSet web-5d8): node by node" in page
    table = page[page.index('id="explain-shop-web-0"') :]
    cells = re.findall(r"<tr><td>([^<]*)</td>", table)
    assert cells[:2] == ["gpu-0, gpu-1, gpu-2, gpu-3, gpu-4 and 2 more", "spot-1"]


def test_long_lists_are_cut() -> None:
    nodes = [rejected(f"n{i}", f"t{i}:NoSchedule") for i in range(MAX_GROUPS + 3)]
    page = render([pod(f"p{i:03}") for i in range(MAX_LISTED + 5)], Explainer(nodes))
    assert page.count("<tr>", 0, page.index("</table>")) == MAX_LISTED + 1
    assert (
        "and 5 more: <code>kubectl get pods -A --field-selector=status.phase=Pending</code>" in page
    )
    assert (
        "3 more nodes, rejected for other reasons: <code>taintplane explain pod p000 -n shop"
        in page
    )
    assert "more kinds of pending pod not explained here" in page


def test_device_tolerations_name_the_claim_or_template() -> None:
    node = rejected("gpu-node", "gpu:NoSchedule")
    node["failures"] = [
        {"plugin": "DynamicResources", "reason": "cannot allocate all claims", "detail": ""}
    ]
    node["tolerations"] = []
    toleration = {"key": "overheating", "operator": "Exists", "effect": "NoSchedule"}
    node["deviceTolerations"] = [
        {
            "claim": "job-gpu-x7",
            "template": "gpu-template",
            "request": "gpu",
            "toleration": toleration,
        }
    ]
    page = render([pod("job")], Explainer([node]))
    assert (
        "ResourceClaimTemplate gpu-template request gpu: <code>{&quot;key&quot;: "
        "&quot;overheating&quot;, &quot;operator&quot;: &quot;Exists&quot;, &quot;effect&quot;: "
        "&quot;NoSchedule&quot;}</code>"
    ) in page
