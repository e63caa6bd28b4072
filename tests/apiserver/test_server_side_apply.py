"""Server-side apply: field managers, conflicts with exact messages, force, removal of
fields no longer applied; and kubectl apply --server-side against them."""

import httpx
import pytest

APPLY = {"Content-Type": "application/apply-patch+yaml"}
MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def managers(obj):
    return {
        (e["manager"], e["operation"]): e["fieldsV1"]
        for e in obj["metadata"].get("managedFields", [])
    }


def test_apply_creates_then_records_the_applier(api):
    config = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "ssa-1", "labels": {"team": "a"}},
    }
    created = api.patch("/api/v1/nodes/ssa-1?fieldManager=alice", json=config, headers=APPLY)
    assert created.status_code == 201
    assert managers(created.json()) == {
        ("alice", "Apply"): {"f:metadata": {"f:labels": {"f:team": {}}}}
    }
    again = api.patch("/api/v1/nodes/ssa-1?fieldManager=alice", json=config, headers=APPLY)
    assert again.status_code == 200
    assert (
        again.json()["metadata"]["resourceVersion"] == created.json()["metadata"]["resourceVersion"]
    )


def test_updates_take_ownership_and_applies_then_conflict(api):
    api.post("/api/v1/nodes", json={"metadata": {"name": "ssa-2"}})
    taints = {"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}}
    api.patch(
        "/api/v1/nodes/ssa-2?fieldManager=kubectl-taint",
        json=taints,
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )
    node = api.get("/api/v1/nodes/ssa-2").json()
    assert managers(node)[("kubectl-taint", "Update")] == {"f:spec": {"f:taints": {}}}
    config = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "ssa-2"},
        "spec": {"taints": [{"key": "b", "effect": "NoExecute"}]},
    }
    refused = api.patch("/api/v1/nodes/ssa-2?fieldManager=bob", json=config, headers=APPLY)
    assert refused.status_code == 409
    status = refused.json()
    assert status["reason"] == "Conflict"
    assert (
        status["message"]
        == 'Apply failed with 1 conflict: conflict with "kubectl-taint" using v1: .spec.taints'
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "kubectl-taint" using v1',
            "field": ".spec.taints",
        }
    ]
    assert api.get("/api/v1/nodes/ssa-2").json()["spec"]["taints"] == [
        {"key": "a", "effect": "NoSchedule"}
    ]
    forced = api.patch(
        "/api/v1/nodes/ssa-2?fieldManager=bob&force=true", json=config, headers=APPLY
    )
    assert forced.status_code == 200
    assert forced.json()["spec"]["taints"] == [{"key": "b", "effect": "NoExecute"}]
    owners = managers(forced.json())
    assert owners[("bob", "Apply")] == {"f:spec": {"f:taints": {}}}
    assert ("kubectl-taint", "Update") not in owners


def test_applying_the_same_value_is_not_a_conflict(api):
    api.post("/api/v1/nodes", json={"metadata": {"name": "ssa-3", "labels": {"shared": "yes"}}})
    config = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "ssa-3", "labels": {"shared": "yes"}},
    }
    assert (
        api.patch("/api/v1/nodes/ssa-3?fieldManager=carol", json=config, headers=APPLY).status_code
        == 200
    )


def test_fields_no_longer_applied_are_removed(api):
    first = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "ssa-4", "labels": {"a": "1", "b": "2"}},
    }
    api.patch("/api/v1/nodes/ssa-4?fieldManager=dave", json=first, headers=APPLY)
    api.patch(
        "/api/v1/nodes/ssa-4?fieldManager=eve",
        json={"metadata": {"labels": {"c": "3"}}},
        headers=MERGE,
    )
    second = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "ssa-4", "labels": {"a": "1"}},
    }
    result = api.patch("/api/v1/nodes/ssa-4?fieldManager=dave", json=second, headers=APPLY).json()
    assert result["metadata"]["labels"] == {"a": "1", "c": "3"}


def test_several_conflicts_are_grouped_by_manager(api):
    api.post("/api/v1/nodes", json={"metadata": {"name": "ssa-5"}})
    api.patch(
        "/api/v1/nodes/ssa-5?fieldManager=x",
        json={"metadata": {"labels": {"p": "1", "q": "1"}}},
        headers=MERGE,
    )
    config = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "ssa-5", "labels": {"p": "2", "q": "2"}},
    }
    refused = api.patch("/api/v1/nodes/ssa-5?fieldManager=y", json=config, headers=APPLY)
    assert refused.status_code == 409
    assert refused.json()["message"] == (
        'Apply failed with 2 conflicts: conflicts with "x" using v1:\n- .metadata.labels.p\n- .metadata.labels.q'
    )


def test_apply_requires_a_field_manager(api):
    response = api.patch("/api/v1/nodes/ssa-1", json={"metadata": {"name": "ssa-1"}}, headers=APPLY)
    assert response.status_code == 400
    assert (
        response.json()["message"]
        == "PATCH requests with apply patches must specify a fieldManager"
    )


def test_kubectl_apply_server_side_conflict_and_force(kubectl):
    kubectl("create", "-f", "-", stdin="apiVersion: v1\nkind: Node\nmetadata: {name: ssa-k}\n")
    assert kubectl("taint", "nodes", "ssa-k", "gpu=yes:NoSchedule") == "node/ssa-k tainted\n"
    manifest = 'apiVersion: v1\nkind: Node\nmetadata: {name: ssa-k}\nspec:\n  taints: [{key: gpu, value: "no", effect: NoSchedule}]\n'
    refused = kubectl.run("apply", "--server-side", "-f", "-", stdin=manifest)
    assert refused.returncode == 1
    assert refused.stderr.startswith(
        'error: Apply failed with 1 conflict: conflict with "kubectl-taint" using v1: .spec.taints\n'
    )
    assert (
        kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=manifest)
        == "node/ssa-k serverside-applied\n"
    )
    assert kubectl("get", "node", "ssa-k", "-o", "jsonpath={.spec.taints[0].value}") == "no"


UPGRADE = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: upgrade}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: upgrade}}
  template:
    metadata: {labels: {app: upgrade}}
    spec:
      containers: [{name: c, image: nginx:1.27}]
"""


def test_kubectl_apply_server_side_upgrades_a_client_side_apply(kubectl):
    """lastAppliedManager: kubectl's first server-side apply of what it applied client-side
    takes over the fields of the last-applied annotation without a conflict; another
    field manager, or a field changed since by someone else, still conflicts."""
    assert kubectl("apply", "-f", "-", stdin=UPGRADE.replace("REPLICAS", "2")) == (
        "deployment.apps/upgrade created\n"
    )
    three = UPGRADE.replace("REPLICAS", "3")
    other = kubectl.run("apply", "--server-side", "--field-manager=other", "-f", "-", stdin=three)
    assert other.returncode == 1
    assert other.stderr.startswith(
        'error: Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using '
        "apps/v1: .spec.replicas\n"
    )
    assert kubectl("apply", "--server-side", "-f", "-", stdin=three) == (
        "deployment.apps/upgrade serverside-applied\n"
    )
    assert kubectl("get", "deploy", "upgrade", "-o", "jsonpath={.spec.replicas}") == "3"
    kubectl("scale", "deploy", "upgrade", "--replicas=5")
    changed = kubectl.run("apply", "--server-side", "-f", "-", stdin=three.replace("3", "4"))
    assert changed.returncode == 1
    assert changed.stderr.startswith(
        'error: Apply failed with 1 conflict: conflict with "kubectl" using apps/v1: '
        ".spec.replicas\n"
    )
