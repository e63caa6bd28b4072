"""A write to a status subresource changes the status and what each kind's status strategy
lets through (PrepareForUpdate): the spec in the body is ignored for every kind; labels
written with a status are kept except on Deployments (deploymentStatusStrategy resets them);
owner references of a pod stay (podStatusStrategy). Each kind's status validation applies.

The table covers every kind the scheme gives a status subresource."""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import pytest

from taintplane.api.scheme import SCHEME

MERGE = {"Content-Type": "application/merge-patch+json"}
_names = itertools.count()
WHEN = "2026-01-01T00:00:00Z"


def _template(name: str) -> dict[str, Any]:
    return {
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        },
    }


# plural -> (collection path, body(name), spec change, status change or None)
KINDS: dict[str, tuple[str, Any, dict[str, Any], dict[str, Any] | None]] = {
    "namespaces": (
        "/api/v1/namespaces",
        lambda n: {"metadata": {"name": n}},
        {"finalizers": []},
        {
            "conditions": [
                {
                    "type": "NamespaceContentRemaining",
                    "status": "False",
                    "reason": "ContentRemoved",
                    "message": "m",
                    "lastTransitionTime": WHEN,
                }
            ]
        },
    ),
    "nodes": (
        "/api/v1/nodes",
        lambda n: {"metadata": {"name": n}},
        {"unschedulable": True, "taints": [{"key": "k", "effect": "NoSchedule"}]},
        {"capacity": {"pods": "10"}},
    ),
    "pods": (
        "/api/v1/namespaces/default/pods",
        lambda n: {"metadata": {"name": n}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        {"nodeName": "elsewhere", "containers": [{"name": "d", "image": "y"}]},
        {"message": "hello"},
    ),
    "deployments": (
        "/apis/apps/v1/namespaces/default/deployments",
        lambda n: {"metadata": {"name": n}, "spec": _template(n)},
        {"replicas": 5},
        {"observedGeneration": 1, "replicas": 0},
    ),
    "replicasets": (
        "/apis/apps/v1/namespaces/default/replicasets",
        lambda n: {"metadata": {"name": n}, "spec": _template(n)},
        {"replicas": 5},
        {"observedGeneration": 1, "replicas": 0},
    ),
    "daemonsets": (
        "/apis/apps/v1/namespaces/default/daemonsets",
        lambda n: {"metadata": {"name": n}, "spec": _template(n)},
        {"minReadySeconds": 5},
        {
            "observedGeneration": 1,
            "currentNumberScheduled": 0,
            "numberMisscheduled": 0,
            "desiredNumberScheduled": 0,
            "numberReady": 0,
        },
    ),
    "poddisruptionbudgets": (
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
        lambda n: {"metadata": {"name": n}, "spec": {"minAvailable": 1, "selector": {}}},
        {"minAvailable": 3},
        {
            "observedGeneration": 1,
            "disruptionsAllowed": 0,
            "currentHealthy": 0,
            "desiredHealthy": 0,
            "expectedPods": 0,
        },
    ),
    "resourceclaims": (
        "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
        lambda n: {
            "metadata": {"name": n},
            "spec": {
                "devices": {
                    "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]
                }
            },
        },
        {"devices": {"requests": [{"name": "other", "exactly": {"deviceClassName": "x"}}]}},
        None,
    ),
    "devicetaintrules": (
        "/apis/resource.k8s.io/v1alpha3/devicetaintrules",
        lambda n: {
            "metadata": {"name": n},
            "spec": {
                "deviceSelector": {"driver": "gpu.example.com"},
                "taint": {"key": "example.com/hot", "effect": "NoSchedule"},
            },
        },
        {"taint": {"key": "example.com/hot", "effect": "NoExecute"}},
        {
            "conditions": [
                {
                    "type": "EvictionInProgress",
                    "status": "False",
                    "reason": "NoEffect",
                    "message": "",
                    "lastTransitionTime": WHEN,
                }
            ]
        },
    ),
}
#: deploymentStatusStrategy.PrepareForUpdate: newDeployment.Labels = oldDeployment.Labels.
LABELS_RESET = {"deployments"}


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def test_the_table_covers_every_status_subresource():
    with_status = {r.plural for r in SCHEME if r.has_subresource("status")}
    assert with_status == set(KINDS)


def _create(api, plural: str) -> tuple[str, dict[str, Any]]:
    path, body, _, _ = KINDS[plural]
    name = f"st-{next(_names)}"
    created = api.post(path, json=body(name))
    assert created.status_code == 201, created.text
    return f"{path}/{name}", created.json()


@pytest.mark.parametrize("method", ["PATCH", "PUT"])
@pytest.mark.parametrize("plural", sorted(KINDS))
def test_a_status_write_changes_only_what_the_status_strategy_allows(api, plural, method):
    at, created = _create(api, plural)
    _, _, spec_change, status_change = KINDS[plural]
    labels = {"via-status": "yes"}
    if method == "PATCH":
        body: dict[str, Any] = {"metadata": {"labels": labels}, "spec": spec_change}
        if status_change is not None:
            body["status"] = status_change
        response = api.patch(f"{at}/status", json=body, headers=MERGE)
    else:
        body = {
            **created,
            "metadata": {
                **created["metadata"],
                "labels": {**created["metadata"].get("labels", {}), **labels},
            },
            "spec": {**created.get("spec", {}), **spec_change},
        }
        if status_change is not None:
            body["status"] = {**created.get("status", {}), **status_change}
        response = api.put(f"{at}/status", json=body)
    assert response.status_code == 200, response.text
    stored = api.get(at).json()
    assert stored == response.json()
    assert stored.get("spec") == created.get("spec")
    if status_change is not None:
        assert status_change.items() <= stored["status"].items()
    kept = stored["metadata"].get("labels", {}).get("via-status")
    assert kept == (None if plural in LABELS_RESET else "yes")
    assert stored["metadata"].get("generation") == created["metadata"].get("generation")


def _invalid(response: httpx.Response) -> str:
    assert response.status_code == 422, response.text
    return str(response.json()["message"]).split(" is invalid: ", 1)[1]


def test_pod_status_is_validated_as_validate_pod_status_update(api):
    at, created = _create(api, "pods")
    assert created["status"]["qosClass"] == "BestEffort"
    status = {
        "conditions": [{"type": "bad type!", "status": "True"}],
        "nominatedNodeName": "Not_A_Node",
        "qosClass": "Guaranteed",
        "resourceClaimStatuses": [{"name": "nowhere"}],
    }
    refused = api.patch(f"{at}/status", json={"status": status}, headers=MERGE)
    message = _invalid(refused)
    assert message.startswith('[metadata.conditions[0].Type: Invalid value: "bad type!": ')
    assert 'status.nominatedNodeName: Invalid value: "Not_A_Node": a lowercase RFC 1123' in message
    assert 'status.qosClass: Invalid value: "Guaranteed": field is immutable' in message
    assert (
        'status.resourceClaimStatuses[0].name: Invalid value: "nowhere": must match the name '
        "of an entry in `spec.resourceClaims`" in message
    )
    assert api.get(at).json() == created


def test_a_pod_status_without_qos_class_keeps_the_stored_one(api):
    at, created = _create(api, "pods")
    current = api.get(at).json()
    current["status"] = {"phase": "Pending"}
    updated = api.put(f"{at}/status", json=current)
    assert updated.status_code == 200, updated.text
    assert updated.json()["status"]["qosClass"] == created["status"]["qosClass"]


def test_a_terminated_container_of_a_never_restarting_pod_stays_terminated(api):
    name = f"st-{next(_names)}"
    path = "/api/v1/namespaces/default/pods"
    spec = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}
    assert api.post(path, json={"metadata": {"name": name}, "spec": spec}).status_code == 201
    done = {"name": "c", "image": "x", "imageID": "", "ready": False, "restartCount": 0}
    terminated = {**done, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
    patched = api.patch(
        f"{path}/{name}/status", json={"status": {"containerStatuses": [terminated]}}, headers=MERGE
    )
    assert patched.status_code == 200, patched.text
    running = {**done, "state": {"running": {"startedAt": WHEN}}}
    refused = api.patch(
        f"{path}/{name}/status", json={"status": {"containerStatuses": [running]}}, headers=MERGE
    )
    assert _invalid(refused) == (
        "status.containerStatuses[0].state: Forbidden: may not be transitioned to "
        "non-terminated state"
    )


def test_node_status_addresses_are_not_reported_twice(api):
    at, _ = _create(api, "nodes")
    address = {"type": "InternalIP", "address": "10.0.0.1"}
    refused = api.patch(
        f"{at}/status", json={"status": {"addresses": [address, address]}}, headers=MERGE
    )
    assert _invalid(refused) == (
        'status.addresses[1]: Duplicate value: {"type":"InternalIP","address":"10.0.0.1"}'
    )


def test_namespace_status_phase_follows_its_deletion(api):
    at, _ = _create(api, "namespaces")
    refused = api.patch(f"{at}/status", json={"status": {"phase": "Terminating"}}, headers=MERGE)
    assert _invalid(refused) == (
        "status.Phase: Invalid value: \"Terminating\": may only be 'Active' if "
        "`deletionTimestamp` is empty"
    )


@pytest.mark.parametrize("plural", ["deployments", "replicasets"])
def test_workload_status_counts_are_validated(api, plural):
    at, created = _create(api, plural)
    status = {"replicas": 1, "readyReplicas": 2, "availableReplicas": 3, "observedGeneration": -1}
    refused = api.patch(f"{at}/status", json={"status": status}, headers=MERGE)
    first = "status.observedGeneration: Invalid value: -1: must be greater than or equal to 0"
    assert _invalid(refused) == (
        f"[{first}, "
        "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas, "
        "status.availableReplicas: Invalid value: 3: cannot be greater than status.replicas, "
        "status.availableReplicas: Invalid value: 3: cannot be greater than readyReplicas]"
    )
    assert api.get(at).json() == created


def test_a_deployment_collision_count_is_not_decremented(api):
    at, _ = _create(api, "deployments")
    raised = api.patch(f"{at}/status", json={"status": {"collisionCount": 2}}, headers=MERGE)
    assert raised.status_code == 200, raised.text
    lowered = api.patch(f"{at}/status", json={"status": {"collisionCount": 1}}, headers=MERGE)
    assert _invalid(lowered) == ("status.collisionCount: Invalid value: 1: cannot be decremented")


def test_pod_and_host_ips_are_validated(api):
    at, _ = _create(api, "pods")
    status = {
        "podIP": "10.0.0.1",
        "podIPs": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.1"}],
        "hostIP": "192.168.0.1",
        "hostIPs": [{"ip": "192.168.0.2"}, {"ip": "not-an-ip"}],
    }
    refused = api.patch(f"{at}/status", json={"status": status}, headers=MERGE)
    assert _invalid(refused) == (
        "[status.podIPs: Invalid value: "
        '[{"ip":"10.0.0.1"},{"ip":"10.0.0.1"}]: may specify no more than one IP for each IP '
        'family, status.podIPs[1]: Duplicate value: {"ip":"10.0.0.1"}, '
        'status.hostIPs[0].ip: Invalid value: "192.168.0.2": must be equal to `hostIP`, '
        'status.hostIPs[1]: Invalid value: "not-an-ip": must be a valid IP address, '
        "(e.g. 10.9.8.7 or 2001:db8::ffff), "
        'status.hostIPs: Invalid value: [{"ip":"192.168.0.2"},{"ip":"not-an-ip"}]: may '
        "specify no more than one IP for each IP family]"
    )
    dual = {"podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]}
    accepted = api.patch(f"{at}/status", json={"status": dual}, headers=MERGE)
    assert accepted.status_code == 200, accepted.text


def test_node_status_quantities_are_validated(api):
    at, _ = _create(api, "nodes")
    status = {"capacity": {"pods": "-1"}, "allocatable": {"example.com/gpu": "1500m"}}
    refused = api.patch(f"{at}/status", json={"status": status}, headers=MERGE)
    assert _invalid(refused) == (
        '[status.capacity.pods: Invalid value: "-1": must be greater than or equal to 0, '
        'status.allocatable.example.com/gpu: Invalid value: "1500m": must be an integer]'
    )


@pytest.mark.parametrize("subresource", ["", "/status"])
def test_the_mirror_pod_annotation_is_not_added_by_an_update(api, subresource):
    """ValidatePodSpecificAnnotationUpdates: NodeRestriction trusts this annotation to mark
    a node's static pods, so only a create may carry it."""
    at, created = _create(api, "pods")
    body = {"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}}}
    refused = api.patch(f"{at}{subresource}", json=body, headers=MERGE)
    assert _invalid(refused) == (
        "metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not add mirror "
        "pod annotation"
    )
    assert api.get(at).json() == created
