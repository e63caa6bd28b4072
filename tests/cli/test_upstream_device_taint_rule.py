"""Upstream's integration test of device-taint eviction through a DeviceTaintRule, ported
black-box: `taintplane up --clock virtual`, kubectl apply for the DRA objects, the official
Python client's CustomObjectsApi for resource.k8s.io/v1alpha3 DeviceTaintRules.

Source (Kubernetes v1.35): test/integration/dra/device_taints_test.go (testEvictCluster with a
v1alpha3 rule): the rule starts with `effect: None` and reports what NoExecute would do
(EvictionInProgress False, observedGeneration 1, "N published devices selected. N allocated
devices selected. N pods would be evicted in 1 namespace …"); a TimeAdded set by hand is
stored as given and the report is made again for generation 2; switching the effect to
NoExecute without touching TimeAdded has the API server set it anew; every pod is then marked
for deletion and the condition ends False with "N pods evicted since starting the controller.".
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from kubernetes import client, config

from tests.cli.test_virtual_cluster_cli import RFC3339, Running, module_cluster

NUM_PODS = 3
NS = "dra-evict-cluster"
DRIVER = "dra.example.com"
GROUP, VERSION, PLURAL = "resource.k8s.io", "v1alpha3", "devicetaintrules"
RULE = f"rule-{NS}"

OBJECTS = f"""
apiVersion: v1
kind: Namespace
metadata: {{name: {NS}}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: {NS}-class}}
spec:
  selectors:
  - cel: {{expression: 'device.driver == "{DRIVER}"'}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {NS}-slice}}
spec:
  driver: {DRIVER}
  nodeName: node-1
  pool: {{name: node-1, generation: 1, resourceSliceCount: 1}}
  devices: [{", ".join(f"{{name: dev-{i}}}" for i in range(NUM_PODS))}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: one-device, namespace: {NS}}}
spec:
  spec:
    devices:
      requests:
      - name: req
        exactly: {{deviceClassName: {NS}-class}}
""" + "".join(
    f"""---
apiVersion: v1
kind: Pod
metadata: {{name: pod-{i}, namespace: {NS}}}
spec:
  containers:
  - {{name: c, image: registry.k8s.io/pause:3.10, resources: {{claims: [{{name: claim}}]}}}}
  resourceClaims: [{{name: claim, resourceClaimTemplateName: one-device}}]
"""
    for i in range(NUM_PODS)
)

WOULD = (
    f"{NUM_PODS} published devices selected. {NUM_PODS} allocated devices selected. "
    f"{NUM_PODS} pods would be evicted in 1 namespace if the effect was NoExecute. "
    "This information will not be updated again. Recreate the DeviceTaintRule to trigger an "
    "update."
)


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    yield from module_cluster(tmp_path_factory, "dtr")


@pytest.fixture(scope="module")
def api(running: Running) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(running.kubeconfig))


def advance(running: Running, duration: str) -> datetime:
    return datetime.strptime(running.ok("clock", "advance", duration).strip(), RFC3339)


def conditions(rule: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (c["type"], c["status"], c.get("observedGeneration"), c["reason"], c["message"])
        for c in (rule.get("status") or {}).get("conditions") or []
    ]


def test_a_rule_reports_what_it_would_do_then_evicts_every_pod(
    running: Running, api: client.ApiClient
) -> None:
    rules = client.CustomObjectsApi(api)
    core = client.CoreV1Api(api)
    running.kubectl("apply", "-f", "-", stdin=OBJECTS)
    advance(running, "0s")
    pods = core.list_namespaced_pod(NS).items
    assert sorted((p.metadata.name, p.spec.node_name, p.status.phase) for p in pods) == [
        (f"pod-{i}", "node-1", "Running") for i in range(NUM_PODS)
    ]
    created_at = advance(running, "0s")
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "DeviceTaintRule",
        "metadata": {"name": RULE},
        "spec": {
            "deviceSelector": {"driver": DRIVER},
            "taint": {"key": "testing", "effect": "None"},
        },
    }
    rule = rules.create_cluster_custom_object(GROUP, VERSION, PLURAL, body)
    assert rule["metadata"]["generation"] == 1
    assert rule["spec"]["taint"]["timeAdded"] == created_at.strftime(RFC3339)
    advance(running, "30s")
    rule = rules.get_cluster_custom_object(GROUP, VERSION, PLURAL, RULE)
    assert conditions(rule) == [("EvictionInProgress", "False", 1, "NoEffect", WOULD)]

    # A TimeAdded set by hand is kept; the new generation is reported again.
    new_time = "2030-01-02T03:04:05Z"
    rule["spec"]["taint"]["timeAdded"] = new_time
    rule = rules.replace_cluster_custom_object(GROUP, VERSION, PLURAL, RULE, rule)
    assert rule["spec"]["taint"]["timeAdded"] == new_time
    assert rule["metadata"]["generation"] == 2
    advance(running, "30s")
    rule = rules.get_cluster_custom_object(GROUP, VERSION, PLURAL, RULE)
    assert conditions(rule) == [("EvictionInProgress", "False", 2, "NoEffect", WOULD)]
    assert not any(p.metadata.deletion_timestamp for p in core.list_namespaced_pod(NS).items)

    # NoExecute with TimeAdded untouched: the API server sets it to now.
    rule["spec"]["taint"]["effect"] = "NoExecute"
    switched_at = advance(running, "1s")
    rule = rules.replace_cluster_custom_object(GROUP, VERSION, PLURAL, RULE, rule)
    assert rule["spec"]["taint"]["timeAdded"] == switched_at.strftime(RFC3339)
    advance(running, "0s")
    for pod in core.list_namespaced_pod(NS).items:
        assert pod.metadata.deletion_timestamp is not None, pod.metadata.name
    advance(running, "1m")
    assert core.list_namespaced_pod(NS).items == []
    rule = rules.get_cluster_custom_object(GROUP, VERSION, PLURAL, RULE)
    assert conditions(rule) == [
        (
            "EvictionInProgress",
            "False",
            3,
            "Completed",
            f"{NUM_PODS} pods evicted since starting the controller.",
        )
    ]
    running.kubectl("wait", "--for=condition=EvictionInProgress=false", f"devicetaintrule/{RULE}")
