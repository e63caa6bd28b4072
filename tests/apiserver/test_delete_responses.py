"""What a DELETE answers, per kind, as each kind's upstream registry sets ReturnDeletedObject
(pkg/registry/**/storage/storage.go): the deleted object for pods, namespaces and the
resource.k8s.io kinds (DeviceTaintRule before v1: NewRESTLegacy), a Status for the rest; a
deletion left pending answers with the object, 202 only for orphanDependents=false
(endpoints/handlers/delete.go)."""

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from taintplane.api.scheme import SCHEME

RETURNS_OBJECT = {
    ("", "Namespace"),
    ("", "Pod"),
    ("resource.k8s.io", "DeviceClass"),
    ("resource.k8s.io", "ResourceSlice"),
    ("resource.k8s.io", "ResourceClaim"),
    ("resource.k8s.io", "ResourceClaimTemplate"),
    ("resource.k8s.io", "DeviceTaintRule"),
}

DEVICE_REQUEST = {"name": "req", "exactly": {"deviceClassName": "gpu"}}


@pytest.fixture(scope="module")
def api_client(cluster):
    client = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig_path))
    yield client
    client.close()


def test_every_kind_states_what_its_upstream_store_returns():
    declared = {(t.group, t.kind) for t in SCHEME if t.return_deleted_object}
    assert declared == RETURNS_OBJECT


def test_python_client_deletes_a_device_class(api_client):
    resource = k8s.ResourceV1Api(api_client)
    resource.create_device_class({"metadata": {"name": "gpu-x"}, "spec": {}})
    deleted = resource.delete_device_class("gpu-x")
    assert isinstance(deleted, k8s.V1DeviceClass)
    assert deleted.metadata.name == "gpu-x"


def test_python_client_deletes_a_resource_slice(api_client):
    resource = k8s.ResourceV1Api(api_client)
    resource.create_resource_slice(
        {
            "metadata": {"name": "slice-x"},
            "spec": {
                "driver": "gpu.example.com",
                "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                "allNodes": True,
                "devices": [{"name": "gpu-0"}],
            },
        }
    )
    deleted = resource.delete_resource_slice("slice-x")
    assert isinstance(deleted, k8s.V1ResourceSlice)
    assert deleted.spec.devices[0].name == "gpu-0"


def test_python_client_deletes_a_resource_claim_and_template(api_client):
    resource = k8s.ResourceV1Api(api_client)
    resource.create_namespaced_resource_claim(
        "default",
        {"metadata": {"name": "claim-x"}, "spec": {"devices": {"requests": [DEVICE_REQUEST]}}},
    )
    claim = resource.delete_namespaced_resource_claim("claim-x", "default")
    assert isinstance(claim, k8s.ResourceV1ResourceClaim)
    assert claim.spec.devices.requests[0].name == "req"

    resource.create_namespaced_resource_claim_template(
        "default",
        {
            "metadata": {"name": "template-x"},
            "spec": {"spec": {"devices": {"requests": [DEVICE_REQUEST]}}},
        },
    )
    template = resource.delete_namespaced_resource_claim_template("template-x", "default")
    assert isinstance(template, k8s.V1ResourceClaimTemplate)
    assert template.metadata.name == "template-x"


def test_python_client_deletes_a_device_taint_rule(api_client):
    rules = k8s.ResourceV1alpha3Api(api_client)
    rules.create_device_taint_rule(
        {
            "metadata": {"name": "rule-x"},
            "spec": {
                "deviceSelector": {"driver": "gpu.example.com"},
                "taint": {"key": "example.com/maint", "effect": "NoSchedule"},
            },
        }
    )
    deleted = rules.delete_device_taint_rule("rule-x")
    assert isinstance(deleted, k8s.V1alpha3DeviceTaintRule)
    assert deleted.spec.taint.key == "example.com/maint"


def test_other_kinds_answer_with_a_status(cluster):
    with httpx.Client(base_url=cluster.url) as http:
        http.post(
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            json={"metadata": {"name": "pc-x"}, "value": 5},
        ).raise_for_status()
        answer = http.delete("/apis/scheduling.k8s.io/v1/priorityclasses/pc-x")
    assert answer.status_code == 200
    body = answer.json()
    assert body["kind"] == "Status"
    assert body["details"]["kind"] == "priorityclasses"


def test_pending_deletion_answers_with_the_object_and_202_only_for_orphan_false(cluster):
    with httpx.Client(base_url=cluster.url) as http:
        for name in ("held-a", "held-b"):
            http.post(
                "/apis/scheduling.k8s.io/v1/priorityclasses",
                json={"metadata": {"name": name, "finalizers": ["example.com/hold"]}, "value": 1},
            ).raise_for_status()
        plain = http.delete("/apis/scheduling.k8s.io/v1/priorityclasses/held-a")
        cascading = http.delete(
            "/apis/scheduling.k8s.io/v1/priorityclasses/held-b",
            params={"orphanDependents": "false"},
        )
    assert plain.status_code == 200
    assert plain.json()["kind"] == "PriorityClass"
    assert plain.json()["metadata"]["deletionTimestamp"]
    assert cascading.status_code == 202
    assert cascading.json()["kind"] == "PriorityClass"


@pytest.mark.parametrize(
    ("suffix", "value"), [("a", "True"), ("b", "1"), ("c", "yes"), ("d", "true")]
)
def test_orphan_dependents_reads_every_value_but_0_and_false_as_true(cluster, suffix, value):
    """runtime.Convert_Slice_string_To_Pointer_bool: the Python client sends
    ``orphanDependents=True``, which kube-apiserver reads as true (the orphan finalizer)."""
    name = f"orphan-{suffix}"
    with httpx.Client(base_url=cluster.url, timeout=30) as api:
        base = "/apis/apps/v1/namespaces/default/replicasets"
        template = {
            "metadata": {"labels": {"a": name}},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }
        body = {
            "metadata": {"name": name},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"a": name}}, "template": template},
        }
        assert api.post(base, json=body).status_code == 201
        response = api.delete(f"{base}/{name}?orphanDependents={value}")
        assert response.status_code == 200, response.text
        assert "orphan" in response.json()["metadata"]["finalizers"]


def test_delete_collection_checks_its_options_before_listing(cluster):
    """handlers/delete.go DeleteCollectionResource: ValidateDeleteOptions runs first, so a bad
    DeleteOptions is a 422 even when nothing matches."""
    with httpx.Client(base_url=cluster.url, timeout=30) as api:
        response = api.request(
            "DELETE",
            "/apis/apps/v1/namespaces/default/replicasets?labelSelector=app%3Dnone",
            json={"orphanDependents": True, "propagationPolicy": "Background"},
        )
    assert response.status_code == 422
    assert response.json()["message"].endswith(
        "orphanDependents and deletionPropagation cannot be both set"
    )
