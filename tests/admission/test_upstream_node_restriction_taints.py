"""plugin/pkg/admission/noderestriction's TestAdmitNode cases about taints and other nodes
(v1.35), through the API server with a node's token: a node may register itself with taints,
may not add, remove or change them afterwards, and may not touch another node at all."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.admission.test_node_restriction_api import ADMIN, Call, refusal, run

TAINT_A = {"key": "mykey", "value": "A", "effect": "NoSchedule"}
TAINT_B = {"key": "mykey", "value": "B", "effect": "NoSchedule"}
TAINTS_FORBIDDEN = (
    403,
    'nodes "node-1" is forbidden: node "node-1" is not allowed to modify taints',
)


def node(name: str = "node-1", taints: list[Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
    if taints is not None:
        obj["spec"] = {"taints": taints}
    return obj


def test_allow_create_of_my_node_with_taints(tmp_path: Path) -> None:
    async def scenario(call: Call) -> None:
        created = await call("POST", "/api/v1/nodes", node(taints=[TAINT_A]))
        assert created.status_code == 201, created.text
        # TaintNodesByCondition adds its own beside the node's.
        assert TAINT_A in created.json()["spec"]["taints"]

    run(tmp_path, scenario)


@pytest.mark.parametrize(
    ("before", "after", "allowed"),
    [
        ([TAINT_A], [TAINT_A], True),
        ([], [TAINT_A], False),
        ([TAINT_A], [], False),
        ([TAINT_A], [TAINT_B], False),
    ],
    ids=["unchanged taints", "added taints", "removed taints", "changed taints"],
)
def test_update_of_my_node_taints(
    tmp_path: Path, before: list[Any], after: list[Any], allowed: bool
) -> None:
    async def scenario(call: Call) -> None:
        # Registered by an administrator so the node starts with exactly ``before``.
        created = await call("POST", "/api/v1/nodes", node(taints=before), ADMIN)
        assert created.status_code == 201, created.text
        stored = created.json()
        stored["spec"]["taints"] = [
            t
            for t in stored["spec"].get("taints") or []
            if t["key"] != "node.kubernetes.io/not-ready"
        ]
        reset = await call("PUT", "/api/v1/nodes/node-1", stored, ADMIN)
        assert reset.status_code == 200, reset.text
        body = copy.deepcopy(reset.json())
        body["spec"]["taints"] = after
        body["metadata"]["labels"] = {"rack": "r1"}
        for method, path, payload in (
            ("PUT", "/api/v1/nodes/node-1", body),
            ("PATCH", "/api/v1/nodes/node-1", {"spec": {"taints": after or None}}),
        ):
            answered = await call(method, path, payload)
            if allowed:
                assert answered.status_code == 200, answered.text
            else:
                assert refusal(answered) == TAINTS_FORBIDDEN
        final = (await call("GET", "/api/v1/nodes/node-1", token=ADMIN)).json()
        assert (final["spec"].get("taints") or []) == (after if allowed else before)

    run(tmp_path, scenario)


def test_status_update_cannot_change_taints(tmp_path: Path) -> None:
    """NodeRestriction runs in the mutating phase, on the object as sent and before the status
    strategy puts the stored spec back: a taint changed in a status update is refused too, and
    a status update that leaves them alone ("allow update of my node status") goes through."""

    async def scenario(call: Call) -> None:
        created = await call("POST", "/api/v1/nodes", node(taints=[TAINT_A]))
        assert created.status_code == 201, created.text
        body = created.json()
        body["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
        changed = copy.deepcopy(body)
        changed["spec"]["taints"] = [TAINT_B]
        refused = await call("PUT", "/api/v1/nodes/node-1/status", changed)
        assert refusal(refused) == TAINTS_FORBIDDEN
        updated = await call("PUT", "/api/v1/nodes/node-1/status", body)
        assert updated.status_code == 200, updated.text
        assert updated.json()["spec"]["taints"] == created.json()["spec"]["taints"]

    run(tmp_path, scenario)


def test_forbid_other_nodes(tmp_path: Path) -> None:
    other = (
        403,
        'nodes "node-2" is forbidden: node "node-1" is not allowed to modify node "node-2"',
    )

    async def scenario(call: Call) -> None:
        assert refusal(await call("POST", "/api/v1/nodes", node("node-2"))) == other
        created = await call("POST", "/api/v1/nodes", node("node-2"), ADMIN)
        assert created.status_code == 201
        body = created.json()
        body["spec"]["taints"] = []
        assert refusal(await call("PUT", "/api/v1/nodes/node-2", body)) == other
        assert refusal(await call("PUT", "/api/v1/nodes/node-2/status", body)) == other
        patch = {"spec": {"taints": None}}
        assert refusal(await call("PATCH", "/api/v1/nodes/node-2", patch)) == other

    run(tmp_path, scenario)


def test_taints_compared_as_values(tmp_path: Path) -> None:
    """Upstream compares the decoded taints (Semantic.DeepEqual): a taint resent with its empty
    value spelled out, or with an unknown field, is no change."""

    async def scenario(call: Call) -> None:
        taint = {"key": "mykey", "effect": "NoSchedule"}
        created = await call("POST", "/api/v1/nodes", node(taints=[taint]))
        assert created.status_code == 201, created.text
        body = created.json()
        body["spec"]["taints"] = [
            {**t, "value": ""} if t["key"] == "mykey" else t for t in body["spec"]["taints"]
        ]
        body["metadata"]["labels"] = {"rack": "r1"}
        updated = await call("PUT", "/api/v1/nodes/node-1", body)
        assert updated.status_code == 200, updated.text
        patch = {"spec": {"taints": [{**taint, "value": ""}, *body["spec"]["taints"][1:]]}}
        patched = await call("PATCH", "/api/v1/nodes/node-1", patch)
        assert patched.status_code == 200, patched.text
        # The same instant in another RFC 3339 spelling.
        evicting = {"key": "e", "effect": "NoExecute", "timeAdded": "2026-01-02T03:04:05Z"}
        added = await call("PATCH", "/api/v1/nodes/node-1", {"spec": {"taints": [evicting]}}, ADMIN)
        assert added.status_code == 200, added.text
        respelled = {**evicting, "timeAdded": "2026-01-02T04:04:05+01:00"}
        same = await call("PATCH", "/api/v1/nodes/node-1", {"spec": {"taints": [respelled]}})
        assert same.status_code == 200, same.text
        later = {**evicting, "timeAdded": "2026-01-02T03:04:06Z"}
        moved = await call("PATCH", "/api/v1/nodes/node-1", {"spec": {"taints": [later]}})
        assert refusal(moved) == TAINTS_FORBIDDEN

    run(tmp_path, scenario)
