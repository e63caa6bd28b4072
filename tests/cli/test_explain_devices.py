"""``taintplane explain pod`` for pods with ResourceClaims (device taints, DeviceTaintRules,
the claim toleration that lets the pod in), and fixes offered only when they are enough."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from taintplane.cli.main import cli
from taintplane.sim.cluster import Cluster, running_cluster
from tests.scheduler.builders import make_node, make_pod, taint

MERGE = {"Content-Type": "application/merge-patch+json"}
DRA = "/apis/resource.k8s.io/v1"
DRIVER = "gpu.example.com"


def add_node(api: httpx.Client, node: dict[str, Any]) -> None:
    status = node.pop("status")
    name = node["metadata"]["name"]
    assert api.post("/api/v1/nodes", json=node).status_code == 201
    # Replace the not-ready taint TaintNodesByCondition added (no node lifecycle controller
    # runs here) with the node's own taints.
    api.patch(
        f"/api/v1/nodes/{name}",
        json={"spec": {"taints": node["spec"].get("taints")}},
        headers=MERGE,
    )
    api.patch(f"/api/v1/nodes/{name}/status", json={"status": status}, headers=MERGE)


def add_slice(api: httpx.Client, node: str, devices: list[dict[str, Any]]) -> None:
    body = {
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }
    response = api.post(f"{DRA}/resourceslices", json=body)
    assert response.status_code == 201, response.text


def claim_pod(api: httpx.Client, name: str, **spec: Any) -> None:
    claim = {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}
        },
    }
    response = api.post(f"{DRA}/namespaces/default/resourceclaims", json=claim)
    assert response.status_code == 201, response.text
    pod = make_pod(name, **spec)
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name}]
    pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    response = api.post("/api/v1/namespaces/default/pods", json=pod)
    assert response.status_code == 201, response.text


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("explain-devices"), components=()) as running:
        with httpx.Client(base_url=running.url) as api:
            add_node(api, make_node("gpu-1"))
            add_node(api, make_node("gpu-2", taints=[taint("maintenance", value="yes")]))
            add_node(api, make_node("plain", labels={"zone": "b"}))
            api.post(
                f"{DRA}/deviceclasses",
                json={
                    "metadata": {"name": DRIVER},
                    "spec": {
                        "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]
                    },
                },
            )
            # gpu-1: one device tainted in its slice, the other by a DeviceTaintRule.
            add_slice(
                api,
                "gpu-1",
                [
                    {
                        "name": "gpu-0",
                        "taints": [{"key": "ecc", "value": "bad", "effect": "NoSchedule"}],
                    },
                    {"name": "gpu-1"},
                ],
            )
            add_slice(api, "gpu-2", [{"name": "gpu-0"}])
            rule = {
                "metadata": {"name": "overheat"},
                "spec": {
                    "deviceSelector": {"driver": DRIVER, "pool": "gpu-1", "device": "gpu-1"},
                    "taint": {"key": "overheating", "effect": "NoExecute"},
                },
            }
            response = api.post("/apis/resource.k8s.io/v1alpha3/devicetaintrules", json=rule)
            assert response.status_code == 201, response.text
            claim_pod(api, "trainer")
        yield running


def explain(cluster: Cluster, *args: str) -> str:
    result = CliRunner().invoke(
        cli, ["explain", "pod", *args, "--kubeconfig", str(cluster.kubeconfig_path)]
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_a_device_pod_is_explained_with_its_claims_and_the_device_taints(cluster: Cluster) -> None:
    report = json.loads(explain(cluster, "trainer", "-o", "json"))
    rows = {row["node"]: row for row in report["nodes"]}
    # The only node whose devices are free of taints is tainted itself.
    assert report["message"] == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), "
        "2 cannot allocate all claims. still not schedulable, preemption: 0/3 nodes are "
        "available: 3 Preemption is not helpful for scheduling."
    )
    gpu1 = rows["gpu-1"]
    assert gpu1["plugin"] == "DynamicResources"
    assert gpu1["reason"] == "cannot allocate all claims"
    assert gpu1["detail"] == (
        "claim default/trainer request gpu: 2 matching free device(s), 0 untainted; "
        "untolerated device taints: ecc=bad:NoSchedule (ResourceSlice gpu-1-gpu.example.com) "
        "on gpu.example.com/gpu-1/gpu-0; overheating:NoExecute (DeviceTaintRule overheat) on "
        "gpu.example.com/gpu-1/gpu-1"
    )
    assert gpu1["tolerations"] == []
    # Tolerating either taint frees a device, and one is all the request needs: the fewest
    # tolerations that were checked to make the node feasible.
    assert gpu1["deviceTolerations"] == [
        {
            "claim": "default/trainer",
            "request": "gpu",
            "toleration": {"key": "overheating", "operator": "Exists", "effect": "NoExecute"},
        },
    ]
    # gpu-2: the node's taint, not its device; a pod toleration lets it in.
    assert rows["gpu-2"]["failures"] == [
        {
            "plugin": "TaintToleration",
            "reason": "node(s) had untolerated taint(s)",
            "detail": "untolerated maintenance=yes:NoSchedule",
        }
    ]
    assert rows["gpu-2"]["tolerations"] == [
        {"key": "maintenance", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}
    ]
    # plain: no device at all, so no toleration can help, and none is offered.
    assert rows["plain"]["reason"] == "cannot allocate all claims"
    assert rows["plain"]["detail"] == "claim default/trainer request gpu: 0 matching free device(s)"
    assert rows["plain"]["tolerations"] == rows["plain"]["deviceTolerations"] == []


def test_the_table_names_where_a_device_toleration_goes(cluster: Cluster) -> None:
    lines = explain(cluster, "trainer").splitlines()
    assert (
        '  gpu-1: ResourceClaim default/trainer request gpu: {"key": "overheating", '
        '"operator": "Exists", "effect": "NoExecute"}'
    ) in lines
    assert (
        '  gpu-2: {"key": "maintenance", "operator": "Equal", "value": "yes", '
        '"effect": "NoSchedule"}'
    ) in lines


def test_no_toleration_is_offered_where_the_node_selector_also_rejects(cluster: Cluster) -> None:
    with httpx.Client(base_url=cluster.url) as api:
        claim_pod(api, "zoned", node_selector={"zone": "b"})
    report = json.loads(explain(cluster, "zoned", "-o", "json"))
    rows = {row["node"]: row for row in report["nodes"]}
    gpu2 = rows["gpu-2"]
    # Every plugin that rejects the node, the scheduler's own first.
    assert [f["plugin"] for f in gpu2["failures"]] == ["TaintToleration", "NodeAffinity"]
    assert gpu2["failures"][1]["reason"] == "node(s) didn't match Pod's node affinity/selector"
    assert gpu2["failures"][1]["detail"] == "nodeSelector zone=b (node has <none>)"
    assert gpu2["tolerations"] == []
    assert [f["plugin"] for f in rows["gpu-1"]["failures"]] == [
        "NodeAffinity",
        "DynamicResources",
    ]
    assert rows["gpu-1"]["deviceTolerations"] == []
    lines = explain(cluster, "zoned").splitlines()
    assert "Tolerations that would let the pod onto rejected nodes:" not in lines
    assert (
        "  gpu-2: still rejected by NodeAffinity (node(s) didn't match Pod's node "
        "affinity/selector)"
    ) in lines


def test_a_generated_claims_toleration_goes_in_its_template(cluster: Cluster) -> None:
    """As the resource claim controller makes it: the pod owns the claim, the claim names
    the pod's claim entry, the pod's status names the claim."""
    with httpx.Client(base_url=cluster.url) as api:
        pod = make_pod("templated")
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpus"}]
        created = api.post("/api/v1/namespaces/default/pods", json=pod).json()
        claim: dict[str, Any] = {
            "metadata": {
                "name": "templated-gpu-x7k2p",
                "namespace": "default",
                "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"},
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": "templated",
                        "uid": created["metadata"]["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {
                "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}
            },
        }
        response = api.post(f"{DRA}/namespaces/default/resourceclaims", json=claim)
        assert response.status_code == 201, response.text
        status = {
            "resourceClaimStatuses": [
                {"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}
            ]
        }
        api.patch(
            "/api/v1/namespaces/default/pods/templated/status",
            json={"status": status},
            headers=MERGE,
        )
    report = json.loads(explain(cluster, "templated", "-o", "json"))
    gpu1 = next(row for row in report["nodes"] if row["node"] == "gpu-1")
    assert gpu1["deviceTolerations"] == [
        {
            "claim": "default/templated-gpu-x7k2p",
            "request": "gpu",
            "toleration": {"key": "overheating", "operator": "Exists", "effect": "NoExecute"},
            "template": "default/gpus",
        }
    ]
    assert (
        '  gpu-1: ResourceClaimTemplate default/gpus request gpu: {"key": "overheating", '
        '"operator": "Exists", "effect": "NoExecute"}'
    ) in explain(cluster, "templated").splitlines()


def test_an_allocated_claim_names_the_devices_other_nodes_cannot_reach(cluster: Cluster) -> None:
    with httpx.Client(base_url=cluster.url) as api:
        claim_pod(api, "holder")
        pod = api.get("/api/v1/namespaces/default/pods/holder").json()
        url = f"{DRA}/namespaces/default/resourceclaims/holder"
        claim = api.get(url).json()
        claim["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
        claim = api.put(url, json=claim).json()
        on_gpu_2 = {"key": "metadata.name", "operator": "In", "values": ["gpu-2"]}
        claim["status"] = {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "gpu", "driver": DRIVER, "pool": "gpu-2", "device": "gpu-0"}
                    ]
                },
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [on_gpu_2]}]},
            },
            "reservedFor": [{"resource": "pods", "name": "holder", "uid": pod["metadata"]["uid"]}],
        }
        response = api.put(f"{url}/status", json=claim)
        assert response.status_code == 200, response.text
    report = json.loads(explain(cluster, "holder", "-o", "json"))
    rows = {row["node"]: row for row in report["nodes"]}
    assert rows["gpu-1"]["failures"] == [
        {
            "plugin": "DynamicResources",
            "reason": "resourceclaim not available on the node",
            "detail": "claim default/holder is allocated (gpu.example.com/gpu-2/gpu-0) for "
            "other nodes",
        }
    ]
    assert rows["gpu-1"]["deviceTolerations"] == []
    # Its devices are on gpu-2, whose own taint a pod toleration answers.
    assert rows["gpu-2"]["tolerations"] == [
        {"key": "maintenance", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}
    ]
